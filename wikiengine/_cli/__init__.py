"""One module per `wiki` subcommand, each with ``add_parser(subparsers)`` and ``run(args) -> int``.

Each parser sets ``handler=run``. Modules import only what their command needs, inside ``run``, so `wiki --help` and
`wiki lint` stay fast.
"""
