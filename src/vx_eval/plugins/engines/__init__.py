"""Built-in engine plugins."""
