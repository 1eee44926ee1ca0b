"""`wiki step`: the one wake skeleton, the write transaction, and one folder per mode."""
