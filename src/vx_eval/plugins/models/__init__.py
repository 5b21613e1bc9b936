"""Built-in model plugins: models that ship inside PyPI packages and load offline."""
