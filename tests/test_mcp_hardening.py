"""`wiki mcp` under hostile calls (issue 24, RELIABILITY rows 96 and 102): every call answers, in
bounded time and memory, and the server never prints a traceback.

Driven by the MCP SDK's own stdio client, as an agent runs it; the server's stderr goes
to a file the tests read.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.test_mcp import init_lane_wiki
from wikiengine._cli import mcp as mcp_command
from wikiengine.core.errors import WikiError

pytest.importorskip("mcp")

WIKI = [sys.executable, "-m", "wikiengine"]


def serve(cwd: Path, calls: list[tuple[str, object]], env: dict | None = None, errlog: Path | None = None):
    """Start `wiki mcp` in ``cwd`` (``env`` added to its environment), make the calls; the results."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session():
        params = StdioServerParameters(command=sys.executable, args=["-m", "wikiengine", "mcp"], cwd=str(cwd),
                                       env={**os.environ, **(env or {})})
        with open(errlog or os.devnull, "w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    with anyio.fail_after(120):
                        return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def lane_wiki(tmp_path):
    return init_lane_wiki(tmp_path / "w")


def test_row102_every_tool_has_a_one_line_description_and_documented_parameters():
    for tool in mcp_command.tool_listing():
        first = tool["description"].split("\n", 1)[0]
        assert first.strip() and len(first) <= 200 and not first.lstrip().startswith("wiki "), tool["name"]
        undocumented = [name for name, schema in tool["inputSchema"]["properties"].items()
                        if not schema.get("description", "").strip()]
        assert not undocumented, (tool["name"], undocumented)


@pytest.mark.parametrize("arguments, reason", [
    ({"subject": "a\0b"}, "U+0000"),
    ({"subject": "bell\x07"}, "U+0007"),
    ({"names": ["gemma4", "\x1b[31m"]}, "U+001B"),
    ({"subject": "c1\x85"}, "U+0085"),
    ({"subject": "x" * (128 * 1024)}, "over the 128 KiB"),
    ({"field": ["k=" + "y" * 100_000] * 6}, "over the 512 KiB"),
    ({"subject": "\ud800"}, "lone surrogate"),
])
def test_row96_arguments_are_checked_before_anything_runs(arguments, reason):
    with pytest.raises(WikiError, match=re.escape(reason)):
        mcp_command.check_arguments("log_add", arguments)


def test_row96_tabs_newlines_and_any_script_pass_the_check():
    mcp_command.check_arguments("log_add", {"subject": "tab\there\nnew line, é, 中文", "field": ["k=v"] * 100})


def test_row96_a_fifo_a_nul_and_a_huge_argument_each_answer_and_the_server_lives(lane_wiki, tmp_path):
    fifo = tmp_path / "metrics.json"
    os.mkfifo(fifo)
    errlog = tmp_path / "server.stderr"
    started = time.monotonic()
    hung, nul, huge, unknown, after = serve(lane_wiki, [
        ("exp_file", {"vid": "v001", "names": ["gemma4", "tpu"], "verdict": "supported", "metrics": str(fifo)}),
        ("log_add", {"op": "note", "subject": "a\0b"}),
        ("log_add", {"op": "note", "subject": "x" * 200_000}),
        ("no_such_tool", {}),
        ("log_add", {"op": "note", "subject": "still here", "dry_run": True}),
    ], env={mcp_command.TIMEOUT_ENV: "3"}, errlog=errlog)
    assert time.monotonic() - started < 60
    # the reading path (core/safe_read.py, row 81) refuses the FIFO at once: the command answers
    assert hung.is_error and text_of(hung).endswith(f"{fifo}: not a regular file") and not hung.meta.get("timed_out")
    with pytest.raises(OSError) as no_reader:  # and holds no FIFO open
        os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    assert no_reader.value.errno == errno.ENXIO
    assert nul.is_error and text_of(nul) == "log_add: subject: holds the control character U+0000"
    assert huge.is_error and "200000 bytes, over the 128 KiB" in text_of(huge)
    assert unknown.is_error and "no tool 'no_such_tool'" in text_of(unknown)
    assert not after.is_error and after.structured_content["dry_run"] is True
    server_err = errlog.read_text()
    assert "Traceback" not in server_err, server_err


def test_row96_a_command_past_the_deadline_is_killed_and_answers(lane_wiki, tmp_path):
    errlog = tmp_path / "server.stderr"
    late, = serve(lane_wiki, [("resolve", {"list": True})], env={mcp_command.TIMEOUT_ENV: "0.01"}, errlog=errlog)
    assert late.is_error and "no answer within 0.01 s: the command was killed" in text_of(late)
    assert late.meta["timed_out"] is True
    assert "Traceback" not in errlog.read_text()


def test_row96_a_command_over_the_memory_cap_fails_as_a_tool_error(lane_wiki, tmp_path):
    errlog = tmp_path / "server.stderr"
    capped, = serve(lane_wiki, [("resolve", {"list": True})], env={mcp_command.MEMORY_ENV: "8"}, errlog=errlog)
    assert capped.is_error and capped.meta["exit_status"] != 0
    assert text_of(capped).startswith("resolve: ran out of memory under the 8 MiB cap (WIKI_MCP_MEMORY_MB sets it)")
    assert "\n" not in text_of(capped)
    assert "Traceback" not in errlog.read_text()
    free, = serve(lane_wiki, [("resolve", {"list": True})], env={mcp_command.MEMORY_ENV: "0"})
    assert not free.is_error


def test_row96_a_bad_limit_setting_is_one_line(lane_wiki):
    bad, = serve(lane_wiki, [("resolve", {"list": True})], env={mcp_command.TIMEOUT_ENV: "soon"})
    assert bad.is_error and text_of(bad) == "WIKI_MCP_TIMEOUT_S='soon' is not a number"
