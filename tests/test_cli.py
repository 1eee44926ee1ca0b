"""The `wiki` shell: help on every subcommand, one line and the right exit status on errors."""

import subprocess
import sys

import pytest

from wikiengine._cli import _verbs
from wikiengine._cli import main as cli
from wikiengine.core.errors import ExitCode, WikiError


def run_wiki(*args, **env):
    import os

    return subprocess.run(
        [sys.executable, "-m", "wikiengine", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_version_and_help():
    out = run_wiki("--version")
    assert out.returncode == 0 and out.stdout.startswith("wiki ")
    out = run_wiki("--help")
    assert out.returncode == 0
    for name in cli.COMMANDS:
        assert name in out.stdout


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_subcommand_has_help(name):
    out = run_wiki(name, "--help")
    assert out.returncode == 0, out.stderr
    assert f"usage: wiki {name}" in out.stdout


@pytest.mark.parametrize("columns", ["50", "130", "", "x"])
def test_help_is_as_wide_as_argparse_makes_it(monkeypatch, capsys, columns):
    """The help formatter takes its width as argparse does (shutil.get_terminal_size: COLUMNS
    first, else the terminal, else 80), without importing shutil: the same help either way."""
    import argparse

    monkeypatch.setenv("COLUMNS", columns)
    helps = []
    for formatter in (_verbs.WikiParser._get_formatter, argparse.ArgumentParser._get_formatter):
        monkeypatch.setattr(_verbs.WikiParser, "_get_formatter", formatter)
        _verbs._help_width.cache_clear()
        with pytest.raises(SystemExit):
            cli.run(["exp", "new", "--help"])
        helps.append(capsys.readouterr().out)
    _verbs._help_width.cache_clear()
    assert helps[0] == helps[1] and "--proposal" in helps[0]
    assert (max(map(len, helps[0].splitlines())) < 60) == (columns == "50")


@pytest.mark.parametrize("command,collected", [("exp", False), ("log", False), ("lint", True), ("step", True)])
def test_a_writer_process_runs_without_the_cycle_collector(command, collected):
    """`wiki exp` and `wiki log` (one bounded write, then the process ends) turn the cycle
    collector off; other commands, and every command run in-process, keep it."""
    script = ("import gc, sys\nfrom wikiengine._cli.main import main\nsys.argv = ['wiki', sys.argv[1], '--help']\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\nprint(gc.isenabled(), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, command], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == str(collected)
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    import gc

    assert gc.isenabled()


def test_no_command_prints_help_and_exits_2():
    out = run_wiki()
    assert out.returncode == 2
    assert "usage: wiki" in out.stdout


def _resolve_runs(monkeypatch, handler):
    from wikiengine._cli import resolve

    monkeypatch.setattr(resolve, "run", handler)


def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys):
    def handler(args):
        raise WikiError("no such thing", "wiki/x.md", 3)

    _resolve_runs(monkeypatch, handler)
    assert cli.main(["resolve"]) == 2
    err = capsys.readouterr().err
    assert err == "error: wiki/x.md:3: no such thing\n"


def test_a_bug_is_one_line_and_exit_70_unless_a_traceback_is_asked_for(monkeypatch, capsys):
    def handler(args):
        raise RuntimeError("boom")

    _resolve_runs(monkeypatch, handler)
    monkeypatch.delenv("WIKI_TRACEBACK", raising=False)
    assert cli.main(["resolve"]) == ExitCode.INTERNAL == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RuntimeError: boom" in err and "Traceback" not in err
    monkeypatch.setenv("WIKI_TRACEBACK", "1")
    with pytest.raises(RuntimeError):
        cli.main(["resolve"])


def test_lint_imports_no_heavy_client_library():
    # DESIGN: wiki lint runs in pre-commit; it must not import the executors' client libraries.
    from pathlib import Path

    code = (
        "import sys\n"
        "from wikiengine._cli.main import main\n"
        "status = main(['lint', '--no-cache'])\n"
        "heavy = {'torch', 'huggingface_hub', 'kaggle', 'kagglesdk', 'kubernetes', 'git', 'safetensors', 'numpy'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}), file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.strip() == "[]"
