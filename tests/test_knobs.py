"""RELIABILITY row 72 (issue 21): knobs are data, checked at `wiki exp new`. The yaml block
of a proposal's Setup is parsed there (a YAML error is exit 2 with the proposal's
file:line), the same knob set under reworded prose is refused on a second track, knobs
filed refuted need --rerun-reason, and knobs a lane declares are validated. Driven through
real `wiki` processes on a git copy of the example wiki."""

from __future__ import annotations

import json

from tests.test_lane_writers import LANE_DIR, _file, clean, git, proposal, wiki, wiki_cmd  # noqa: F401 - fixtures
from wikiengine.core.page import parse_page
from wikiengine.model.knobs import canonical, parse_knobs
from wikiengine.step.lane.wake import setup_config

KNOBS = "```yaml\nblock_q: 1024\nremat: dots\n```\n"


def knob_proposal(root, tag, knobs=KNOBS, mechanism=None):
    """A proposal whose Setup carries ``knobs`` (its file, and the file line of the block's first knob)."""
    path = proposal(root, tag)
    text = path.read_text()
    if mechanism:
        start = text.index("**Mechanism**:")
        text = text[:start] + f"**Mechanism**: {mechanism}\n" + text[text.index("\n", start) + 1:]
    path.write_text(text + "\n" + knobs)
    return path, len(text.splitlines()) + 3


def exp_new(root, slug, path, track=1, *extra, variant="2B/v5p-16"):
    return wiki_cmd(root, "exp", "new", "gemma4", "tpu", "--slug", slug, "--variant", variant, "--proposal", str(path),
                    "--track", str(track), "--json", *extra, check=False)


def refused(result, *words) -> bool:
    """Exit 2, one line, naming every word."""
    lines = result.stderr.strip().splitlines()
    return result.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words)


def test_row72_reworded_mechanism_with_the_same_knobs_on_a_second_track_is_refused(wiki):
    first = json.loads(exp_new(wiki, "splash-qb", knob_proposal(wiki, "a")[0]).stdout)
    head = git(wiki, "rev-parse", "HEAD")
    reordered = "```yaml\nremat: dots\nblock_q: 1024\n```\n"
    path, _ = knob_proposal(wiki, "b", reordered, mechanism="raise the splash query block to 1024 rows (reworded).")
    result = exp_new(wiki, "splash-q1024", path, 2)
    assert refused(result, "same knobs", "in flight on track 1", first["page"]), result.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)
    other, _ = knob_proposal(wiki, "c", "```yaml\nblock_q: 512\nremat: dots\n```\n", mechanism="a smaller q block.")
    assert exp_new(wiki, "splash-q512", other, 2).returncode == 0  # another knob set is another change


def test_row72_a_yaml_error_is_exit_2_with_the_proposal_file_and_line(wiki):
    head = git(wiki, "rev-parse", "HEAD")
    path, line = knob_proposal(wiki, "a", "```yaml\nblock_q: 1024\nremat: dots: full\n```\n")
    result = exp_new(wiki, "splash-qb", path)
    assert refused(result, f"{path}:{line + 1}:", "invalid YAML"), result.stderr
    listed, line = knob_proposal(wiki, "b", "```yaml\n- block_q\n- remat\n```\n")
    assert refused(exp_new(wiki, "splash-qb", listed), f"{listed}:{line}:", "not a mapping")
    unclosed, line = knob_proposal(wiki, "c", "```yaml\nblock_q: 1024\n")
    assert refused(exp_new(wiki, "splash-qb", unclosed), f"{unclosed}:{line - 1}:", "closing fence")
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


def test_row72_knobs_filed_refuted_need_a_rerun_reason(wiki):
    first = json.loads(exp_new(wiki, "splash-qb", knob_proposal(wiki, "a")[0]).stdout)
    assert _file(wiki, first["vid"], "refuted", "38.0")["verdict"] == "refuted"
    again, _ = knob_proposal(wiki, "b", mechanism="the same blocks, said differently.")
    assert refused(exp_new(wiki, "splash-again", again, 2), "filed refuted on 2B/v5p-16", first["page"], "--rerun-reason")
    assert refused(exp_new(wiki, "splash-again", again, 2, "--rerun-reason", "  "), "--rerun-reason is empty")
    result = exp_new(wiki, "splash-again", again, 2, "--rerun-reason", "the new libtpu fixes the block-1024 spill")
    assert result.returncode == 0, result.stderr
    stub = json.loads(result.stdout)
    assert "rerun_reason: the new libtpu fixes the block-1024 spill" in (wiki / stub["page"]).read_text()
    claim = json.loads((wiki / LANE_DIR / ".journal.jsonl").read_text().splitlines()[-1])
    assert claim["op"] == "claim" and claim["rerun_reason"] == "the new libtpu fixes the block-1024 spill"


def test_row72_knobs_the_lane_declares_are_validated(wiki):
    program = wiki / LANE_DIR / "program.md"
    program.write_text(program.read_text().replace("parallelism: 2\n", "parallelism: 2\nknobs:\n"
                                                   "  block_q: {type: integer, choices: [256, 512, 1024]}\n"
                                                   "  remat: {type: string, choices: [none, dots, full]}\n"
                                                   "  lr: {type: number, minimum: 0, maximum: 0.1}\n"))
    git(wiki, "commit", "-qam", "declare the lane's knobs")
    head = git(wiki, "rev-parse", "HEAD")
    cases = {"unknown": ("block_k: 512", "knob 'block_k': unknown knob"),
             "type": ("block_q: '1024'", "knob 'block_q': '1024' is not of type 'integer'"),
             "choice": ("block_q: 2048", "knob 'block_q': 2048 is not one of [256, 512, 1024]"),
             "range": ("lr: 0.5", "knob 'lr': 0.5 is greater than the maximum of 0.1")}
    for tag, (knob, words) in cases.items():
        path, line = knob_proposal(wiki, tag, f"```yaml\nremat: dots\n{knob}\n```\n")
        result = exp_new(wiki, "splash-qb", path)
        assert refused(result, f"{path}:{line + 1}:", words), (tag, result.stderr)
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)
    good, _ = knob_proposal(wiki, "good", "```yaml\nblock_q: 512\nremat: full\nlr: 0.01\n```\n")
    assert exp_new(wiki, "splash-qb", good).returncode == 0
    program.write_text(program.read_text().replace("type: number,", "type: float,"))
    git(wiki, "commit", "-qam", "a knob of no known type")
    result = exp_new(wiki, "splash-q2", knob_proposal(wiki, "q2", "```yaml\nlr: 0.02\n```\n")[0])
    assert refused(result, "program.md:", "knobs/lr/type"), result.stderr


def test_row72_a_proposal_without_a_yaml_block_sets_no_knobs(wiki):
    assert exp_new(wiki, "splash-qb", proposal(wiki, "a")).returncode == 0
    assert exp_new(wiki, "splash-q2", proposal(wiki, "b"), 2).returncode == 0  # prose only: nothing to compare


def test_row72_one_parser_serves_the_stub_and_the_wake():
    text = "# v048\n\n## Setup\n\nProse.\n\n```yaml\nremat: dots\nblock_q: 1024\n```\n"
    knobs = parse_knobs(parse_page(text), "page.md")
    assert setup_config(text) == knobs.values == {"remat": "dots", "block_q": 1024}
    assert knobs.line("block_q") == 9 and canonical(knobs.values) == canonical({"block_q": 1024, "remat": "dots"})
    assert setup_config("# v048\n\n## Setup\n\nProse only.\n") == {}
