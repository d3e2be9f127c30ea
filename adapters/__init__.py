"""Built-in tagger adapters, one module each, registered through entry points."""
