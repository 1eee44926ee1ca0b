"""The `wiki` command line (placeholder until the subcommands land)."""

def main(argv=None) -> int:
    return 0
