"""`wiki mcp`: a Model Context Protocol server over stdio whose tools are `wiki` commands.

Each tool is a subcommand run with ``--json``: its input schema is generated from the
subcommand's own argparse parser (:mod:`wikiengine.core.argschema`), and its result is the
command's JSON output, byte for byte. A call runs the command as a child process
(``python -m wikiengine ...``, stdin closed): a command that prints, exits, crashes or
leaves threads behind cannot touch the server or its stdio transport.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from wikiengine.core.errors import ExitCode

HELP = "serve the wiki commands as MCP tools over stdio (for coding agents)"
DESCRIPTION = """\
Serve a Model Context Protocol server on stdin/stdout. Each tool runs one `wiki` command
with --json in the server's working directory and returns its JSON; input schemas are
generated from the commands' own arguments. Register it with an agent as

  {"mcpServers": {"wiki": {"command": "wiki", "args": ["mcp"]}}}

Needs the `mcp` extra: pip install 'wikiengine[mcp]'.
"""


@dataclass(frozen=True)
class Tool:
    """An MCP tool: the `wiki` subcommand it runs, the options it hides, the exits that are results."""

    name: str
    command: tuple[str, ...]
    omit: tuple[str, ...] = ()  # options whose output is not the command's JSON, or that never return
    ok_exits: tuple[int, ...] = (ExitCode.OK,)
    fixed: tuple[str, ...] = ()  # options every call passes (a tool call must return)


# One line per tool: a command becomes a tool by adding its line. `loop start`, `loop stop`,
# `kernel start` and `kernel close` ask a person first (or hold a pod), so they are no tools.
TOOLS = (
    Tool("resolve", ("resolve",), omit=("audit",)),
    Tool("lint", ("lint",), omit=("format", "statistics", "list_rules", "explain", "write_baseline"),
         ok_exits=(ExitCode.OK, ExitCode.FINDINGS)),
    Tool("step", ("step",), ok_exits=(ExitCode.OK, ExitCode.BLOCKED)),  # a blocked run is an answer, not a failure
    Tool("exp_new", ("exp", "new")),
    Tool("exp_file", ("exp", "file")),
    Tool("exp_retry", ("exp", "retry")),
    Tool("exp_renumber", ("exp", "renumber")),
    Tool("log_add", ("log", "add")),
    Tool("backfill", ("backfill",)),
    Tool("loop_status", ("loop", "status")),
    Tool("lane_check", ("lane", "check"), ok_exits=(ExitCode.OK, ExitCode.FINDINGS)),  # 1: something is missing
    Tool("watch", ("watch",), omit=("once", "interval"), ok_exits=(ExitCode.OK, ExitCode.FINDINGS, ExitCode.REVIVED),
         fixed=("--once",)),
    Tool("kernel_status", ("kernel", "status")),
    Tool("kernel_stub", ("kernel", "stub")),
    Tool("kernel_cand", ("kernel", "cand")),
    Tool("kernel_verify", ("kernel", "verify")),
    Tool("kernel_file", ("kernel", "file")),
    Tool("kernel_rule_out", ("kernel", "rule-out")),
)
INSTRUCTIONS = (
    "Each tool runs one `wiki` command with --json in this server's working directory (or in `root`) and "
    "returns the command's JSON; _meta.exit_status is its exit status (lint: 1 means findings, step: 3 a "
    "blocked run). Bad input is an error result holding the command's one-line message."
)
JSON_OPTION = "json"  # every tool's command runs with --json; the option is not an input


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("mcp", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list-tools", action="store_true", help="print the tools and their input schemas as JSON and exit")
    parser.add_argument("--json", action="store_true", help="with --list-tools: the same JSON (the default)")
    parser.set_defaults(handler=run)


def tool_parser(tool: Tool) -> argparse.ArgumentParser:
    from wikiengine._cli.main import build_parser
    from wikiengine.core import argschema

    return argschema.subparser(build_parser(), tool.command)


def tool_listing() -> list[dict]:
    """Every tool as ``{name, description, inputSchema}``, read from the CLI's parsers."""
    from wikiengine.core import argschema

    listing = []
    for tool in TOOLS:
        parser = tool_parser(tool)
        listing.append({
            "name": tool.name,
            "description": parser.description or "",
            "inputSchema": argschema.input_schema(parser, tool.omit + (JSON_OPTION,)),
        })
    return listing


def command_argv(tool: Tool, arguments: dict) -> list[str]:
    """The `wiki` argv of one call (after validating ``arguments`` against the tool's schema)."""
    import jsonschema

    from wikiengine.core import argschema
    from wikiengine.core.errors import WikiError

    parser = tool_parser(tool)
    omit = tool.omit + (JSON_OPTION,)
    try:
        jsonschema.validate(arguments, argschema.input_schema(parser, omit))
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "arguments"
        raise WikiError(f"{tool.name}: {where}: {exc.message}") from None
    return [*tool.command, "--json", *tool.fixed, *argschema.to_argv(parser, arguments, omit)]


async def call(tool_name: str, arguments: dict | None):
    """Run one tool; its result is the command's JSON (``is_error`` on bad input or a bug)."""
    import subprocess

    import anyio
    import mcp_types as types

    from wikiengine.core.errors import WikiError

    def failure(text: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    tool = next((t for t in TOOLS if t.name == tool_name), None)
    if tool is None:
        return failure(f"no tool {tool_name!r} (tools: {', '.join(t.name for t in TOOLS)})")
    try:
        argv = command_argv(tool, arguments or {})
    except WikiError as err:
        return failure(str(err))
    done = await anyio.run_process([sys.executable, "-m", "wikiengine", *argv], check=False,
                                   stdin=subprocess.DEVNULL)
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace").strip()
    meta = {"exit_status": done.returncode}
    try:
        parsed = json.loads(out)
    except ValueError:
        parsed = None
    if done.returncode not in tool.ok_exits or parsed is None:
        return types.CallToolResult(content=[types.TextContent(type="text", text=err or out or f"exit {done.returncode}")],
                                    is_error=True, meta=meta)
    return types.CallToolResult(content=[types.TextContent(type="text", text=out)],
                                structured_content=parsed if isinstance(parsed, dict) else None, meta=meta)


def build_server():
    """The MCP server: tools/list from :func:`tool_listing`, tools/call through :func:`call`."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from wikiengine.core.version import __version__

    async def list_tools(_ctx, _params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
            for t in tool_listing()
        ])

    async def call_tool(_ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(params.name, params.arguments)

    return Server("wiki", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def run(args) -> int:
    if args.list_tools:
        print(json.dumps(tool_listing(), indent=2))
        return 0
    from wikiengine.core.errors import WikiError

    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise WikiError("wiki mcp needs the mcp package: pip install 'wikiengine[mcp]'") from None
    server = build_server()

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
    return 0
