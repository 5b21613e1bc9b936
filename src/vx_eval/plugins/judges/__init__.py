"""Built-in judge plugins."""
