"""The lane mode: an autoresearch lane's wake, decide and writers."""
