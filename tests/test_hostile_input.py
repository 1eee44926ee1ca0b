"""Hostile input and configuration (issue 14): every reproduction of the issue, named after
the rows 51-63 this project adds to RELIABILITY.md (README, "Reliability"). Nothing hangs,
nothing escapes the repository, every bad input is one line and exit 2 (or a finding).

The hang guards below are not timings: each input took 12 s to forever before the fix,
and is sized so that the old quadratic or exponential code could not finish inside them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lint_support import PROGRAM_LANE, PROGRAM_MODEL, PROGRAM_ROOT, git, hang_guard, write
from wikiengine.core.errors import WikiError
from wikiengine.lint import lint
from wikiengine.lint.baseline import BASELINE_FILE
from wikiengine.lint.cache import CACHE_DIR, CACHE_FILE
from wikiengine.lint.config import LintConfig

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = {PROGRAM_ROOT: "# root\n\n## Setup\n\nroot setup\n", PROGRAM_MODEL: "# model\n\n## Setup\n\nmodel setup\n",
            PROGRAM_LANE: "# lane\n\n## Notes\n\nlane notes\n"}
NOTE = "wiki/notes/note.md"


def wiki(tmp_path: Path, files: dict | None = None) -> Path:
    return write(tmp_path / "repo", {**PROGRAMS, NOTE: "# note\n", **(files or {})})


def wiki_cli(root: Path, *args: str, command: str = "lint", timeout: float = 60, env: dict | None = None):
    """`wiki COMMAND ARGS` as a process in ``root``: one line on stderr, never a traceback."""
    proc = subprocess.run([sys.executable, "-m", "wikiengine", command, *args], cwd=root, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def one_error_line(proc) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("notice:")]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    return lines[0]


def findings(root: Path, select=None):
    return {(f.path, f.code, f.message) for f in
            lint(root, config=LintConfig(select=select or []), base=None, use_cache=False, jobs=1).findings}


# --- row 51: files that are not regular files ----------------------------------------------


def test_row51_a_named_pipe_page_or_program_is_a_finding_not_a_hang(tmp_path):
    root = wiki(tmp_path)
    os.mkfifo(root / "wiki" / "x.md")
    os.remove(root / PROGRAM_LANE)
    os.mkfifo(root / PROGRAM_LANE)
    proc = wiki_cli(root, "--no-cache", timeout=60)
    assert proc.returncode == 1
    assert "wiki/x.md:1:1: WK001 not a regular file" in proc.stdout
    assert f"{PROGRAM_LANE}:1:1: WK001 not a regular file" in proc.stdout
    line = one_error_line(wiki_cli(root, "gemma4", "tpu", command="resolve", timeout=60))
    assert line.endswith(f"{PROGRAM_LANE}: not a regular file")


def test_row51_a_program_symlinked_to_dev_zero_is_never_read(tmp_path):
    root = wiki(tmp_path, {
        "wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-01-02-v001-x.md":
            "---\nworkload_name: me-gemma4-tpu-v001-x\n---\n# x\n",
    })
    os.remove(root / PROGRAM_MODEL)
    os.symlink("/dev/zero", root / PROGRAM_MODEL)  # WKL001 reads the model program for USER_PREFIX
    proc = wiki_cli(root, "--no-cache", "--select", "WK001,WKL", timeout=60)
    assert proc.returncode == 1 and f"{PROGRAM_MODEL}:1:1: WK001" in proc.stdout


def test_row51_state_md_symlinked_to_dev_zero_stops_wiki_step_with_exit_2(tmp_path):
    from test_relay_support import Clock, FakeCompute, make_wiki

    from wikiengine.step.relay.wake import run_step

    root = tmp_path / "run"
    root.mkdir()
    store = make_wiki(root)
    (root / "memory" / "STATE.md").unlink()
    os.symlink("/dev/zero", root / "memory" / "STATE.md")
    # never read: refused as a link out of the repository (core/safe_read.py), before any open
    with hang_guard(60), pytest.raises(WikiError, match="outside the repository: not read"):
        run_step(root, clock=Clock(), store=store, compute=FakeCompute())


# --- row 52: suppression comments at scale ------------------------------------------------


def test_row52_unclosed_suppression_openers_cost_linear_time(tmp_path):
    # 4,000 of them took 12 s (each restarted a scan of the rest of the line): 20,000 would take 5 min.
    root = wiki(tmp_path, {NOTE: "# note\n\n[x](gone.md)\n\n" + "<!-- wiki-lint: disable " * 20_000 + "\n"})
    with hang_guard(60):
        found = findings(root, ["LNK", "WK"])
    assert found == {(NOTE, "LNK001", "link 'gone.md' points to wiki/notes/gone.md, which does not exist")}


def test_row52_a_disable_file_of_many_codes_is_indexed_not_scanned(tmp_path):
    # 40,000 codes cost 17 s on every warm run (every unused code compared with every code): 200,000 would take 7 min.
    codes = ",".join(f"ZZ{i}" for i in range(200_000))
    root = wiki(tmp_path, {NOTE: f"# note\n\n<!-- wiki-lint: disable-file LNK001,{codes} -->\n[x](gone.md)\n"})
    with hang_guard(60):
        result = lint(root, config=LintConfig(select=["LNK", "WK"]), base=None, use_cache=False, jobs=1)
    assert result.suppressed == 1
    assert {f.code for f in result.findings} == {"WK100"} and len(result.findings) == 200_000
    assert result.findings[0].message.startswith("suppression of unknown rule ZZ")


# --- row 53: user-supplied regular expressions --------------------------------------------


def test_row53_a_catastrophic_additive_marker_cannot_hang_lint_or_resolve(tmp_path):
    root = wiki(tmp_path, {"wiki.toml": 'additive-marker = "^(a+)+$"\n',
                           PROGRAM_LANE: "# lane\n\n## " + "a" * 30 + "!\n\nz\n\n## aaaa\n\nadded\n"})
    with hang_guard(60):
        assert wiki_cli(root, "--no-cache", "--select", "PRG").returncode == 0
        proc = wiki_cli(root, "gemma4", "tpu", "--additive-marker", "^(a+)+$", "--json", command="resolve")
    sections = {s["title"]: s["additive"] for s in json.loads(proc.stdout)["sections"]}
    assert sections == {"Setup": False, "a" * 30 + "!": False, "aaaa": True}


@pytest.mark.parametrize("pattern, words", [
    ("([", "missing ]"),
    ("(a)\\1", "invalid escape sequence"),
    ("(?<!x)y", "invalid perl operator"),
    ("x" * 1001, "longer than 1000 characters"),
])
def test_row53_a_pattern_that_cannot_run_in_linear_time_is_exit_2(tmp_path, pattern, words):
    for toml in (f"additive-marker = {json.dumps(pattern)}\n", f"[rules.EXP001]\nid-pattern = {json.dumps(pattern)}\n"):
        root = wiki(tmp_path / str(len(toml)), {"wiki.toml": toml})
        assert words in one_error_line(wiki_cli(root))
    root = wiki(tmp_path / "resolve")
    assert words in one_error_line(wiki_cli(root, "gemma4", "--additive-marker", pattern, command="resolve"))


@pytest.mark.parametrize("pattern, words", [
    ("(v+)+x", "repeats a repetition or an alternation"),
    ("(v|vv)*x", "repeats a repetition or an alternation"),
    ("\\w*\\w*\\w*x", "more than 2 unbounded repeats"),
])
def test_row53_an_id_pattern_spliced_into_a_backtracking_re_is_held_to_safe_shapes(tmp_path, pattern, words):
    # The experiment rules wrap id-pattern in lookarounds and compile it with Python's re:
    # (v+)+x hung lint on a file name of 28 v's.
    root = wiki(tmp_path, {"wiki.toml": f"[rules.EXP001]\nid-pattern = {json.dumps(pattern)}\n",
                           "wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-01-01-"
                           + "v" * 28 + ".md": "# x\n"})
    assert words in one_error_line(wiki_cli(root, timeout=60))
    root = wiki(tmp_path / "ok", {"wiki.toml": '[rules.EXP001]\nid-pattern = "v\\\\d{3,}[a-z]?|exp\\\\d+"\n'})
    assert wiki_cli(root, "--no-cache", "--select", "EXP001").returncode == 0


# --- row 54: pages and programs at the size limits ----------------------------------------


def test_row54_thousands_of_additive_sections_are_indexed_not_searched_pairwise(tmp_path):
    # 5,000 sections in a model and a lane made 25 million searches (16 s of CPU); here 20,000.
    sections = "".join(f"## S{i}-specific CAN additions\n\nx\n\n" for i in range(20_000))
    root = wiki(tmp_path, {PROGRAM_MODEL: "# m\n\n## Rules\n\nr\n\n" + sections,
                           PROGRAM_LANE: "# l\n\n## Rules — tpu-specific CAN additions\n\nmore\n\n" + sections})
    with hang_guard(60):
        found = findings(root, ["PRG"])
    assert found == {(PROGRAM_LANE, "PRG003",
                      "additive section '## Rules — tpu-specific CAN additions' is led by the model program's '## Rules' "
                      f"({PROGRAM_MODEL}:3): it adds a second section instead of adding to that one")}


def test_row54_a_page_of_too_many_lines_is_refused_before_it_is_split(tmp_path):
    # Two legal 15.9 MB pages of one-character lines took 41 s and 1.35 GiB.
    root = wiki(tmp_path, {"wiki/notes/a.md": "x\n===\n" * 1_000_000})  # setext: markdown-it would decide
    found = findings(root, ["WK001"])
    assert found == {("wiki/notes/a.md", "WK001", "too many lines (2000000; the limit for a page is 200000)")}


# --- row 55: numbers past Python's integer string limit -----------------------------------


def test_row55_a_5000_digit_integer_is_a_parse_error(tmp_path):
    big = "9" * 5000
    root = wiki(tmp_path, {NOTE: f"---\ntitle: {big}\n---\n# n\n",
                           "wiki/runs/program.md": "# runs\n",
                           "wiki/runs/x/program.md": f"# x\n\n## Config\n\n```yaml\nmax_steps: {big}\n```\n"})
    proc = wiki_cli(root, "--no-cache", "--select", "WK001")
    assert proc.returncode == 1
    assert f"{NOTE}:2:1: WK001 invalid YAML: a number has more than 4300 digits" in proc.stdout
    line = one_error_line(wiki_cli(root, "--run", "x", command="resolve"))
    assert line.endswith("wiki/runs/x/program.md:6: invalid YAML: a number has more than 4300 digits")
    root = wiki(tmp_path / "toml", {"wiki.toml": f"[rules.EXP011]\nmax-age-days = {big}\n"})
    assert "cannot read configuration" in one_error_line(wiki_cli(root))
    root = wiki(tmp_path / "baseline", {BASELINE_FILE: '{"entries": [{"path": "a", "code": "WK001", "hash": "h", '
                                                       f'"count": {big}}}]}}'})
    assert "cannot read the lint baseline" in one_error_line(wiki_cli(root))


# --- row 56: names and directories the linter cannot read ---------------------------------


def test_row56_a_file_name_that_is_not_utf8_is_exit_2(tmp_path):
    root = wiki(tmp_path)
    (root / "wiki" / os.fsdecode(b"bad\xff.md")).write_text("---\nx: [\n---\n")
    for fmt in ("text", "json", "sarif"):
        assert one_error_line(wiki_cli(root, "--no-cache", "--format", fmt)) == (
            "error: wiki/bad\\xff.md: file name is not valid UTF-8: rename it")


def _as_nobody() -> list[str]:
    """The argv prefix that runs a command as an unprivileged user (root reads everything)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no user to whom a directory is unreadable")
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture()
def open_tmp():
    """A directory that an unprivileged user can traverse (pytest's tmp_path is 0700)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="wiki-hostile-"))
    base.chmod(0o755)
    yield base
    for path in base.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(base)


def test_row56_an_unreadable_directory_or_configuration_is_exit_2(open_tmp):
    tmp_path = open_tmp
    root = wiki(tmp_path, {"wiki/locked/a.md": "# a\n"})
    for path in (root, *root.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o666)
    (root / "wiki" / "locked").chmod(0)
    argv = [*_as_nobody(), sys.executable, "-m", "wikiengine", "lint", "--no-cache"]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: wiki/locked: cannot list directory: Permission denied"
    (root / "wiki" / "locked").chmod(0o777)
    (root / "wiki.toml").write_text('select = ["WK"]\n')
    (root / "wiki.toml").chmod(0)
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2 and proc.stderr.strip().endswith("wiki.toml: cannot read configuration: Permission denied")


# --- row 57: configuration values of the wrong kind ---------------------------------------


@pytest.mark.parametrize("name, text, words", [
    ("wiki.toml", '[rules.EXP011]\nmax-age-days = "soon"\n', "[rules.EXP011] max-age-days must be an integer from 1 to 36500, not str 'soon'"),
    ("wiki.toml", "[rules.EXP011]\nmax-age-days = inf\n", "must be an integer from 1 to 36500, not float inf"),
    ("wiki.toml", "[rules.EXP011]\nmax-age-days = 0\n", "must be an integer from 1 to 36500, not int 0"),
    ("wiki.toml", "[rules.EXP002]\nsections = 5\n", "[rules.EXP002] sections must be a list of non-empty strings, not int 5"),
    ("wiki.toml", '[rules.MOD002]\nhigher-is-better = "yes"\n', "higher-is-better must be true or false"),
    ("wiki.toml", '[rules.EXP001]\nsince = "soon"\n', "[rules.EXP001] since must be a date (YYYY-MM-DD)"),
    ("wiki.toml", '[rules.EXP001]\nid-patern = "v\\\\d+"\n', "[rules.EXP001]: unknown option 'id-patern' (did you mean 'id-pattern'?)"),
    ("wiki.toml", 'selec = ["EXP"]\n', "unknown configuration key 'selec' (did you mean 'select'?)"),
    ("wiki.toml", 'ignore = [""]\n', "'ignore' must be a list of rule codes or prefixes"),
    ("wiki.toml", 'select = ["EXP 001"]\n', "is not a rule code or prefix"),
    ("wiki.toml", "rules = 3\n", "'rules' must be a table of per-rule option tables"),
    pytest.param("wiki.toml", "select = " + "[" * 5000 + "]" * 5000 + "\n", "cannot read configuration: nested too deep",
                 id="5000-deep"),
    ("pyproject.toml", 'tool = "x"\n', "'tool' must be a table"),
    ("pyproject.toml", '[tool]\nwiki = 3\n', "[tool.wiki] must be a table"),
])
def test_row57_a_configuration_value_of_the_wrong_kind_is_exit_2(tmp_path, name, text, words):
    root = wiki(tmp_path, {name: text})
    line = one_error_line(wiki_cli(root, "--no-cache"))
    assert words in line and name in line


def test_row57_selectors_on_the_command_line_are_blamed_on_it_and_case_blind(tmp_path):
    root = wiki(tmp_path, {"pyproject.toml": '[tool.wiki]\nignore = ["lnk"]\n', NOTE: "# n\n\n[x](gone.md)\n"})
    assert one_error_line(wiki_cli(root, "--select", "FOO")) == "error: --select names no rule: 'FOO'"
    assert one_error_line(wiki_cli(root, "--ignore", "wk,FOO")) == "error: --ignore names no rule: 'FOO'"
    assert wiki_cli(root, "--no-cache", "--select", "lnk").returncode == 0  # the config's ignore = ["lnk"] holds
    proc = wiki_cli(root, "--no-cache", "--config", str(root / "missing.toml"))
    assert one_error_line(proc).endswith("missing.toml: configuration file not found")
    (root / "pyproject.toml").unlink()
    assert "LNK001" in wiki_cli(root, "--no-cache", "--select", "lnk001").stdout


def test_row57_every_documented_option_is_declared_with_its_kind_and_back():
    import re

    from wikiengine.lint.registry import REGISTRY, rule_class

    for code in REGISTRY:
        cls = rule_class(code)
        documented = set(re.findall(r"^- `([a-z-]+)` \(", cls.doc().split("## Options", 1)[-1], re.M))
        assert documented == set(cls.options), code


# --- row 58: hostile baselines and baseline bookkeeping -----------------------------------


@pytest.mark.parametrize("text, words", [
    pytest.param("[" * 100_000 + "]" * 100_000, "nested too deep", id="100000-deep"),
    ('{"entries": [{"path": "a", "code": "WK001", "hash": "h", "count": 1e999}]}', "count must be a whole number"),
    ('{"entries": [{"path": "a", "code": "WK001", "hash": "h", "count": true}]}', "count must be a whole number"),
    ('{"entries": [{"path": 1, "code": "WK001", "hash": "h", "count": 1}]}', "must be strings"),
    ('{"entries": {}}', "'entries' must be a list"),
])
def test_row58_a_hostile_baseline_is_exit_2(tmp_path, text, words):
    root = wiki(tmp_path, {BASELINE_FILE: text})
    assert words in one_error_line(wiki_cli(root, "--no-cache"))


STUB = "wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-01-02-v001-stub.md"
STUB_TEXT = ("---\ntitle: stub\nstatus: in_progress\nhypothesis: h\nmodel: gemma4-tpu\n---\n# stub\n\n"
             "## Hypothesis under test\n\n**Hypothesis**: a\n\n**Mechanism**: b\n\n**Predicted signal**: c\n\n"
             "**Falsification criterion**: d\n")


def test_row58_fix_with_no_baseline_ignores_the_baseline_and_counts_its_fixes(tmp_path):
    root = wiki(tmp_path, {STUB: STUB_TEXT + "\n[x](gone.md)\n"})  # 5 missing sections (fixable), 1 broken link
    assert wiki_cli(root, "--no-cache", "--select", "EXP002,LNK", "--write-baseline").returncode == 0
    proc = wiki_cli(root, "--no-cache", "--select", "EXP002,LNK", "--fix", "--no-baseline")
    # The re-lint after the fixes applied the baseline: "Fixed 6", exit 0, the broken link hidden.
    assert proc.returncode == 1 and "Fixed 5 findings." in proc.stdout and "LNK001" in proc.stdout
    assert "## Setup" in (root / STUB).read_text()


def test_row58_a_baselined_page_that_breaks_keeps_its_entries(tmp_path):
    root = wiki(tmp_path, {STUB: STUB_TEXT})
    assert wiki_cli(root, "--no-cache", "--select", "EXP002,WK", "--write-baseline").returncode == 0
    accepted = json.loads((root / BASELINE_FILE).read_text())["entries"]
    assert {e["path"] for e in accepted} == {STUB} and "EXP002" in {e["code"] for e in accepted}
    (root / STUB).write_text(STUB_TEXT.replace("title: stub", "title: [stub"))  # the frontmatter breaks
    proc = wiki_cli(root, "--no-cache", "--select", "EXP002,WK")
    assert proc.returncode == 1
    assert "WK001" in proc.stdout and "WK101" not in proc.stdout  # not "fixed, run --write-baseline"
    assert wiki_cli(root, "--no-cache", "--select", "EXP002,WK", "--write-baseline").returncode == 0
    entries = json.loads((root / BASELINE_FILE).read_text())["entries"]
    assert [e for e in entries if e["code"] != "WK001"] == accepted  # still accepted once the page is mended


# --- row 59: a cache whose key a commit could plant ---------------------------------------


def test_row59_a_key_inside_a_git_work_tree_is_never_trusted(tmp_path):
    from wikiengine.lint import cache

    broken = "# n\n\n[x](gone.md)\n"
    root = wiki(tmp_path, {NOTE: broken})
    git(root, "init", "--quiet")
    # CI commonly points XDG_CACHE_HOME into the workspace: the key would live in the checkout.
    env = {"XDG_CACHE_HOME": str(root / ".ci-cache")}
    assert wiki_cli(root, "--select", "LNK", env=env).returncode == 1
    assert not (root / CACHE_DIR / CACHE_FILE).exists() and not (root / ".ci-cache").exists()
    # A commit plants a key and a cache signed with it that says the page is clean.
    key = os.urandom(cache.KEY_BYTES)
    (root / ".ci-cache" / "wikiengine").mkdir(parents=True)
    (root / ".ci-cache" / "wikiengine" / "cache.key").write_bytes(key)
    (root / ".ci-cache" / "wikiengine" / "cache.key").chmod(0o600)
    (root / CACHE_DIR / "schemas").mkdir(parents=True)
    (root / CACHE_DIR / "schemas" / "experiment.marshal").write_bytes(b"raise SystemExit('executed')")
    forged = subprocess.run([sys.executable, "-c", _FORGE, str(root), key.hex()], capture_output=True, text=True,
                            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "elsewhere")})
    assert forged.returncode == 0, forged.stderr
    proc = wiki_cli(root, "--select", "LNK,WK", env=env)
    assert proc.returncode == 1 and "LNK001" in proc.stdout and "executed" not in proc.stderr
    assert cache.untrusted_place(root / ".ci-cache" / "wikiengine" / "cache.key") is not None
    assert cache.untrusted_place(tmp_path / "elsewhere" / "cache.key", root) is None


# Writes a cache, signed with the planted key, in which the broken page has no findings.
_FORGE = """
import marshal, sys, time
from pathlib import Path
from wikiengine.lint import cache
from wikiengine.lint.config import LintConfig
from wikiengine.lint.runner import lint
root, key = Path(sys.argv[1]), bytes.fromhex(sys.argv[2])
lint(root, config=LintConfig(select=["LNK", "WK"]))
head = root / cache.CACHE_DIR / cache.CACHE_FILE
for path in [head, *(root / cache.CACHE_DIR / cache.INDEX_DIR).glob("*.marshal")]:
    data = marshal.loads(cache.verified(path.read_bytes(), root))
    for entry in data.get("files", {}).values():
        entry["findings"] = []
    data.get("wiki", {})["findings"] = []
    data["written_ns"] = time.time_ns() + 10**10
    blob = marshal.dumps(data)
    path.write_bytes(cache.tag(blob, key) + blob)
"""


# --- row 60: symlinks to files outside the repository -------------------------------------


def test_row60_an_outside_target_is_never_parsed_quoted_or_cached(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntitle: [TOPSECRET\n---\n[x](TOPSECRET.md)\n")
    (outside / "same.md").write_text("# t\n")
    root = wiki(tmp_path, {"wiki/notes/t.md": "# t\n"})
    os.symlink(outside / "secret.md", root / "wiki" / "notes" / "s.md")
    proc = wiki_cli(root)
    assert "wiki/notes/s.md:1:1: WK001 symbolic link to a file outside the repository: not read" in proc.stdout
    assert "TOPSECRET" not in proc.stdout + proc.stderr
    assert b"TOPSECRET" not in (root / CACHE_DIR / CACHE_FILE).read_bytes()
    # A page replaced by a symlink to an outside file with the very same bytes: the warm run sees it.
    (root / "wiki" / "notes" / "t.md").unlink()
    os.symlink(outside / "same.md", root / "wiki" / "notes" / "t.md")
    assert "wiki/notes/t.md:1:1: WK001 symbolic link to a file outside the repository" in wiki_cli(root).stdout


# --- row 61: run-config paths confined to the repository ----------------------------------


def _step_wiki(tmp_path, **changes):
    from test_relay_support import CONFIG, make_wiki

    config = json.loads(json.dumps(CONFIG))
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        config.setdefault(section, {})[key] = value
    root = tmp_path / "run"
    root.mkdir()
    return root, make_wiki(root, config)


def _snapshot(directory: Path) -> set[str]:
    """Every path under ``directory`` but the step lock (filelock leaves it, gitignored)."""
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.name != "wiki-step.lock"}


@pytest.mark.parametrize("changes, words", [
    ({"compute.state_dir": "../x"}, "compute.state_dir leads outside the repository"),
    ({"compute.claims_file": "../../claims.json"}, "compute.claims_file leads outside the repository"),
    ({"publish.dir": "../y"}, "publish.dir leads outside the repository"),
    ({"publish.dir": "/tmp"}, "publish.dir leads outside the repository"),
    ({"compute.owner": "../../x"}, "compute/owner"),
    ({"store.path": "wiki"}, "not a git repository created by LocalGitStore.create"),
])
def test_row61_a_run_config_path_that_leaves_the_repository_is_exit_2(tmp_path, changes, words):
    from test_relay_support import Clock, FakeCompute

    from wikiengine.step.relay.wake import run_step

    root, store = _step_wiki(tmp_path, **changes)
    before, quota = _snapshot(tmp_path), (root / "memory" / "QUOTA.md").read_bytes()
    with pytest.raises(WikiError, match=words.replace("/", "/")):
        run_step(root, clock=Clock(), store=None if "store.path" in changes else store, compute=FakeCompute())
    assert _snapshot(tmp_path) == before  # nothing written, inside or out
    assert (root / "memory" / "QUOTA.md").read_bytes() == quota  # no ledger row booked


def test_row61_a_committed_symlink_for_the_eval_directory_is_exit_2(tmp_path):
    from test_relay_support import Clock, FakeCompute

    from wikiengine.step.relay.wake import run_step

    root, store = _step_wiki(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "wiki" / "runs" / "tiny" / "eval")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "eval output elsewhere")
    with pytest.raises(WikiError, match="wiki/runs/tiny/eval is a symbolic link"):
        run_step(root, clock=Clock(), store=store, compute=FakeCompute())
    assert list((tmp_path / "elsewhere").iterdir()) == []


# --- row 62: revisions that git would read as options -------------------------------------


@pytest.mark.parametrize("revision", ["--output=../leak", "-p", "--since=HEAD\n", ""])
def test_row62_a_revision_that_looks_like_an_option_is_exit_2_and_writes_nothing(tmp_path, revision):
    root = wiki(tmp_path)
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "wiki")
    before = _snapshot(tmp_path)
    for args in ([f"--since={revision}"], [f"--since={revision}", "--changed"]):
        assert one_error_line(wiki_cli(root, "--no-cache", *args)).startswith("error: not a git revision")
    assert _snapshot(tmp_path) == before


# --- row 63: secrets never reach a child process ------------------------------------------

# (name, a credential?) for the clean room's rule: executors.clean_room.is_secret_name
CREDENTIAL_NAMES = [
    ("HF_TOKEN", True), ("HUGGING_FACE_HUB_TOKEN", True), ("HF_TOKEN_PATH", True), ("KAGGLE_KEY", True),
    ("KAGGLE_USERNAME", True), ("KAGGLE_CONFIG_DIR", True), ("AWS_ACCESS_KEY_ID", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("AWS_SESSION_TOKEN", True), ("AWS_PROFILE", True),
    ("AWS_SHARED_CREDENTIALS_FILE", True), ("GOOGLE_APPLICATION_CREDENTIALS", True), ("GOOGLE_CLOUD_PROJECT", True),
    ("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", True), ("AZURE_CLIENT_SECRET", True), ("AZURE_CLIENT_ID", True),
    ("GITHUB_TOKEN", True), ("GH_TOKEN", True), ("ACTIONS_ID_TOKEN_REQUEST_URL", True), ("NPM_TOKEN", True),
    ("OPENAI_API_KEY", True), ("ANTHROPIC_API_KEY", True), ("MY_APIKEY", True), ("WANDB_API_KEY", True),
    ("SSH_AUTH_SOCK", True), ("DB_PASSWORD", True), ("PGPASSWORD", True), ("DB_PASS", True), ("GITLAB_PAT", True),
    ("SIGNING_PRIVATE_KEY", True), ("KEY", True), ("api_key", True), ("NETRC", True), ("KUBECONFIG", True),
    ("DOCKER_CONFIG", True), ("GIT_ASKPASS", True), ("SESSION_SECRET", True), ("MLFLOW_TRACKING_PASSWORD", True),
    ("PATH", False), ("HOME", False), ("LANG", False), ("LC_ALL", False), ("TZ", False), ("TERM", False),
    ("PYTHONPATH", False), ("VIRTUAL_ENV", False), ("PWD", False), ("USER", False), ("SHELL", False),
    ("TMPDIR", False), ("OMP_NUM_THREADS", False), ("CUDA_VISIBLE_DEVICES", False), ("GIT_AUTHOR_NAME", False),
    ("KEYBOARD_LAYOUT", False), ("MONKEY_PATCH", False), ("HF_ENDPOINT", False), ("WIKI_ROOT", False),
    ("LD_LIBRARY_PATH", False), ("PASSIVE_MODE", False),
]


@pytest.mark.parametrize("name, secret", CREDENTIAL_NAMES)
def test_row63_the_credential_name_rule(name, secret):
    from wikiengine.executors.clean_room import is_secret_name

    assert is_secret_name(name) is secret


def test_row63_a_value_that_carries_a_password_is_a_credential():
    from wikiengine.executors.clean_room import clean_environment

    env = clean_environment({"DATABASE_URL": "postgres://u:hunter2@db/x", "HTTPS_PROXY": "http://proxy:3128",
                             "PATH": "/bin"}, Path("/nonexistent/home"))
    assert "DATABASE_URL" not in env and env["HTTPS_PROXY"] == "http://proxy:3128" and env["PATH"] == "/bin"


CANARIES = {"HF_TOKEN": "hf_canary63abcdef", "KAGGLE_KEY": "kagglecanary63", "AWS_ACCESS_KEY_ID": "AKIACANARY63",
            "AWS_SECRET_ACCESS_KEY": "awssecretcanary63", "GOOGLE_APPLICATION_CREDENTIALS": "/gcp/canary63.json"}


def test_row63_the_eval_child_at_finish_gets_the_clean_room(tmp_path, monkeypatch):
    from wikiengine.step.relay import finish

    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    seen = {}

    def run(argv, **kwargs):
        seen.update(kwargs["env"])
        seen["_home_files"] = sorted(os.listdir(kwargs["env"]["HOME"]))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(finish.subprocess, "run", run)
    finish.evaluate(tmp_path / "model", {"eval_plan": ["hellaswag"]}, tmp_path / "out")
    assert not set(CANARIES) & set(seen) and not any(v in CANARIES.values() for v in seen.values())
    assert seen["HOME"] != os.environ.get("HOME") and seen["_home_files"] == []


def test_row63_a_session_gets_a_fresh_home_and_leaves_no_temporary_tree(tmp_path, monkeypatch):
    from test_local_compute import wait_until_ended

    from wikiengine.executors.compute import LaunchRequest
    from wikiengine.executors.local_compute import LocalProcessCompute

    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "home" / ".cache" / "huggingface").mkdir(parents=True)
    (tmp_path / "home" / ".cache" / "huggingface" / "token").write_text("hf_filecanary63")
    parent_tmp = tmp_path / "tmp"
    parent_tmp.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(parent_tmp))
    report = tmp_path / "session.json"
    script = ("import json, os, sys, tempfile\n"
              "tree = tempfile.mkdtemp(prefix='session-tree-')\n"  # as training/launcher.py does
              f"json.dump({{'env': dict(os.environ), 'home': os.listdir(os.path.expanduser('~')), 'tree': tree}}, "
              f"open({str(report)!r}, 'w'))\n")
    compute = LocalProcessCompute(tmp_path / "state", quota_hours=1.0)
    record = compute.launch(LaunchRequest("tiny-session1", script, 600))
    assert wait_until_ended(compute, record.ref).exit_code == 0
    seen = json.loads(report.read_text())
    assert not set(CANARIES) & set(seen["env"]) and "canary63" not in json.dumps(seen)
    assert seen["env"]["HOME"] != str(tmp_path / "home") and seen["home"] == []
    assert not os.path.exists(seen["tree"]) and not os.path.exists(seen["env"]["HOME"])
    assert list(parent_tmp.iterdir()) == []  # no session-tree-*, no scratch directory left behind
