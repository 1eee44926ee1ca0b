"""The demo runs and the templates of `wiki init` and `wiki demo`."""
