"""The benchmark corpus generator: deterministic, and every page it writes is a valid page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint_support import gen_wiki
from wikiengine.core import schemas
from wikiengine.core.errors import WikiError
from wikiengine.core.page import load_page
from wikiengine.core.yamlio import key_lines

REPO = Path(__file__).resolve().parent.parent
REQUIRED = ["Hypothesis under test", "Setup", "Results", "Profile", "HLO Dump", "Verdict"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    broken = gen_wiki().generate(out, 200, seed=11, broken_fraction=0.1)
    return out, {p for p, _ in broken}


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_arguments_give_the_same_bytes(corpus, tmp_path):
    out, _ = corpus
    gen_wiki().generate(tmp_path, 200, seed=11, broken_fraction=0.1)
    assert _tree(tmp_path) == _tree(out)


def test_every_sound_page_is_valid_and_round_trips(corpus):
    out, broken = corpus
    pages = sorted(out.glob("wiki/experiments/*/*/experiments/*.md"))
    assert len(pages) == 200 and len(broken) == 20
    sizes, statuses = [], set()
    for path in pages:
        page = load_page(path)
        assert page.to_bytes() == path.read_bytes()
        if path in broken:
            continue
        sizes.append(len(path.read_bytes()))
        assert 14 <= len(page.frontmatter) <= 17, path
        schemas.check(page.frontmatter, "experiment", path, key_lines(page.frontmatter_text, 2))
        titles = [s.title for s in page.sections]
        assert all(title in titles for title in REQUIRED), (path, titles)
        statuses.add(page.frontmatter["status"])
        if page.frontmatter["status"] != "in_progress":
            for title in ("Profile", "HLO Dump", "Verdict"):
                assert not page.section(title).is_empty(), (path, title)
        hypothesis = page.section("Hypothesis under test").body
        for label in ("**Hypothesis**", "**Mechanism**", "**Predicted signal**", "**Falsification criterion**"):
            assert label in hypothesis
    assert 3000 <= min(sizes) and max(sizes) <= 6200
    assert {"supported", "refuted"} <= statuses


def test_broken_pages_are_broken(corpus):
    out, broken = corpus
    defects = dict(line.split("\t") for line in (out / "broken.tsv").read_text().splitlines())
    assert {out / p for p in defects} == broken
    for path in broken:
        page = load_page(path)
        defect = defects[path.relative_to(out).as_posix()]
        titles = [s.key for s in page.sections]
        if defect == "missing-section":
            assert "hlo dump" not in titles
        elif defect == "duplicate-section":
            assert len(titles) != len(set(titles))
        elif defect == "empty-profile":
            assert page.section("Profile").is_empty()
        else:  # missing-key, bad-status, bad-date: the frontmatter breaks its schema
            with pytest.raises(WikiError):
                schemas.check(page.frontmatter, "experiment", path)


def test_logs_are_newest_first_and_programs_resolve(corpus):
    out, _ = corpus
    from wikiengine.model.cascade import resolve
    from wikiengine.model.targets import target_for_model

    for log in [out / "wiki/log.md", *out.glob("wiki/experiments/*/*/log.md")]:
        dates = [line[4:14] for line in log.read_text().splitlines() if line.startswith("## [")]
        assert dates and dates == sorted(dates, reverse=True), log
    program = resolve(target_for_model(out, "gemma4", "tpu"))
    assert program.config["topology"] == "2x2x2"


def _lint_paths(root: Path) -> list:
    from wikiengine.lint.runner import lint

    return lint(root, base=None, use_cache=False, jobs=1).findings


def test_the_benchmark_corpus_is_lint_clean_and_its_broken_pages_are_exactly_what_lint_finds(tmp_path):
    """What benchmarks/README.md says of the generator: 1,000 sound pages give no finding;
    ``--broken-fraction 0.05 --seed 3`` gives findings on exactly the 50 listed pages."""
    sound = tmp_path / "sound"
    gen_wiki().generate(sound, 1000)
    assert [f.render() for f in _lint_paths(sound)] == []
    broken_root = tmp_path / "broken"
    broken = gen_wiki().generate(broken_root, 1000, seed=3, broken_fraction=0.05)
    found = {f.path for f in _lint_paths(broken_root)}
    assert len(broken) == 50 and found == {p.relative_to(broken_root).as_posix() for p, _ in broken}
