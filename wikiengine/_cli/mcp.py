"""`wiki mcp`: a Model Context Protocol server over stdio whose tools are `wiki` commands.

Each tool is a subcommand run with ``--json``: its input schema is generated from the
subcommand's own argparse parser (:mod:`wikiengine.core.argschema`), and its result is the
command's JSON output, byte for byte. A call runs the command as a child process
(``python -m wikiengine ...``, stdin closed, its own session): a command that prints, exits,
crashes or leaves threads behind cannot touch the server or its stdio transport.

Every call is bounded (row 96): its arguments are checked before anything runs (no NUL or
other control character, no string over 128 KiB, the MAX_ARG_STRLEN of Linux, at most
512 KiB in all), the child runs under an address-space cap (``RLIMIT_AS``, soft limit;
``WIKI_MCP_MEMORY_MB``, default 16384, 0 for none; what it starts inherits it) and a
deadline (``WIKI_MCP_TIMEOUT_S``, default 900 s), after which its whole process group is
killed and the call answers with a tool error saying so. Nothing the server catches is
printed as a traceback: a failure is one redacted line in the tool's error result.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
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
MAX_STRING = 128 * 1024  # bytes of one argument string (Linux's MAX_ARG_STRLEN, its NUL included)
MAX_ARGUMENTS = 512 * 1024  # bytes of all argument strings together
TIMEOUT_ENV, MEMORY_ENV = "WIKI_MCP_TIMEOUT_S", "WIKI_MCP_MEMORY_MB"
DEFAULT_TIMEOUT_S, DEFAULT_MEMORY_MB = 900.0, 16384
# The child: lower its soft RLIMIT_AS (argv[1], bytes; 0 keeps it), then run `python -m wikiengine`.
_LAUNCH = ("import resource, runpy, sys\n"
           "cap = int(sys.argv.pop(1))\n"
           "hard = resource.getrlimit(resource.RLIMIT_AS)[1]\n"
           "if cap:\n"
           "    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))\n"
           "runpy.run_module('wikiengine', run_name='__main__', alter_sys=True)\n")


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


def tool_summary(tool: Tool) -> str:
    """The one-line help the CLI lists the tool's (sub)command with."""
    from wikiengine._cli.main import build_parser
    from wikiengine.core import argschema

    parent = argschema.subparser(build_parser(), tool.command[:-1])
    verbs = next(a for a in parent._actions if isinstance(a, argparse._SubParsersAction))
    return next((c.help or "") for c in verbs._choices_actions if c.dest == tool.command[-1])


def tool_listing() -> list[dict]:
    """Every tool as ``{name, description, inputSchema}``, read from the CLI's parsers: the
    description is the command's one-line help, then its full description."""
    from wikiengine.core import argschema

    listing = []
    for tool in TOOLS:
        parser = tool_parser(tool)
        details = (parser.description or "").strip("\n")
        listing.append({
            "name": tool.name,
            "description": tool_summary(tool) + (f"\n\n{details}" if details else ""),
            "inputSchema": argschema.input_schema(parser, tool.omit + (JSON_OPTION,)),
        })
    return listing


def check_arguments(tool_name: str, arguments: dict) -> None:
    """WikiError unless every string in ``arguments`` can be one argv entry: no NUL or other
    control character (tab and newline pass), at most :data:`MAX_STRING` bytes each and
    :data:`MAX_ARGUMENTS` in all. Checked before anything runs."""
    from wikiengine.core.errors import WikiError

    total = 0

    def visit(value, where: str) -> None:
        nonlocal total
        if isinstance(value, dict):
            for key, item in value.items():
                visit(key, where)
                visit(item, f"{where}/{key}" if where else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(item, f"{where}/{index}")
        elif isinstance(value, str):
            size = len(value.encode("utf-8", "surrogatepass"))
            total += size
            if size >= MAX_STRING:
                raise WikiError(f"{tool_name}: {where}: {size} bytes, over the {MAX_STRING // 1024} KiB an argument can hold")
            bad = next((c for c in value if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0), None)
            if bad is not None:
                raise WikiError(f"{tool_name}: {where}: holds the control character U+{ord(bad):04X}")
            if any(0xD800 <= ord(c) < 0xE000 for c in value):
                raise WikiError(f"{tool_name}: {where}: holds a lone surrogate (not valid text)")

    visit(arguments, "")
    if total > MAX_ARGUMENTS:
        raise WikiError(f"{tool_name}: arguments: {total} bytes, over the {MAX_ARGUMENTS // 1024} KiB a call may pass")


def _limit(env: str, default: float) -> float:
    from wikiengine.core.errors import WikiError

    raw = os.environ.get(env, "")
    try:
        value = float(raw) if raw.strip() else default
    except ValueError:
        raise WikiError(f"{env}={raw!r} is not a number") from None
    if value < 0 or value != value:
        raise WikiError(f"{env}={raw!r} is negative")
    return value


@dataclass(frozen=True)
class Finished:
    """What one bounded child run came to (``timed_out``: killed at the deadline)."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool


def run_bounded(argv: list[str], timeout_s: float, memory_bytes: int) -> Finished:
    """``python -m wikiengine ARGV`` in its own session under the address-space cap, killed
    with its whole process group at the deadline (a blocking read of a FIFO, a loop)."""
    child = subprocess.Popen([sys.executable, "-c", _LAUNCH, str(memory_bytes), *argv], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout_s or None)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = child.communicate()
        timed_out = True
    except BaseException:
        child.kill()
        child.wait()
        raise
    return Finished(None if timed_out else child.returncode, out.decode("utf-8", "replace"),
                    err.decode("utf-8", "replace").strip(), timed_out)


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
    """Run one tool; its result is the command's JSON (``is_error`` on bad input, a deadline
    struck or a bug: one line, never a traceback)."""
    import mcp_types as types

    def failure(text: str, meta: dict | None = None) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True, meta=meta)

    try:
        return await _call(tool_name, arguments, failure)
    except Exception as exc:  # a bug in the server: the call still answers, in one redacted line
        from wikiengine.core.secrets import safe_message

        return failure(f"internal error: {safe_message(exc)}")


async def _call(tool_name: str, arguments: dict | None, failure):
    import anyio
    import mcp_types as types

    from wikiengine.core.errors import WikiError
    from wikiengine.core.secrets import redact

    tool = next((t for t in TOOLS if t.name == tool_name), None)
    if tool is None:
        return failure(f"no tool {tool_name!r} (tools: {', '.join(t.name for t in TOOLS)})")
    try:
        if arguments is not None and not isinstance(arguments, dict):
            raise WikiError(f"{tool_name}: arguments must be an object")
        check_arguments(tool_name, arguments or {})
        argv = command_argv(tool, arguments or {})
        timeout_s, memory_mb = _limit(TIMEOUT_ENV, DEFAULT_TIMEOUT_S), _limit(MEMORY_ENV, DEFAULT_MEMORY_MB)
    except WikiError as err:
        return failure(str(err))
    done = await anyio.to_thread.run_sync(run_bounded, argv, timeout_s, int(memory_mb * 1024 * 1024))
    if done.timed_out:
        return failure(f"{tool_name}: no answer within {timeout_s:g} s: the command was killed "
                       f"({TIMEOUT_ENV} sets the deadline)", {"exit_status": None, "timed_out": True})
    meta = {"exit_status": done.returncode}
    try:
        parsed = json.loads(done.stdout)
    except ValueError:
        parsed = None
    if done.returncode not in tool.ok_exits or parsed is None:
        text = done.stderr or done.stdout or f"exit {done.returncode}"
        if "Traceback (most recent call last)" in text:  # a crash the command did not catch (WIKI_TRACEBACK=1)
            text = text.strip().splitlines()[-1]
        if "MemoryError" in text and memory_mb:
            text = f"{tool_name}: ran out of memory under the {memory_mb:g} MiB cap ({MEMORY_ENV} sets it): {text}"
        return failure(redact(text), meta)
    return types.CallToolResult(content=[types.TextContent(type="text", text=done.stdout)],
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
