"""`wiki mcp`: input schemas generated from the CLI's parsers; tools return the commands' JSON.

The server is driven by the MCP SDK's own client over stdio (``mcp.client.stdio``), as a
coding agent would run it: ``wiki mcp`` as a child process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import jsonschema
import pytest

from wikiengine._cli import mcp as mcp_command
from wikiengine._cli.main import build_parser
from wikiengine.core import argschema

pytest.importorskip("mcp")

REPO = Path(__file__).resolve().parents[1]
WIKI = [sys.executable, "-m", "wikiengine"]


def sample_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sample")
    parser.add_argument("names", nargs="*", help="targets")
    parser.add_argument("--count", type=int, default=3, help="how many")
    parser.add_argument("--ratio", type=float)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--root", type=Path, help="a directory")
    parser.add_argument("--tag", action="append", help="repeatable")
    parser.add_argument("--dry-run", action="store_true", help="do nothing")
    parser.add_argument("--reason", required=True, metavar="WHY", help="recorded")
    parser.add_argument("--pair", nargs=2)
    parser.add_argument("--color", action=argparse.BooleanOptionalAction, help="colour")
    return parser


def test_schema_follows_type_choices_nargs_required_and_help():
    schema = argschema.input_schema(sample_parser())
    props = schema["properties"]
    assert props["names"] == {"type": "array", "items": {"type": "string"}, "description": "targets"}
    assert props["count"] == {"type": "integer", "description": "how many", "default": 3}
    assert props["ratio"] == {"type": "number"}
    assert props["format"] == {"enum": ["text", "json"], "type": "string", "default": "text"}
    assert props["root"] == {"type": "string", "description": "a directory"}
    assert props["tag"] == {"type": "array", "items": {"type": "string"}, "description": "repeatable"}
    assert props["dry_run"] == {"type": "boolean", "description": "do nothing"}
    assert props["reason"]["description"] == "WHY: recorded"
    assert props["pair"]["minItems"] == props["pair"]["maxItems"] == 2
    assert props["color"] == {"type": "boolean", "description": "colour"}
    assert schema["required"] == ["reason"]  # a nargs="*" positional is not required
    assert schema["additionalProperties"] is False
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"reason": "x", "format": "yaml"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"count": 2}, schema)


@pytest.mark.parametrize("values", [
    {"reason": "x"},
    {"reason": "-starts-with-a-dash", "names": ["a", "-b"], "count": 7, "ratio": 0.5, "format": "json",
     "root": "/tmp/w", "tag": ["t1", "t2"], "dry_run": True, "pair": ["p", "q"]},
    {"reason": "y", "dry_run": False, "names": [], "color": False},
    {"reason": "z", "color": True},
])
def test_to_argv_is_read_back_by_the_same_parser(values):
    parser = sample_parser()
    jsonschema.validate(values, argschema.input_schema(parser))
    parsed = vars(parser.parse_args(argschema.to_argv(parser, values)))
    for name, value in values.items():
        got = parsed[name]
        assert (str(got) if isinstance(got, Path) else got) == value


def test_every_tool_schema_is_its_commands_options():
    """The tools' properties are exactly the subcommand's options, minus the omitted ones."""
    parser = build_parser()
    listing = {t["name"]: t for t in mcp_command.tool_listing()}
    assert set(listing) == {t.name for t in mcp_command.TOOLS} >= {"resolve", "lint", "step"}
    for tool in mcp_command.TOOLS:
        sub = argschema.subparser(parser, tool.command)
        expected = {
            (a.dest if not a.option_strings else next(s for s in a.option_strings if s.startswith("--"))
             .lstrip("-").replace("-", "_"))
            for a in sub._actions if not isinstance(a, argparse._HelpAction)
        } - set(tool.omit) - {"json"}
        assert set(listing[tool.name]["inputSchema"]["properties"]) == expected
        assert any(a.option_strings == ["--json"] for a in sub._actions), f"wiki {tool.command} has no --json"
    assert listing["lint"]["inputSchema"]["properties"]["jobs"]["type"] == "integer"
    assert "format" not in listing["lint"]["inputSchema"]["properties"]


def test_a_new_option_on_the_cli_appears_in_the_tool(monkeypatch):
    from wikiengine._cli import step

    original = step.add_parser

    def with_extra(subparsers):
        original(subparsers)
        subparsers.choices["step"].add_argument("--max-wakes", type=int, help="new")

    monkeypatch.setattr(step, "add_parser", with_extra)
    props = {t["name"]: t for t in mcp_command.tool_listing()}["step"]["inputSchema"]["properties"]
    assert props["max_wakes"] == {"type": "integer", "description": "new"}


def run_client(cwd: Path, calls: list[tuple[str, dict]]):
    """Start `wiki mcp` in ``cwd`` with the SDK's stdio client; list the tools, make the calls."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session():
        params = StdioServerParameters(command=sys.executable, args=["-m", "wikiengine", "mcp"], cwd=str(cwd))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                tools = await client.list_tools()
                results = [await client.call_tool(name, args) for name, args in calls]
                return tools, results

    return anyio.run(session)


def cli_json(cwd: Path, *argv: str):
    done = subprocess.run([*WIKI, *argv], cwd=cwd, capture_output=True, text=True)
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def example(tmp_path):
    """A copy of this repository's example wiki, with one bad experiment page added."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "wiki", root / "wiki")
    shutil.copytree(REPO / "memory", root / "memory")
    lane = root / "wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments"
    (lane / "2026-06-30-v900-bad.md").write_text("---\ntitle: bad\ntype: experiment\nstatus: done\n---\n\n# bad\n")
    return root


def test_tools_over_stdio_return_the_commands_json(example):
    calls = [
        ("resolve", {"names": ["gemma4", "tpu"]}),
        ("resolve", {"list": True}),
        ("lint", {"no_cache": True}),
        ("resolve", {"names": ["nosuchmodel"]}),
        ("lint", {"jobs": "two"}),
    ]
    tools, results = run_client(example, calls)
    listed = {t.name: t for t in tools.tools}
    assert set(listed) == {t.name for t in mcp_command.TOOLS}
    assert listed["resolve"].input_schema == mcp_command.tool_listing()[0]["inputSchema"]

    resolved, listing, linted, missing, bad_args = results
    assert not resolved.is_error and resolved.meta["exit_status"] == 0
    assert resolved.structured_content == cli_json(example, "resolve", "gemma4", "tpu", "--json")[1]
    assert json.loads(resolved.content[0].text) == resolved.structured_content
    assert listing.structured_content == cli_json(example, "resolve", "--list", "--json")[1]

    status, findings = cli_json(example, "lint", "--format", "json", "--no-cache")
    assert status == 1 and findings  # the bad page
    assert not linted.is_error and linted.meta["exit_status"] == 1
    assert json.loads(linted.content[0].text) == findings
    assert any(f["path"].endswith("v900-bad.md") for f in findings)

    assert missing.is_error and missing.meta["exit_status"] == 2
    assert missing.content[0].text.startswith("error: no model 'nosuchmodel'")
    assert "\n" not in missing.content[0].text  # one line, no traceback
    assert bad_args.is_error and "jobs" in bad_args.content[0].text


def test_step_tool_dry_run_matches_wiki_step_json(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_relay_support import make_wiki

    root = tmp_path / "relay"
    root.mkdir()
    make_wiki(root)
    _, results = run_client(root, [("step", {"dry_run": True}), ("step", {"root": str(tmp_path / "none")})])
    dry, nowhere = results
    status, expected = cli_json(root, "step", "--dry-run", "--json")
    assert status == 0 and expected["decision"] == "launch"
    assert not dry.is_error and dry.structured_content == expected
    assert nowhere.is_error and nowhere.meta["exit_status"] == 2 and "no such directory" in nowhere.content[0].text


def test_without_the_sdk_wiki_mcp_is_one_line_and_exit_2(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mcp' or name.startswith('mcp.'):\n            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n")
    done = subprocess.run([*WIKI, "mcp"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{blocker}:{REPO}"})
    assert done.returncode == 2
    assert done.stderr.strip() == "error: wiki mcp needs the mcp package: pip install 'wikiengine[mcp]'"


def test_the_documented_registration_snippet_starts_this_server():
    import re
    import tomllib

    blocks = re.findall(r"```json\n(.*?)```", (REPO / "docs" / "agents.md").read_text(), re.S)
    servers = [json.loads(b)["mcpServers"] for b in blocks if "mcpServers" in b]
    assert servers == [{"wiki": {"command": "wiki", "args": ["mcp"]}}]
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["wiki"] == "wikiengine._cli.main:main"
    assert build_parser().parse_args(servers[0]["wiki"]["args"]).handler is mcp_command.run


def init_lane_wiki(root):
    """`wiki init` of a gemma4/tpu lane at ``root``, committed to a new git repository."""
    assert subprocess.run([*WIKI, "init", str(root), "--model", "gemma4", "--lane", "tpu", "--variant", "2b/v5p-8"],
                          capture_output=True).returncode == 0
    for args in (["init", "-q"], ["config", "user.name", "Tester"], ["config", "user.email", "t@t.invalid"],
                 ["add", "-A"], ["commit", "-qm", "wiki init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def test_lane_tools_over_stdio_write_through_the_lane_writers(tmp_path):
    root = init_lane_wiki(tmp_path / "w")
    proposal = tmp_path / "proposal.md"
    proposal.write_text("**Hypothesis**: h.\n\n**Mechanism**: m.\n\n**Predicted signal**: s.\n\n**Falsification criterion**: f.\n")
    new = {"names": ["gemma4", "tpu"], "slug": "remat", "variant": "2b/v5p-8", "proposal": str(proposal)}
    status, expected_dry = cli_json(root, "exp", "new", "gemma4", "tpu", "--slug", "remat", "--variant", "2b/v5p-8",
                                    "--proposal", str(proposal), "--dry-run", "--json")
    assert status == 0
    _, (dry, real, log) = run_client(root, [
        ("exp_new", {**new, "dry_run": True}),
        ("exp_new", new),
        ("log_add", {"op": "note", "subject": "pool checked", "names": ["gemma4", "tpu"], "dry_run": True}),
    ])
    assert not dry.is_error and not real.is_error, (dry.content, real.content)
    assert dry.structured_content == expected_dry
    stub = root / "wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments"
    assert [p.name for p in stub.iterdir()] == [Path(real.structured_content["page"]).name]
    assert log.structured_content == cli_json(root, "log", "add", "note", "pool checked", "gemma4", "tpu",
                                              "--dry-run", "--json")[1]
    assert subprocess.run([*WIKI, "lint", "--no-cache"], cwd=root, capture_output=True).returncode == 0


def test_loop_status_and_watch_tools_on_a_lane_session_started_on_a_fresh_init(tmp_path):
    root = tmp_path / "w"
    assert subprocess.run([*WIKI, "init", str(root), "--model", "gemma4", "--lane", "tpu", "--variant", "2b/v5p-8"],
                          capture_output=True).returncode == 0
    program = root / "wiki/experiments/gemma4_autoresearch_optimization/tpu/program.md"
    program.write_text(program.read_text().replace('# launch_cmd: "{python} -m train', 'launch_cmd: "{python} -m train'))
    for args in (["init", "-q"], ["config", "user.name", "Tester"], ["config", "user.email", "t@t.invalid"],
                 ["add", "-A"], ["commit", "-qm", "wiki init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    started = subprocess.run([*WIKI, "loop", "start", "gemma4", "tpu", "--backend", "local", "--yes"], cwd=root,
                             capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    _, (status, audit) = run_client(root, [("loop_status", {}), ("watch", {})])
    assert not status.is_error, status.content
    expected = cli_json(root, "loop", "status", "--json")[1]
    assert status.structured_content["tracks"] == expected["tracks"]
    assert status.structured_content["needs"][0]["kind"] == "hypothesis"
    # watch: one audit per call (the tool passes --once), the watcher's own JSON
    assert not audit.is_error, audit.content
    assert audit.meta["exit_status"] == (0 if audit.structured_content["clean"] else 1)
    assert audit.structured_content["lane"].endswith("tpu")
    assert (root / "wiki/experiments/gemma4_autoresearch_optimization/tpu/.audit-cursor").is_file()


def test_the_server_introduces_itself_with_its_instructions(tmp_path):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session():
        params = StdioServerParameters(command=sys.executable, args=["-m", "wikiengine", "mcp"], cwd=str(tmp_path))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                return await client.initialize()

    result = anyio.run(session)
    assert result.server_info.name == "wiki"
    assert result.instructions == mcp_command.INSTRUCTIONS


def test_kernel_tools_over_stdio_cand_and_status_as_the_cli_reports_them(tmp_path):
    """The kernel lane's writers are tools too: a candidate committed through `kernel_cand`
    shows in `kernel_status` exactly as `wiki kernel status --json` shows it."""
    from wikiengine.demos.kernel import CLASS_PAGE, FAMILY, OP_POINT, scaffold

    authoring = scaffold(tmp_path)
    for argv in (["start", "bench_layernorm.py", "--reference", str(authoring / "reference.py"), "--op-point",
                  OP_POINT, "--class-page", CLASS_PAGE, "--yes"],
                 ["stub", FAMILY, "--slug", "fused-layernorm", "--proposal", str(authoring / "single-pass-fusion.md"),
                  "--op-point", OP_POINT, "--lever", "single-pass-fusion", "--intervention-class", "fusion",
                  "--category", "memory-bound", "--plan", "the native fused pass"]):
        done = subprocess.run([*WIKI, "kernel", *argv, "--json"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    tools, (cand, status, bad) = run_client(tmp_path, [
        ("kernel_cand", {"family": FAMILY, "number": 1, "note": "fused pass", "source": str(authoring / "fused.py")}),
        ("kernel_status", {"family": FAMILY}),
        ("kernel_file", {"family": FAMILY, "verdict": "supported-ish"}),
    ])
    assert {"kernel_cand", "kernel_status", "kernel_file"} <= {t.name for t in tools.tools}
    assert not cand.is_error, cand.content
    assert cand.structured_content["cand"] == "cand1"
    assert not status.is_error and status.structured_content == cli_json(tmp_path, "kernel", "status", FAMILY, "--json")[1]
    assert bad.is_error and "is not one of supported" in bad.content[0].text
