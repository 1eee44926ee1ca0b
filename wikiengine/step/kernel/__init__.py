"""The kernel mode: a kernel family's wake, decide, verifier and writers."""
