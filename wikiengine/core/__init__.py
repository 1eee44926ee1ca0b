"""The small mechanisms every other part uses; imports nothing of the project."""
