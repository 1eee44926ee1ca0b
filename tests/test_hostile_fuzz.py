"""Row 64: a bounded, hypothesis-driven generator of hostile wikis and configurations.

Each case builds a repository (pages of hostile text, FIFOs, symlinks out of the
repository and into ``/dev/zero``, names that are not UTF-8, directories named like pages,
a ``wiki.toml`` of misspelt keys and wrong types and catastrophic patterns, a hostile
baseline, maybe a git history) and runs one real ``wiki`` process on it (``lint`` with
hostile flags and revisions, ``resolve`` with hostile targets and markers, ``step
--dry-run`` on a hostile run config). Every case must hold:

- exit status 0, 1 or 2 (``step``: 3 when the run is blocked), never 70 nor a signal, and no
  traceback;
- no file written outside the repository (the sandbox around it is compared before and
  after; only the per-user cache key may appear, and ``$TMPDIR`` must be left empty);
- a wall-time ceiling (the process is killed at :data:`CASE_SECONDS`) and a memory
  ceiling (``RLIMIT_AS`` of :data:`ADDRESS_SPACE` in the child; its peak RSS, read with
  ``os.wait4``, under :data:`PEAK_RSS_MIB`).

``WIKI_FUZZ_FIGURES=PATH`` writes the run's figures (cases, worst wall time, worst peak
RSS) as JSON; the README's reliability section quotes them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import ExitCode

USER_CACHE_FILE = re.compile(r"home/\.cache/wikiengine/(?:validators/[a-z-]+-[0-9a-f]{8}-[0-9a-f]+-[0-9]+\.code"
                             r"|dataclasses/[a-z]+-[0-9]+-[0-9a-f]+\.marshal|yaml(?:/loads\.marshal)?"
                             r"|schemas(?:/wordings\.marshal)?|regex(?:/[a-z]+-[0-9]+-[0-9]+\.marshal)?"
                             r"|lane-pages(?:/[0-9a-f]{8}\.marshal)?|lint(?:/engine-digests\.marshal)?"
                             r"|toml(?:/loads\.marshal)?)")

CASES = 50
CASE_SECONDS = 20.0
ADDRESS_SPACE = 1 << 30  # 1 GiB of address space per child: a MemoryError would be exit 70
PEAK_RSS_MIB = 400
FIGURES: dict = {"cases": 0, "worst_wall_s": 0.0, "worst_peak_rss_mib": 0.0, "exit_codes": {}}

LANE = "wiki/experiments/gemma4_autoresearch_optimization/tpu"
MODEL = "wiki/experiments/gemma4_autoresearch_optimization"
PAGE_PATHS = [
    "wiki/experiments/program.md", f"{MODEL}/program.md", f"{LANE}/program.md", f"{LANE}/log.md",
    f"{LANE}/experiments/2026-01-02-v001-x.md", f"{LANE}/experiments/2026-01-03-v002-y.md", "wiki/log.md",
    "wiki/models/gemma4-tpu.md", "wiki/hypotheses/h.md", "wiki/notes/n.md", "wiki/runs/program.md",
    "wiki/runs/r/program.md", "memory/STATE.md", "memory/QUOTA.md", "memory/ERRORS.md", ".env/c.md",
]
BIG = "9" * 5000
FRAGMENTS = [
    "---\n", "---\ntitle: t\n---\n", f"---\ntitle: {BIG}\n---\n", "---\nx: " + "[" * 3000 + "\n---\n",
    "---\na: &a [*a, *a]\n---\n", "---\n!!python/object:os.system x\n---\n", "---\nstatus: a\nstatus: b\n---\n",
    "## Setup\n", "## Config\n\n```yaml\nmax_steps: " + BIG + "\n```\n", "## Config\n\n```yaml\nstore:\n  kind: local-git\n"
    "  path: ../outside\ncompute:\n  kind: local-process\n  state_dir: ../outside/state\n  owner: ../../x\n```\n",
    "## a-specific CAN additions\n", "## " + "a" * 30 + "!\n", "<!-- wiki-lint: disable " * 300,
    "<!-- wiki-lint: disable-file " + ",".join(f"X{i}" for i in range(300)) + " -->\n", "<!-- wiki-lint: disable WK001 -->\n",
    "[link](../../../../outside/secret.md)\n", "[x](gone.md)\n", "## [2026-01-02] loop-iteration | v001\n",
    "| a | b |\n|---|---|\n", "```\n## fenced\n", "x\n===\n" * 50, "x\n" * 2000, "\ufeff", "\r\n", "\x00", "\t## tab\n",
    "> " * 200 + "deep\n", "workload_name: me-gemma4-tpu-v001-x\n",
]
TEXT = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=30), max_size=12).map("".join)
SPECIALS = st.sampled_from(["fifo", "outside-link", "dev-zero", "dangling", "loop", "dir-page", "bad-name",
                            "outside-dir", "unreadable"])
REGEXES = ["^(a+)+$", "(a|a)*$", "([", "(?<!x)y", "(a)\\1", "x" * 2000, "", "(?i)-specific\\s+CAN\\s+additions$"]
VALUES = st.one_of(
    st.sampled_from(["soon", "", "EXP", "exp", "NOPE", "../x", BIG]), st.integers(-10, 10**6),
    st.sampled_from([float("inf"), float("nan"), 1e999, -0.0, True]), st.lists(st.sampled_from(["", "EXP", "lnk", "x y"]), max_size=3),
    st.sampled_from(REGEXES),
)
KEYS = ["select", "ignore", "selec", "per-file-ignores", "log-ops", "additive-marker", "rules", "tool"]
RULE_OPTIONS = ["id-pattern", "id-patern", "sections", "max-age-days", "metric", "higher-is-better", "user-prefix",
                "since", "nonsense"]


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "inf" if value == float("inf") else "nan" if value != value else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str) and value == BIG:
        return BIG
    return json.dumps(value)


@st.composite
def configurations(draw) -> tuple[str, str] | None:
    """``(file name, text)`` of a hostile configuration, or None."""
    kind = draw(st.sampled_from(["none"] * 4 + ["wiki.toml", "wiki.toml", "pyproject.toml", "deep", "garbage"]))
    if kind == "none":
        return None
    if kind == "deep":
        return "wiki.toml", "select = " + "[" * 5000 + "]" * 5000 + "\n"
    if kind == "garbage":
        return "wiki.toml", draw(st.text(max_size=40))
    lines = [f"{key} = {toml_value(draw(VALUES))}" for key in draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))]
    for code in draw(st.lists(st.sampled_from(["EXP001", "EXP002", "EXP011", "MOD002", "WKL001", "exp001", "ZZZ9"]),
                              max_size=2, unique=True)):
        lines.append(f"[rules.{code}]")
        lines += [f"{name} = {toml_value(draw(VALUES))}" for name in draw(st.lists(st.sampled_from(RULE_OPTIONS),
                                                                                    max_size=2, unique=True))]
    text = "\n".join(lines) + "\n"
    if kind == "pyproject.toml":
        text = "[tool.wiki]\n" + text.replace("[rules.", "[tool.wiki.rules.")
    return kind, text


BASELINES = st.sampled_from([None] * 6 + [
    "[" * 100_000 + "]" * 100_000, '{"entries": [{"path": "a", "code": "WK001", "hash": "h", "count": 1e999}]}',
    '{"entries": [{"path": "wiki/notes/n.md", "code": "LNK001", "hash": "0", "count": 1}]}', '{"entries": 3}', "nope",
    '{"entries": [{"path": "a", "code": "WK001", "hash": "h", "count": ' + BIG + "}]}",
])
REVISIONS = ["HEAD", "--output=../outside/leak", "-p", "HEAD~99", "", "HEAD\n", "--end-of-options", "@{-1}"]


@st.composite
def commands(draw) -> list[str]:
    which = draw(st.sampled_from(["lint", "lint", "lint", "resolve", "step"]))
    if which == "step":
        return ["step", "--dry-run", "--json"]
    if which == "resolve":
        target = draw(st.sampled_from([["gemma4", "tpu"], ["gemma4"], ["--run", "r"], ["--kernel", "../x"],
                                       ["../outside"], [LANE], ["--list", "--json"], ["CON"]]))
        # (no NUL: execve cannot pass one in an argument, so no command line can hold it)
        marker = draw(st.sampled_from([[], [], ["--additive-marker", draw(st.sampled_from(REGEXES))]]))
        return ["resolve", *target, *marker, *draw(st.sampled_from([[], ["--json"], ["--audit"]]))]
    flags = draw(st.lists(st.sampled_from([
        ["--no-cache"], ["--format", "json"], ["--format", "sarif"], ["--statistics"], ["--fix"], ["--write-baseline"],
        ["--no-baseline"], ["--changed"], ["--select", draw(st.sampled_from(["EXP", "exp", "FOO", "", "WK,,LNK"]))],
        ["--ignore", "lnk"], [f"--since={draw(st.sampled_from(REVISIONS))}"], ["--jobs", "1"], [], [],
        [draw(st.sampled_from(["../outside/secret.md", "wiki", "wiki/notes/n.md", "/etc/passwd", "wiki/x.md"]))],
    ]), max_size=4))
    return ["lint", *[part for flag in flags for part in flag]]


# A run config for `wiki step --dry-run`: valid, then hostile values mixed in.
RUN_CONFIG = {
    "preset": "tiny", "max_steps": 24, "save_steps": 4, "session_steps": 8, "samples_per_step": 8, "seq_len": 64,
    "tokens_per_step": 512, "dataset_files_sha": "53df4708526da5c8", "shuffle_perm_sha": "c6f617b96f502d96",
    "session_timeout_s": 600, "store": {"kind": "local-git", "path": "store"},
    "compute": {"kind": "local-process", "accelerator": "cpu", "slug_prefix": "r-session"},
    "quota": {"session_hours": 1.0, "reserve_hours": 0.5}, "relay": {"check_every_s": 60},
}
RUN_CHANGES = st.dictionaries(st.sampled_from([
    "store.path", "compute.state_dir", "compute.claims_file", "compute.owner", "compute.slug_prefix", "publish.dir",
    "max_steps", "tokens_per_step", "quota.session_hours", "store.kind", "compute.kind",
]), st.sampled_from(["../outside", "../../x", "/tmp", "wiki", "store", ".wiki/ok", BIG, -1, 0, 1e999, True, None, "x"]),
    max_size=3)

CASE = st.fixed_dictionaries({
    "pages": st.dictionaries(st.sampled_from(PAGE_PATHS), TEXT, max_size=6),
    "specials": st.lists(st.tuples(SPECIALS, st.sampled_from(PAGE_PATHS[3:] + ["wiki/z.md", "wiki/sub"])), max_size=3),
    "config": configurations(),
    "baseline": BASELINES,
    "git": st.booleans(),
    "command": commands(),
    "run": RUN_CHANGES,
})


def build(sandbox: Path, case: dict) -> Path:
    """The case's repository inside ``sandbox`` (beside an outside/ it must never touch)."""
    outside = sandbox / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntitle: [OUTSIDE-TEXT\n---\nOUTSIDE-TEXT\n")
    root = sandbox / "repo"
    (root / "wiki").mkdir(parents=True)
    for rel, text in case["pages"].items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
    for special, rel in case["specials"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(path):
            continue
        if special == "fifo":
            os.mkfifo(path)
        elif special == "outside-link":
            os.symlink(outside / "secret.md", path)
        elif special == "dev-zero":
            os.symlink("/dev/zero", path)
        elif special == "dangling":
            os.symlink(root / "nowhere.md", path)
        elif special == "loop":
            os.symlink(path, path)
        elif special == "dir-page":
            path.mkdir()
        elif special == "bad-name":
            (path.parent / os.fsdecode(b"bad\xff.md")).write_text("# bad\n")
        elif special == "outside-dir":
            os.symlink(outside, path)
        elif special == "unreadable":
            path.write_text("# locked\n")
            path.chmod(0)
    if case["config"]:
        name, text = case["config"]
        (root / name).write_text(text)
    if case["baseline"] is not None:
        (root / ".wiki-lint-baseline.json").write_text(case["baseline"])
    if case["command"][0] == "step":
        scaffold_run(root, case["run"])
    if case["git"]:
        for args in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "--allow-empty", "-m", "fuzz"]):
            subprocess.run(["git", "-c", "user.name=f", "-c", "user.email=f@f.invalid", *args], cwd=root,
                           capture_output=True, timeout=60)
    return root


def scaffold_run(root: Path, changes: dict) -> None:
    """wiki/runs/r with the run config (hostile changes applied), memory for it, a real store."""
    import datetime as dt

    import yaml

    from wikiengine.executors.local_store import LocalGitStore
    from wikiengine.model import memory

    config = json.loads(json.dumps(RUN_CONFIG))
    for dotted, value in changes.items():
        *sections, key = dotted.split(".")
        block = config
        for section in sections:
            block = block.setdefault(section, {})
        block[key] = value
    text = yaml.safe_dump(config, sort_keys=False).replace("'" + BIG + "'", BIG)
    (root / "wiki" / "runs" / "r").mkdir(parents=True, exist_ok=True)
    for rel, body in (("wiki/runs/program.md", "# runs\n\n## Session grid\n\nOn the grid.\n"),
                      ("wiki/runs/r/program.md", f"# r\n\n## Config\n\n```yaml\n{text}```\n")):
        path = root / rel
        if not os.path.lexists(path) or (path.is_file() and not path.is_symlink()):
            path.write_text(body)  # a special there (a folder, a link, a FIFO) stays what the case made it
    if not os.path.lexists(root / "memory" / "STATE.md"):
        memory.scaffold(root, "r", dt.datetime(2026, 9, 21, 3, tzinfo=dt.UTC))
    LocalGitStore.create(root / "store")


def snapshot(sandbox: Path) -> dict[str, tuple]:
    """Every path in the sandbox outside repo/, with its size and mtime."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(sandbox):
        if Path(dirpath) == sandbox:
            dirnames[:] = [d for d in dirnames if d != "repo"]
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st_ = path.lstat()
            found[path.relative_to(sandbox).as_posix()] = (st_.st_size, st_.st_mtime_ns)
    return found


def run_case(root: Path, argv: list[str], env: dict) -> tuple[int, str, float, float]:
    """(exit status, stderr, wall seconds, peak RSS MiB) of one ``wiki`` process, killed at the ceiling.

    The peak RSS is GNU time's report on its own child (``%M``): a process spawned
    straight from this one inherits this process's high-water mark (Linux carries
    ``maxrss`` across vfork and exec), which in a whole-suite run is hundreds of MiB of
    other tests' memory. ``prlimit`` sets the address-space ceiling and ``env -C`` the
    directory; the case runs in its own session so a timeout kills all of it.
    """
    err_path, rss_path = root.parent / "stderr.txt", root.parent / "rss.txt"
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDWR)
    try:
        gnu_time = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
        timer = [gnu_time, "-f", "%M", "-o", str(rss_path)] if gnu_time else []  # without it: wait4's figure
        command = [*timer, shutil.which("prlimit"), f"--as={ADDRESS_SPACE}", "--", shutil.which("env"), "-C", str(root),
                   sys.executable, "-m", "wikiengine", *argv]
        started = time.monotonic()
        pid = os.posix_spawn(command[0], command, env, setsid=True, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, err, 2)])
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() - started > CASE_SECONDS:
                os.killpg(pid, 9)
                done, status, usage = os.wait4(pid, 0)
                break
            time.sleep(0.01)
        wall = time.monotonic() - started
    finally:
        os.close(err)
        os.close(null)
    stderr = err_path.read_text(errors="replace")
    err_path.unlink()
    report = rss_path.read_text().strip().splitlines() if rss_path.exists() else []
    rss_path.unlink(missing_ok=True)
    peak_kib = int(report[-1]) if report and report[-1].isdigit() else usage.ru_maxrss
    code = os.waitstatus_to_exitcode(status)
    # GNU time prefixes a killed or failed child's report with a line of its own
    stderr = "\n".join(line for line in stderr.splitlines() if not line.startswith("Command "))
    return code, stderr, wall, peak_kib / 1024


@settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(case=CASE)
def test_row64_hostile_wikis_and_configurations_hold_every_promise(case):
    sandbox = Path(tempfile.mkdtemp(prefix="wiki-fuzz-"))
    try:
        root = build(sandbox, case)
        home, tmp = sandbox / "home", sandbox / "tmp"
        home.mkdir()
        tmp.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("WIKI_ROOT", "WIKI_TRACEBACK")}
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
        before = snapshot(sandbox)
        code, stderr, wall, peak = run_case(root, case["command"], env)
        FIGURES["cases"] += 1
        FIGURES["worst_wall_s"] = max(FIGURES["worst_wall_s"], round(wall, 2))
        FIGURES["worst_peak_rss_mib"] = max(FIGURES["worst_peak_rss_mib"], round(peak, 1))
        FIGURES["exit_codes"][str(code)] = FIGURES["exit_codes"].get(str(code), 0) + 1
        assert wall < CASE_SECONDS, f"{case['command']}: killed after {CASE_SECONDS} s"
        assert code in ((0, 2, ExitCode.BLOCKED) if case["command"][0] == "step" else (0, 1, 2)), \
            f"{case['command']}: exit {code}: {stderr[-500:]}"
        assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-500:]
        assert "OUTSIDE-TEXT" not in stderr
        assert peak < PEAK_RSS_MIB, f"{case['command']}: peak RSS {peak:.0f} MiB"
        after = snapshot(sandbox)
        written = {p for p in after.keys() - before.keys() if not p.startswith("home/.cache")}
        written |= {p for p in after.keys() & before.keys() if after[p] != before[p] and p not in ("tmp", "home")}
        # the per-user cache is the one place outside the repository: the lint cache's key, the
        # compiled schema validators, dataclass methods and regular expressions, kept YAML and TOML values,
        # schema wordings, lane pages' open words and mechanisms, the engine's digest (docs/wakes-and-writers.md),
        # nothing else
        key_dir = {p for p in after if p.startswith("home/.cache") and not USER_CACHE_FILE.fullmatch(p)} - {
            "home/.cache", "home/.cache/wikiengine", "home/.cache/wikiengine/cache.key", "home/.cache/wikiengine/validators",
            "home/.cache/wikiengine/dataclasses"}
        assert not written and not key_dir, f"{case['command']}: wrote outside the repository: {sorted(written | key_dir)}"
    finally:
        for path in sandbox.rglob("*"):
            if not path.is_symlink() and path.exists() and not path.is_dir():
                path.chmod(0o644)
        shutil.rmtree(sandbox, ignore_errors=True)
        figures = os.environ.get("WIKI_FUZZ_FIGURES")
        if figures:
            Path(figures).write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n")
