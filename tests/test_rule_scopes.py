"""The rule scope table (``wikiengine/lint/scopes.py``): generated from the rule classes, and
a PATH run that imports only the rules it says can apply finds what a run of every rule finds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rule_fixtures import build, expected, setup_of
from wikiengine.lint import lint, registry, scopes
from wikiengine.lint.baseline import STALE_CODE
from wikiengine.lint.config import LintConfig
from wikiengine.lint.kinds import kind_of
from wikiengine.lint.registry import REGISTRY, rule_class
from wikiengine.lint.suppress import UNUSED_CODE

RUNNER_MADE = (UNUSED_CODE, STALE_CODE)  # the runner reports these, not a rule's check
CODES = sorted(REGISTRY)


def test_the_table_is_the_one_the_rule_classes_generate():
    assert scopes.SCOPES == {code: scopes.scope_of(rule_class(code)) for code in CODES}
    text = Path(scopes.__file__).read_text(encoding="utf-8")
    assert scopes.generated() in text, "run `python -m wikiengine.lint.scopes` to regenerate the table"


@pytest.mark.parametrize("code", [c for c in CODES if c not in RUNNER_MADE])
def test_every_fixture_finding_lands_on_a_kind_its_rule_applies_to(code):
    """A rule whose finding lands on a page of a kind it says it cannot apply to would be
    left out of a PATH run on that page, and its finding lost."""
    for line in expected(code):
        path = line.split(":", 1)[0]
        assert scopes.applies(scopes.SCOPES[code], {kind_of(path)}), f"{code} found {line}: kind {kind_of(path)}"


@pytest.mark.parametrize("code", [c for c in CODES if c not in RUNNER_MADE])
def test_a_path_run_on_the_found_pages_finds_what_every_rule_finds(tmp_path, monkeypatch, code):
    root = build(code, tmp_path / "wiki")
    paths = sorted({line.split(":", 1)[0] for line in expected(code)} & {
        p.relative_to(root).as_posix() for p in root.rglob("*.md")})
    if not paths:
        pytest.skip("every finding is on a deleted file")
    setup = setup_of(code)
    config = LintConfig(select=[code, *setup.get("select", [])])

    def found():
        result = lint(root, paths, config=config, base=setup.get("base"), use_cache=False)
        return sorted(f.render() for f in result.findings)

    scoped = found()
    monkeypatch.setattr(registry, "selected_rules", _every_rule)
    assert scoped == found()


def _every_rule(config, kinds=None):
    return [rule_class(code)() for code in registry.selected_codes(config)]


def test_a_suppression_of_a_rule_left_out_is_still_judged(tmp_path):
    """LOG001 cannot apply to an experiment page, so a PATH run on one does not import it;
    a suppression of LOG001 there silences nothing, in that run as in a whole-wiki run."""
    root = build("EXP001", tmp_path / "wiki")
    page = next(p for p in sorted(root.rglob("*.md")) if kind_of(p.relative_to(root).as_posix()) == "experiment")
    page.write_text(page.read_text(encoding="utf-8") + "\n<!-- wiki-lint: disable LOG001 -->\n", encoding="utf-8")
    rel = page.relative_to(root).as_posix()
    whole = [f.render() for f in lint(root, base=None, use_cache=False).findings if f.path == rel]
    path_run = [f.render() for f in lint(root, [rel], base=None, use_cache=False).findings]
    assert any(f"{UNUSED_CODE} unused suppression of LOG001" in f for f in path_run)
    assert path_run == whole


PROBE = """
import json, sys
from pathlib import Path
from wikiengine.lint import lint
from wikiengine.lint.config import load_config
from wikiengine.lint.registry import REGISTRY
root = Path(sys.argv[1])
config = load_config(root)
config.check_codes(sorted(REGISTRY))  # as `wiki lint` does
lint(root, [sys.argv[2]], config, base=None, use_cache=False)
print(json.dumps(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("wikiengine.lint.rules."))))
"""


def test_a_path_run_on_an_experiment_page_imports_no_memory_log_or_kernel_rule(tmp_path):
    """Nor the rules whose options the configuration sets: their tables are checked against
    the scope table."""
    root = build("EXP001", tmp_path / "wiki")
    (root / "wiki.toml").write_text('[rules.HYP004]\ndays = 30\n\n[rules.LOG003]\nsince = "2026-01-01"\n', encoding="utf-8")
    rel = next(p.relative_to(root).as_posix() for p in sorted(root.rglob("*.md"))
               if kind_of(p.relative_to(root).as_posix()) == "experiment")
    done = subprocess.run([sys.executable, "-c", PROBE, str(root), rel], capture_output=True, text=True, timeout=120)
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert "experiment_file_name" in imported
    left_out = [m for m in imported if m.startswith(("memory_", "log_entries", "kernel_", "model_page", "hypothesis_"))]
    assert left_out == []


def test_an_option_the_rule_does_not_take_is_refused_from_the_table(tmp_path):
    from wikiengine.core.errors import WikiError
    from wikiengine.lint.config import load_config

    (tmp_path / "wiki.toml").write_text("[rules.HYP004]\ndayz = 30\n", encoding="utf-8")
    with pytest.raises(WikiError, match="did you mean 'days'"):
        load_config(tmp_path).check_codes(CODES)


SEGMENTS = st.sampled_from([
    "wiki", "experiments", "kernel_experiments", "kernels", "models", "hypotheses", "retrospectives", "analyses",
    "m_autoresearch_optimization", "lane", "memory", ".env", "2026-01-02-retrospective.md", "2026-01-02-v001-a.md",
    "program.md", "log.md", "a.md", "STATE.md", "QUOTA.md", "2026-01-01-m-l-retrospective-2.md", "experiments.md",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(SEGMENTS, min_size=1, max_size=7).map("/".join))
def test_every_path_of_a_kind_holds_its_mark(rel):
    """``LintContext.pages(kind)`` classifies only the paths holding the kind's mark: every path
    kind_of gives a marked kind holds the mark, and every kind but "page" has one."""
    from wikiengine.lint.kinds import ALL_KINDS, KIND_MARKS

    assert set(KIND_MARKS) == set(ALL_KINDS) - {"page"}
    kind = kind_of.__wrapped__(rel)
    assert kind == "page" or KIND_MARKS[kind] in rel


def test_the_pages_of_a_kind_are_the_kind_index_s(tmp_path):
    """Found among the marked paths or through the whole kind index, the same pages."""
    from wikiengine.lint.context import LintContext
    from wikiengine.lint.kinds import ALL_KINDS

    files = sorted(["wiki/index.md", "wiki/log.md", "wiki/models/m-l.md", "wiki/hypotheses/h.md", "wiki/program.md",
                    "wiki/experiments/m_autoresearch_optimization/l/2026-01-02-v001-a.md",
                    "wiki/experiments/m_autoresearch_optimization/l/log.md", "wiki/analyses/2026-01-01-m-l-retrospective.md",
                    "wiki/retrospectives/r.md", "wiki/kernels/k.md", "memory/STATE.md", ".env/c.md", "wiki/my-program.md"])
    marked = LintContext(tmp_path, LintConfig(), files, files)
    indexed = LintContext(tmp_path, LintConfig(), files, files)
    indexed._kind_index()
    for kind in ALL_KINDS:
        assert marked._files_of(kind) == indexed._files_of(kind) == [rel for rel in files if kind_of(rel) == kind]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(SEGMENTS, min_size=1, max_size=5).map("/".join), max_size=40).map(lambda rels: sorted(set(rels))))
def test_the_kind_index_kept_as_runs_of_positions_gives_each_kinds_files_in_order(files):
    """The kind index is kept as runs of consecutive positions in the sorted file list; taken
    back, each kind's files are those kind_of gives, in the list's order."""
    import tempfile

    from wikiengine.lint.context import LintContext
    from wikiengine.lint.kinds import ALL_KINDS

    index = LintContext(Path(tempfile.gettempdir()), LintConfig(), files, files)._kind_index()
    for kind in ALL_KINDS:
        assert index.get(kind, []) == [rel for rel in files if kind_of(rel) == kind]
