"""The program cascade: laws of the fold, provenance, duplicates, config validation (row 43)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import CascadeError, SchemaError, WikiError
from wikiengine.core.page import parse_page
from wikiengine.model.cascade import Layer, fold, layer_of, resolve
from wikiengine.model.targets import target_for_kernel, target_for_model, target_for_run

ROOT = """# Root

## Inheritance model
Root inheritance text.
  Indented line kept exactly.   

## Setup
Root setup.

## Workload naming
Root naming.

## Gemma4-specific CAN additions
- root can

## Config

```yaml
parallelism: 1
wake_interval_s: 600
```
"""
MODEL = """## Setup
Model setup.

## Branching model
Model branching.

## Gemma4-specific CAN additions
- model can
"""
LANE = """## setup
Lane setup.

## Kernels available
splash.

## Gemma4-specific CAN additions
- lane can
"""


def write_wiki(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


EXP = "wiki/experiments"
M = f"{EXP}/gemma4_autoresearch_optimization"


@pytest.fixture
def three_levels(tmp_path):
    return write_wiki(tmp_path, {f"{EXP}/program.md": ROOT, f"{M}/program.md": MODEL, f"{M}/tpu/program.md": LANE})


def test_replace_per_section_append_and_additive(three_levels):
    program = resolve(target_for_model(three_levels, "gemma4", "tpu"))
    got = [(s.title, s.level, s.overrides, s.additive) for s in program.sections]
    assert got == [
        ("Inheritance model", "root", (), False),
        ("setup", "lane", ("root", "model"), False),  # titles compare case-insensitively
        ("Workload naming", "root", (), False),
        ("Gemma4-specific CAN additions", "root", (), True),
        ("Config", "root", (), False),
        ("Branching model", "model", (), False),
        ("Kernels available", "lane", (), False),
    ]
    can = program.section("gemma4-specific can additions")
    assert [c.level for c in can.contributors] == ["root", "model", "lane"]
    assert can.text == "## Gemma4-specific CAN additions\n- root can\n\n- model can\n- lane can\n"
    assert program.section("Setup").text == "## setup\nLane setup.\n\n"
    assert program.config == {"parallelism": 1, "wake_interval_s": 600}


def test_every_section_records_its_provenance(three_levels):
    program = resolve(target_for_model(three_levels, "gemma4", "tpu"))
    setup = program.section("Setup")
    assert setup.origin.path == three_levels / M / "tpu" / "program.md" and setup.origin.line == 1
    naming = program.section("Workload naming")
    assert naming.origin.path == three_levels / EXP / "program.md" and naming.origin.line == 10
    assert [lv for lv, _ in program.files] == ["root", "model", "lane"]
    assert program.audit_lines() == [
        "  Inheritance model              <- root (no model/lane override)",
        "  setup                          <- lane (overrides model + root)",
        "  Workload naming                <- root (no model/lane override)",
        "  Gemma4-specific CAN additions  <- root + model + lane (additive)",
        "  Config                         <- root (no model/lane override)",
        "  Branching model                <- model",
        "  Kernels available              <- lane",
    ]


def test_a_section_defined_only_at_root_keeps_its_text_byte_for_byte(three_levels):
    program = resolve(target_for_model(three_levels, "gemma4", "tpu"))
    root_page = parse_page(ROOT)
    for title in ("Inheritance model", "Workload naming", "Config"):
        assert program.section(title).text == root_page.section(title).text
        assert root_page.section(title).text in program.text()


def test_missing_levels_are_skipped(tmp_path):
    root = write_wiki(tmp_path, {f"{EXP}/program.md": ROOT, f"{M}/tpu/program.md": LANE})
    (root / M).mkdir(parents=True, exist_ok=True)
    program = resolve(target_for_model(root, "gemma4", "tpu"))
    assert [lv for lv, _ in program.files] == ["root", "lane"]
    assert program.section("Setup").overrides == ("root",)


def test_no_root_program_is_refused_clearly(tmp_path):
    root = write_wiki(tmp_path, {f"{M}/tpu/program.md": LANE})
    with pytest.raises(CascadeError) as caught:
        resolve(target_for_model(root, "gemma4", "tpu"))
    assert "no root program: wiki/experiments/program.md does not exist" in str(caught.value)


@pytest.mark.parametrize(
    "text, line, first",
    [
        ("## Setup\na\n## Other\n## Setup\nb\n", 4, 1),
        ("## Setup\na\n\n##   SETUP  \nb\n", 4, 1),  # same title after trimming and case folding
        ("intro\n\n## A\nx\n\nSetup\n-----\n## Setup ##\n", 8, 6),  # a setext and an ATX heading
    ],
)
def test_duplicate_titles_in_one_program_are_an_error(tmp_path, text, line, first):
    root = write_wiki(tmp_path, {f"{EXP}/program.md": ROOT, f"{M}/program.md": text})
    with pytest.raises(CascadeError) as caught:
        resolve(target_for_model(root, "gemma4", None))
    assert str(caught.value).startswith(f"{root / M / 'program.md'}:{line}: duplicate section")
    assert f"first on line {first}" in str(caught.value)


def test_kernel_and_run_areas_use_the_same_rule(tmp_path):
    root = write_wiki(
        tmp_path,
        {
            "wiki/kernel_experiments/program.md": "## Run target\nlocal\n## Loop\nK0-K9\n",
            "wiki/kernel_experiments/fa/pallas/program.md": "## Run target\npod\n",
            "wiki/runs/program.md": "## Checks\nall\n",
            "wiki/runs/r1/program.md": "## Checks\nsome\n",
        },
    )
    kernel = resolve(target_for_kernel(root, "fa"))
    assert [(s.title, s.level) for s in kernel.sections] == [("Run target", "pallas"), ("Loop", "root")]
    assert [lv for lv, _ in kernel.files] == ["root", "pallas"]  # no family-level program: skipped
    run = resolve(target_for_run(root, "r1"), validate=False)
    assert run.section("Checks").text == "## Checks\nsome\n" and run.section("Checks").overrides == ("root",)


# --- laws of the fold ----------------------------------------------------------------------

TITLES = ["Setup", "setup", "Goal", "Loop", "Config", "X-specific CAN additions", "x-specific  can additions", "Notes"]
BODIES = ["", "\n", "\ntext\n", "\na\n\nb\n", "\n- item\n", "\n```\n## code\n```\n", "\nno newline", "\r\ncrlf\r\n"]


@st.composite
def layers(draw, level: str):
    titles = draw(st.lists(st.sampled_from(TITLES), max_size=5, unique_by=lambda t: " ".join(t.split()).casefold()))
    preamble = draw(st.sampled_from(["", "\n", "# Title\n\n", "intro\n"]))
    text = preamble + "".join(f"## {t}" + draw(st.sampled_from(BODIES)) + "\n" for t in titles)
    if draw(st.booleans()):
        text = text.rstrip("\n")  # the last section may end without a newline
    return layer_of(parse_page(text, f"/w/{level}/program.md"), level)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers("root"))
def test_law_folding_with_an_empty_override_changes_nothing(layer):
    assert fold(layer, Layer()) == layer
    assert fold(Layer(), layer) == layer


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers("root"), layers("model"), layers("lane"))
def test_law_folding_is_associative(a, b, c):
    assert fold(fold(a, b), c) == fold(a, fold(b, c))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers("root"), layers("model"))
def test_law_a_section_only_at_root_keeps_its_text(a, b):
    folded = fold(a, b)
    b_keys = {s.key for s in b.sections}
    for section in a.sections:
        if section.key not in b_keys:
            assert next(s for s in folded.sections if s.key == section.key) == section


# --- the config block and its schema (row 43) ---------------------------------------------

LANE_CONFIG = """## Setup
Lane.

## Config

```yaml
parallelism: 2
tpu_type: v5p-16
topology: 2x2x2
wake_interval_s: 600
```
"""


def _with_config(tmp_path, yaml_text: str) -> Path:
    lane = LANE_CONFIG.replace("parallelism: 2\ntpu_type: v5p-16\ntopology: 2x2x2\nwake_interval_s: 600\n", yaml_text)
    return write_wiki(tmp_path, {f"{EXP}/program.md": ROOT, f"{M}/tpu/program.md": lane})


def test_config_is_taken_from_the_deepest_config_section(tmp_path):
    root = _with_config(tmp_path, "parallelism: 2\ntpu_type: v5p-16\ntopology: 2x2x2\nwake_interval_s: 600\n")
    program = resolve(target_for_model(root, "gemma4", "tpu"))
    assert program.config == {"parallelism": 2, "tpu_type": "v5p-16", "topology": "2x2x2", "wake_interval_s": 600}
    assert program.config_origin.level == "lane"


# yaml block lines: the block starts on file line 7 of the lane program
@pytest.mark.parametrize(
    "yaml_text, line, words",
    [
        ("parallelism: 2\nwake_interval_s: '600'\n", 8, "wake_interval_s: '600' is not of type 'integer'"),  # type
        ("parallelism: 2\ntopology: 2by2\n", 8, "topology: '2by2' does not match"),  # pattern
        ("parallelism: 2\ntpu_typo: v5p-16\n", 8, "tpu_typo"),  # additionalProperties
        ("parallelism: 0\n", 7, "parallelism"),  # oneOf: neither a positive integer nor 'all'
        ("wake_interval_s: 60\n", 7, "60 is less than the minimum of 120"),  # minimum
        ("parallelism: 1\nimage: no\n", 8, "image: False is not of type 'string'"),  # YAML 1.1 'no'
        ("parallelism: 1\nstorage_root: s3://b\n", 8, "storage_root"),
        ("zz: 1\n1: one\nnull: x\n", 7, "Additional properties are not allowed"),  # keys that are not strings
    ],
)
def test_row43_config_schema_errors_name_the_file_and_line_of_the_key(tmp_path, yaml_text, line, words):
    root = _with_config(tmp_path, yaml_text)
    with pytest.raises(SchemaError) as caught:
        resolve(target_for_model(root, "gemma4", "tpu"))
    message = str(caught.value)
    assert message.startswith(f"{M}/tpu/program.md:{line}: "), message
    assert words in message and "[schema program-config]" in message


def test_row43_required_keys_of_the_run_config(tmp_path):
    config = "preset: tiny\nmax_steps: 10\n"
    root = write_wiki(
        tmp_path,
        {"wiki/runs/program.md": "## Checks\nall\n", "wiki/runs/r1/program.md": f"## Config\n\n```yaml\n{config}```\n"},
    )
    with pytest.raises(SchemaError) as caught:
        resolve(target_for_run(root, "r1"))
    assert str(caught.value).startswith("wiki/runs/r1/program.md:4: (top level): 'save_steps' is a required property")


def test_row43_a_nested_key_is_reported_at_its_own_line(tmp_path):
    config = (REPO_RUN_CONFIG.replace("kind: hub", "kind: s3"))
    root = write_wiki(
        tmp_path,
        {"wiki/runs/program.md": "## Checks\nall\n", "wiki/runs/r1/program.md": f"## Config\n\n```yaml\n{config}```\n"},
    )
    with pytest.raises(SchemaError) as caught:
        resolve(target_for_run(root, "r1"))
    assert str(caught.value) == (
        "wiki/runs/r1/program.md:12: store/kind: 's3' is not one of ['local-git', 'hub'] [schema run-config]"
    )


REPO_RUN_CONFIG = """preset: ounce100m
max_steps: 3814
save_steps: 127
session_steps: 762
samples_per_step: 256
seq_len: 1024
tokens_per_step: 262144
store:
  kind: hub
compute:
  kind: kaggle
"""


@pytest.mark.parametrize(
    "yaml_text, line, words",
    [
        ("parallelism: !!python/object/apply:os.system [ls]\n", 7, "tags are not allowed"),
        ("a: &x 1\nb: *x\n", 7, "anchors and aliases"),
        ("parallelism: 1\nparallelism: 2\n", 8, "duplicate key 'parallelism'"),
        ("- 1\n", 7, "not a mapping"),
    ],
)
def test_row42_hostile_yaml_in_a_config_block_names_file_and_line(tmp_path, yaml_text, line, words):
    root = _with_config(tmp_path, yaml_text)
    with pytest.raises(WikiError) as caught:  # a PageError from the YAML, or a CascadeError
        resolve(target_for_model(root, "gemma4", "tpu"))
    assert f"program.md:{line}: " in str(caught.value) and words in str(caught.value)


def test_a_config_section_without_a_yaml_block_is_an_error(tmp_path):
    root = write_wiki(tmp_path, {f"{EXP}/program.md": ROOT, f"{M}/tpu/program.md": "## Config\nprose only\n"})
    with pytest.raises(CascadeError, match="has no fenced yaml block"):
        resolve(target_for_model(root, "gemma4", "tpu"))


@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf", "[1, .NaN]"])
def test_non_finite_numbers_in_a_config_are_refused_with_their_line(tmp_path, value):
    # jsonschema lets NaN through 'minimum' (every comparison with NaN is false), and JSON has no NaN.
    root = _with_config(tmp_path, f"parallelism: 1\nwake_interval_s: {value}\n")
    with pytest.raises(CascadeError) as caught:
        resolve(target_for_model(root, "gemma4", "tpu"))
    assert str(caught.value).startswith(f"{root / M / 'tpu/program.md'}:8: wake_interval_s")
    assert "is not a finite number" in str(caught.value)


config_pieces = st.sampled_from(
    ["parallelism", "tpu_type", "topology", "wake_interval_s", "image", "x", ": ", "\n", "  ", "- ", "[", "]", "{", "}",
     ",", "1", "600", "'s'", "2x2x2", "v5p-16", "2026-01-01", "no", "null", ".nan", "&a ", "*a", "!!set ", "? ", "#", "|"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(config_pieces, max_size=30).map("".join))
def test_row49_fuzz_config_blocks_resolve_or_raise_one_typed_error(tmp_path_factory, yaml_text):
    import json

    root = _with_config(tmp_path_factory.mktemp("cfg"), yaml_text.replace("```", "") + "\n")
    try:
        program = resolve(target_for_model(root, "gemma4", "tpu"))
    except WikiError as err:
        assert "\n" not in str(err) and ".md:" in str(err), str(err)
        return
    json.dumps(program.config, allow_nan=False)  # what validates is plain JSON data


_MARKER_GAP = st.sampled_from([" ", "  ", "\t", "\n", "\r", "\f", "\v", "\u00a0", "\u2003", "", " \t "])


def _cased(word: str):
    """``word`` with each letter in either case, now and then one a Unicode fold of it (\u017f for s)."""
    return st.lists(st.sampled_from([0, 1, 2]), min_size=len(word), max_size=len(word)).map(
        lambda picks: "".join("\u017f" if c == "s" and p == 2 else c.upper() if p else c for c, p in zip(word, picks)))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["Gemma4", "", "x ", "Gemma4 "]), _cased("-specific"), _MARKER_GAP, _cased("can"), _MARKER_GAP,
       _cased("additions"), st.sampled_from(["", "\n", " ", "s", "\n\n", ".", "\u00e9"]))
def test_the_default_additive_marker_matches_what_re2_matches(head, specific, gap1, can, gap2, additions, tail):
    """The default marker is read without RE2 on an ASCII title: it must match exactly the titles
    RE2 matches (its ``\\s``, its case folding, its ``$``), ASCII or not, stripped or not."""
    from wikiengine.core.patterns import user_regex
    from wikiengine.model.cascade import DEFAULT_ADDITIVE_MARKER, additive_marker_regex

    ours, re2 = additive_marker_regex(DEFAULT_ADDITIVE_MARKER), user_regex(DEFAULT_ADDITIVE_MARKER, "additive-marker")
    title = f"{head}{specific}{gap1}{can}{gap2}{additions}{tail}"
    for text in (title, title.strip()):
        assert bool(ours.search(text)) == bool(re2.search(text)), repr(text)


def test_resolving_a_program_with_the_default_marker_loads_no_re2(three_levels):
    import subprocess
    import sys

    code = ("import sys; from wikiengine.model.cascade import resolve; from wikiengine.model.targets import "
            "target_for_model; from pathlib import Path; "
            f"program = resolve(target_for_model(Path({str(three_levels)!r}), 'gemma4', 'tpu'), "
            "validate=False); print(sum(s.additive for s in program.sections), 're2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "False"]  # the additive section told, without RE2
