"""One module per rule (or small family); the registry that names them is ``wikiengine/lint/registry.py``."""
