"""`wiki exp new --knob KEY=VALUE` and `--knobs FILE` (issue 25), and RELIABILITY row 105: a
yaml block the run would never get (outside ## Setup, or a second one in it) is refused at
`exp new` naming its line, instead of a run that measures the frontier while its page claims
the change. Driven through real `wiki` processes on a git copy of the example wiki."""

from __future__ import annotations

import json

from tests.test_knobs import exp_new, knob_proposal, refused
from tests.test_lane_writers import LANE_DIR, clean, git, proposal, wiki, wiki_cmd  # noqa: F401 - fixtures
from wikiengine.core.page import parse_page
from wikiengine.model.knobs import parse_knobs
from wikiengine.step.lane.wake import setup_config


def _stub_knobs(root, result) -> dict:
    assert result.returncode == 0, result.stderr
    page = json.loads(result.stdout)["page"]
    text = (root / page).read_text()
    return setup_config(text, page)


def test_knob_options_become_the_stub_s_setup_yaml(wiki, tmp_path):
    knobs = tmp_path / "knobs.json"
    knobs.write_text('{"block_q": 512, "remat": "dots", "micro_batch": null}')
    result = exp_new(wiki, "splash-qb", proposal(wiki, "a"), 1, "--knobs", str(knobs), "--knob", "block_q=1024",
                     "--knob", "fused=true", "--knob", "dtype=bfloat16")
    assert _stub_knobs(wiki, result) == {"block_q": 1024, "remat": "dots", "micro_batch": None, "fused": True,
                                         "dtype": "bfloat16"}
    page = json.loads(result.stdout)["page"]
    setup = parse_page((wiki / page).read_text(), page).section("Setup").body
    assert "Same as v046 with block_q=1024." in setup  # the proposal's prose stays, the knobs follow it
    # the same knob set from a yaml file is the same change: refused while in flight
    same = tmp_path / "same.yaml"
    same.write_text("dtype: bfloat16\nfused: true\nblock_q: 1024\nremat: dots\nmicro_batch:\n")
    again = exp_new(wiki, "splash-again", proposal(wiki, "b"), 2, "--knobs", str(same))
    assert refused(again, "same knobs", "in flight on track 1"), again.stderr


def test_knob_options_are_validated_and_bad_ones_write_nothing(wiki, tmp_path):
    program = wiki / LANE_DIR / "program.md"
    program.write_text(program.read_text().replace("parallelism: 2\n", "parallelism: 2\nknobs:\n"
                                                   "  block_q: {type: integer, choices: [256, 512, 1024]}\n"))
    git(wiki, "commit", "-qam", "declare the lane's knobs")
    head = git(wiki, "rev-parse", "HEAD")
    listed = tmp_path / "list.yaml"
    listed.write_text("- block_q\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("block_q: 512\nremat: dots: full\n")
    with_block, _ = knob_proposal(wiki, "k", "```yaml\nblock_q: 512\n```\n")
    cases = [
        (("--knob", "block_q=2048"), ("--knob:", "knob 'block_q': 2048 is not one of [256, 512, 1024]")),
        (("--knob", "remat=dots"), ("knob 'remat': unknown knob",)),
        (("--knob", "block_q"), ("--knob 'block_q' is not KEY=VALUE",)),
        (("--knob", "block_q=[1, 2]"), ("put structured knobs in --knobs FILE",)),
        (("--knobs", str(listed)), (f"{listed}:1:", "not a mapping")),
        (("--knobs", str(broken)), (f"{broken}:2:", "invalid YAML")),
        (("--knobs", str(tmp_path / "none.yaml")), ("no such knobs file",)),
    ]
    for extra, words in cases:
        result = exp_new(wiki, "splash-qb", proposal(wiki, "a"), 1, *extra)
        assert refused(result, *words), (extra, result.stderr)
    result = exp_new(wiki, "splash-qb", with_block, 1, "--knob", "block_q=256")
    assert refused(result, str(with_block), "give the knobs one way"), result.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


def test_row105_a_yaml_block_the_run_would_never_get_is_refused_naming_its_line(wiki):
    head = git(wiki, "rev-parse", "HEAD")
    path = proposal(wiki, "a")
    text = path.read_text()
    outside = text.replace("## Setup\n", "## Knobs\n\n```yaml\nblock_q: 1024\n```\n\n## Setup\n")
    path.write_text(outside)
    line = outside.splitlines().index("```yaml") + 1
    result = exp_new(wiki, "splash-qb", path)
    assert refused(result, f"{path}:{line}:", "never the run's config", "--knob"), result.stderr
    preamble = "```yaml\nblock_q: 1024\n```\n\n" + text
    path.write_text(preamble)
    assert refused(exp_new(wiki, "splash-qb", path), f"{path}:1:")
    second = text + "\n```yaml\nremat: dots\n```\n\nand also\n\n```yml\nblock_q: 1024\n```\n"
    path.write_text(second)
    line = second.splitlines().index("```yml") + 1
    assert refused(exp_new(wiki, "splash-qb", path), f"{path}:{line}:")
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)
    # a block in the Setup, followed by prose and other fences that are not yaml, is the config
    path.write_text(text + "\n```yaml\nremat: dots\n```\n\n```bash\nmake bench\n```\n")
    assert _stub_knobs(wiki, exp_new(wiki, "splash-qb", path)) == {"remat": "dots"}
    assert parse_knobs(parse_page(path.read_text()), path).values == {"remat": "dots"}
