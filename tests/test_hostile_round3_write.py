"""Hostile input to the writers, round 3 (issue 24 part B): every reproduction, named after
the RELIABILITY rows 95-101. A secret never reaches a commit, committed output stays well
formed, a refusal is one line and exit 2 (JSON too with ``--json``), and a full disk or a
read-only folder leaves nothing half-written. The MCP rows (96, 102) are in
``tests/test_mcp_hardening.py``.

Secret-shaped test values are assembled at run time, so that this file holds none.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lint_support import hang_guard
from wikiengine._cli._verbs import parse_args
from wikiengine._cli.main import build_parser
from wikiengine.core import git as core_git
from wikiengine.core.errors import WikiError
from wikiengine.core.git import GitCommitError
from wikiengine.core.secrets import secret_hits
from wikiengine.model import results_tsv
from wikiengine.model.verdicts import Comparison
from wikiengine.step.writers import check_metric_name, results_table

REPO = Path(__file__).resolve().parents[1]
WIKI = [sys.executable, "-m", "wikiengine"]
LANE = ("gemma4", "tpu")

# Tokens in the shapes of the common credentials (gitleaks' rules), built so no literal sits here.
TOKENS = {
    "aws-access-key": "AKIA" + "Q3EXAMPLE7WVZ2X4",
    "github-token": "ghp" + "_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5",
    "github-fine-grained-pat": "github" + "_pat_" + "11ABCDEFG0" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7",
    "huggingface-token": "hf" + "_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "slack-token": "xox" + "b-" + "123456789012-1234567890123-aB3dE5gH7jK9",
    "google-api-key": "AI" + "za" + "SyD3x4mpl3K3y-aB3dE5gH7jK9mN1pQ3sTu",
    "private-key": "-----BEGIN " + "RSA PRIVATE" + " KEY-----",
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
    "api-key": "sk" + "-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t",
    "password-assignment": "pass" + "word=" + "hunter2-Tr0ub4dor",
    "url-credentials": "https://alice:" + "Pa55w0rd99" + "@db.example.com/x",
}
NOT_SECRETS = [
    "commit 9a66935f1e2b3c4d5e6f708192a3b4c5d6e7f809 (HEAD)",
    "digest sha256:" + "ab12" * 16,
    "run id 123e4567-e89b-12d3-a456-426614174000",
    "aGVsbG8gd29ybGQsIHRoaXMgaXMgb3JkaW5hcnkgcHJvc2U=",
    "password: str", "password=$DB_PASSWORD", "password=${PW}", "api_key=os.environ['KEY']",
    "password: <redacted>", "--password=PASSWORD", "pwd=args.password", "secret: true", "api_key=None",
    "sk-learn-compatible-estimator-wrapper", "git@github.com:org/repo.git", "xoxo from the team",
    "the access key lives in AWS_SECRET_ACCESS_KEY", "**Key result**: tps=31,955 (+4.2%)",
    "| v048 | 2026-01-02 | 31955 | 41.2 | 512 | 14.5 | remat=full | keep | hf_hub download |",
]


def cli(cwd: Path, *argv: str, timeout: float = 120):
    proc = subprocess.run([*WIKI, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def one_line(proc, code: int = 2) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1, (proc.returncode, proc.stderr)
    return lines[0]


def make_wiki(root: Path) -> Path:
    assert subprocess.run([*WIKI, "init", str(root), "--model", LANE[0], "--lane", LANE[1], "--variant", "2b/v5p-8"],
                          capture_output=True).returncode == 0
    for args in (["init", "-q"], ["config", "user.name", "Tester"], ["config", "user.email", "t@t.invalid"],
                 ["add", "-A"], ["commit", "-qm", "wiki init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture
def lane_wiki(tmp_path):
    return make_wiki(tmp_path / "w")


def head(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()


def dirty(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                          capture_output=True, text=True).stdout


def records(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".git" / "wiki-lane").glob("*.txn.json"))


# --- row 95: secret-shaped strings never reach a commit -------------------------------------


@pytest.mark.parametrize("rule", sorted(TOKENS))
def test_row95_every_common_token_shape_is_a_hit_on_its_line(rule):
    text = f"# page\n\nsome prose\n\nnote: {TOKENS[rule]} end\n"
    assert [(h.line, h.rule) for h in secret_hits(text)] == [(5, rule)]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_row95_no_hit_on_digests_shas_uuids_base64_placeholders_or_prose(text):
    assert secret_hits(text) == []


def test_row95_no_hit_anywhere_in_this_repositorys_example_wiki():
    pages = [p for d in ("wiki", "memory") for p in (REPO / d).rglob("*") if p.is_file()]
    assert len(pages) > 50
    hits = {str(p.relative_to(REPO)): secret_hits(p.read_text(encoding="utf-8", errors="replace")) for p in pages}
    assert {k: v for k, v in hits.items() if v} == {}


def test_row95_log_add_with_a_password_is_refused_naming_the_line_never_the_value(lane_wiki):
    value = "hunter2-" + "Tr0ub4dor"
    before = head(lane_wiki)
    proc = cli(lane_wiki, "log", "add", "note", "db creds", "--field", f"Notes=the pass{'word'}={value} for prod")
    line = one_line(proc)
    assert line.startswith("error: wiki/log.md:") and "refusing to commit: a secret-shaped string (password-assignment)" in line
    assert value not in proc.stderr + proc.stdout
    assert head(lane_wiki) == before and dirty(lane_wiki) == "" and records(lane_wiki) == []
    assert value not in (lane_wiki / "wiki/log.md").read_text()


def test_row95_a_secret_already_in_a_file_refuses_every_later_write_of_it(lane_wiki):
    log = lane_wiki / "wiki/log.md"
    log.write_text(log.read_text() + "\nleftover " + TOKENS["aws-access-key"] + "\n")
    proc = cli(lane_wiki, "log", "add", "note", "clean entry", "--field", "Notes=ordinary")
    assert "(aws-access-key)" in one_line(proc) and TOKENS["aws-access-key"] not in proc.stderr


def test_row95_commit_paths_checks_every_writers_files_and_message(lane_wiki):
    page = lane_wiki / "wiki/notes.md"
    page.write_text("# notes\n\nfine\n\n" + TOKENS["github-token"] + "\n")
    with pytest.raises(GitCommitError) as found:
        core_git.commit_paths(lane_wiki, ["wiki/notes.md"], "notes")
    assert str(found.value).startswith("wiki/notes.md:5: refusing to commit") and TOKENS["github-token"] not in str(found.value)
    page.write_text("# notes\n\nfine\n")
    with pytest.raises(GitCommitError, match=r"^commit message: refusing to commit: a secret-shaped string \(jwt\)"):
        core_git.commit_paths(lane_wiki, ["wiki/notes.md"], "notes " + TOKENS["jwt"])
    assert core_git.commit_paths(lane_wiki, ["wiki/notes.md"], "notes") == head(lane_wiki)


# --- row 97: a line break in a cluster flag ---------------------------------------------------


@pytest.mark.parametrize("flag, value", [("--project", "proj\nzone: evil"), ("--location", "europe-west4-b\r"),
                                         ("--cluster", "alice\tv5p"), ("--project", "p\x1b[2J")])
def test_row97_init_refuses_a_control_character_in_a_cluster_flag_and_writes_nothing(tmp_path, flag, value):
    flags = {"--cluster": "alice-v5p-16", "--tpu": "v5p-2x2x2", "--location": "europe-west4-b", "--project": "p1",
             flag: value}
    target = tmp_path / "new"
    proc = cli(tmp_path, "init", str(target), *[x for pair in flags.items() for x in pair])
    assert f"error: {flag} " in one_line(proc) and "give one word" in proc.stderr
    assert not target.exists()


# --- row 98: names a writer creates, metric names a table holds --------------------------------


@pytest.mark.parametrize("name, why", [
    ("m" * 300, "300 characters, over the 64"),
    ("gemm\u0430" + "4", "U+0430 CYRILLIC SMALL LETTER A is a non-ASCII letter that can pass for another"),
    ("gem\u202ema", "U+202E RIGHT-TO-LEFT OVERRIDE is an invisible or bidirectional control character"),
    ("gem\u200dma", "U+200D ZERO WIDTH JOINER is an invisible or bidirectional control character"),
    ("\uff47emma", "U+FF47 FULLWIDTH LATIN SMALL LETTER G is a compatibility form of 'g'"),
    ("ge mma", "U+0020 SPACE is not a letter"),
])
def test_row98_init_refuses_long_look_alike_and_bidi_model_names(tmp_path, name, why):
    target = tmp_path / "new"
    proc = cli(tmp_path, "init", str(target), "--model", name)
    line = one_line(proc)
    assert line.startswith("error: invalid model name") and why in line
    assert "\u202e" not in line and "\u200d" not in line  # shown escaped, never as the character itself
    assert not target.exists()


def test_row98_plain_model_names_still_scaffold(tmp_path):
    for name in ("gemma4", "llama3.1-8b", "Qwen3_MoE", "m" * 64):
        assert cli(tmp_path, "init", str(tmp_path / name), "--model", name).returncode == 0


@pytest.mark.parametrize("name", ["tps|mfu", "a`b", "x\ty", "new\nline", "rtl\u202e", "m" * 65, " "])
def test_row98_a_metric_name_that_breaks_a_cell_is_refused(name):
    with pytest.raises(WikiError, match="metric name"):
        check_metric_name(name)


def test_row98_exp_file_refuses_a_pipe_in_a_metric_name_before_anything_is_written(lane_wiki, tmp_path):
    before = head(lane_wiki)
    proc = cli(lane_wiki, "exp", "file", "v001", *LANE, "--verdict", "supported", "--metric", "tps|x=1")
    assert "metric name 'tps|x': U+007C would break the Results table" in one_line(proc)
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"tps": 1.0, "mfu|evil": 2.0}))
    proc = cli(lane_wiki, "exp", "file", "v001", *LANE, "--verdict", "supported", "--metrics", str(metrics))
    assert one_line(proc).startswith(f"error: {metrics}: metric name 'mfu|evil'")
    assert head(lane_wiki) == before and dirty(lane_wiki) == ""


def test_row98_a_metric_name_the_run_recorded_is_escaped_in_the_results_table():
    from markdown_it import MarkdownIt

    measured = Comparison(value=2.0, reference=1.0, reference_label="the row's Baseline", delta=1.0, recorded=2.0,
                          noise_band=0.1, noise_source="A/A", co_measured=False)
    table = results_table({"tps": 2.0, "odd|name": 3.0, "line\\break": 4.0}, "tps", measured)
    html = MarkdownIt("commonmark").enable("table").render(table)
    assert html.count("<tr>") == 4 and html.count("<td>") == 15  # 3 rows x 5 cells: no cell split or spilled
    assert "<td>odd|name</td>" in html and "<td>line\\break</td>" in html


def test_row98_results_tsv_rows_keep_their_columns_whatever_the_text():
    text = results_tsv.append_row("", {"exp_id": "v001", "status": "keep", "config": "a=1\tb=2",
                                       "description": "pipes | tabs \t and\nnew lines"})
    header, row = text.splitlines()
    assert len(row.split("\t")) == len(header.split("\t")) == len(results_tsv.COLUMNS)
    assert row.split("\t")[-1] == "pipes | tabs and new lines"


# --- row 99: repeated options parse in linear time ---------------------------------------------


def test_row99_forty_thousand_fields_parse_in_order():
    parser = build_parser("log")
    argv = ["log", "add", "note", "s", *(f"--field=k{i}=v" for i in range(40_000))]
    with hang_guard(20):  # argparse's own parse of this argv takes minutes (quadratic); this one milliseconds
        args = parse_args(parser, argv)
    assert len(args.field) == 40_000 and args.field[:2] == ["k0=v", "k1=v"] and args.field[-1] == "k39999=v"


def test_row99_the_folded_parse_equals_argparses_own():
    parser = build_parser("log")
    argv = ["log", "add", "note", "a subject", "gemma4", "tpu", "--field", "A=1", "--dry-run", "--field=B=2 and more",
            "--json", "--field=--C=3"]
    assert vars(parse_args(parser, argv)) == vars(parser.parse_args(argv))
    for refused in (["--field"], ["--field", "--json"]):  # argparse's own refusals stay its own
        with pytest.raises(SystemExit):
            parse_args(parser, ["log", "add", "note", "s", *refused])
    assert parse_args(parser, ["log", "add", "note", "s"]).field == []  # the parser's default list is never grown
    assert parser.parse_args(["log", "add", "note", "s"]).field == []


def test_row99_a_command_without_the_option_gets_argparses_message():
    parser = build_parser("lint")
    with pytest.raises(SystemExit) as usage:
        parse_args(parser, ["lint", "--field=x"])
    assert usage.value.code == 2


# --- row 100: a full disk, a read-only folder ---------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (root only): the wiki inside, then filled up to the last 8 KiB."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and mount(8) for a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_row100_a_full_disk_is_one_line_and_exit_2_with_nothing_written(small_disk):
    root = make_wiki(small_disk / "w")
    log_before, sha = (root / "wiki/log.md").read_text(), head(root)
    free = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 8192))
    proc = cli(root, "log", "add", "note", "big", "--field", "Notes=" + "a" * 60_000, "--json")
    line = one_line(proc)
    assert "No space left on device (nothing written, nothing committed)" in line
    assert json.loads(proc.stdout)["exit_status"] == 2
    assert (root / "wiki/log.md").read_text() == log_before and head(root) == sha
    assert dirty(root) == "" and records(root) == []


def test_row100_a_read_only_wiki_folder_is_one_line_and_exit_2_with_nothing_written(small_disk):
    root = make_wiki(small_disk / "w")
    log_before, sha = (root / "wiki/log.md").read_text(), head(root)
    wiki = root / "wiki"
    subprocess.run(["mount", "--bind", str(wiki), str(wiki)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(wiki)], check=True)
        proc = cli(root, "log", "add", "note", "entry", "--field", "Notes=x")
        assert one_line(proc).startswith("error: wiki/log.md: cannot write: Read-only file system")
    finally:
        subprocess.run(["umount", str(wiki)], check=True)
    assert (root / "wiki/log.md").read_text() == log_before and head(root) == sha
    assert dirty(root) == "" and records(root) == []


def test_row100_a_read_only_repository_is_one_line_and_exit_2(small_disk):
    root = make_wiki(small_disk / "w")
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = cli(root, "log", "add", "note", "entry", "--json")
    assert "Read-only file system" in one_line(proc)
    assert json.loads(proc.stdout)["exit_status"] == 2


def test_row100_an_overlong_path_is_one_line_and_exit_2(tmp_path):
    proc = cli(tmp_path, "init", str(tmp_path / ("d" * 300)))
    assert one_line(proc).endswith("File name too long")


# --- row 101: every --json command prints JSON when it refuses ----------------------------------


def _json_commands() -> list[list[str]]:
    """The argv of every command that takes --json, its required arguments filled with dummies."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
        if path and any("--json" in a.option_strings for a in parser._actions):
            argv = list(path)
            for action in parser._actions:
                if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                    continue
                dummy = str(next(iter(action.choices))) if action.choices else "1"
                if not action.option_strings and action.nargs not in ("*", "?"):
                    argv += [dummy] * (action.nargs if isinstance(action.nargs, int) else 1)
                elif action.option_strings and action.required:
                    argv += [action.option_strings[0], dummy]
            found.append(argv)

    walk(build_parser(), [])
    return found


REFUSALS = {"init": ["init", "--lane", "x"], "mcp": None}  # init succeeds on an empty folder; mcp --json serves


def test_row101_every_json_command_is_found():
    names = {" ".join(a[:2]) if a[0] in ("exp", "kernel", "loop", "log") else a[0] for a in _json_commands()}
    assert {"loop stop", "loop status", "log add", "exp new", "kernel stub", "lint", "step", "init"} <= names


@pytest.mark.parametrize("argv", _json_commands(), ids=lambda a: "-".join(a[:3]))
def test_row101_every_json_command_prints_json_when_it_refuses(tmp_path, argv):
    argv = REFUSALS.get(argv[0], argv) if argv[0] in REFUSALS else argv
    if argv is None:
        pytest.skip("wiki mcp --json only qualifies --list-tools")
    proc = subprocess.run([*WIKI, *argv, "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, "KUBECONFIG": str(tmp_path / "none")})
    assert proc.returncode not in (0, 70), (argv, proc.returncode, proc.stderr)
    answer = json.loads(proc.stdout)
    assert isinstance(answer, dict) and answer["error"].strip(), answer
    if "exit_status" in answer:  # the CLI's own refusal object (a command may print its own, e.g. lane check)
        assert answer["exit_status"] == proc.returncode and answer["error"] == proc.stderr.strip().removeprefix("error: ")


def test_row101_loop_stop_json_refusal_in_a_wiki_without_a_session(lane_wiki):
    proc = cli(lane_wiki, "loop", "stop", "--yes", "--json")
    assert proc.returncode == 2 and "memory/STATE.md" in json.loads(proc.stdout)["error"]
