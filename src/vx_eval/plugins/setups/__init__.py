"""Built-in setup plugins."""
