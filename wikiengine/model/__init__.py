"""The wiki's records, read by rules and written by writers through the same types."""
