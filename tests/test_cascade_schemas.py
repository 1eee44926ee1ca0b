"""Row 43 (and row 42's "linter and runtime agree"): the shipped schemas judge documents
as JSON Schema draft 7 says, and the two validators the engine uses agree.

``wikiengine.core.schemas`` (jsonschema, detailed messages) serves `wiki resolve`; the lint hot
path uses compiled fastjsonschema validators. A document one accepts and the other refuses
would make lint and runtime disagree about the same config or frontmatter.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core import schemas
from wikiengine.core.errors import SchemaError


def fast_validator(name: str):
    """The lint hot path's validator when the lint package is present, else fastjsonschema itself."""
    try:
        from wikiengine.core.validators import compiled
    except ImportError:
        import fastjsonschema

        return fastjsonschema.compile(schemas.load_schema(name))
    return compiled(name)


def fast_ok(name: str, doc) -> bool:
    try:
        fast_validator(name)(doc)
    except ValueError:  # both fastjsonschema's and lint's exceptions are ValueErrors
        return False
    return True


RUN = {
    "preset": "tiny",
    "max_steps": 10,
    "save_steps": 5,
    "session_steps": 5,
    "samples_per_step": 4,
    "seq_len": 64,
    "tokens_per_step": 256,
    "store": {"kind": "local-git"},
    "compute": {"kind": "local-process"},
}

# (schema, document, valid, what the case is about) in the manner of JSON-Schema-Test-Suite
CASES = [
    ("program-config", {}, True, "empty config: nothing is required"),
    ("program-config", {"parallelism": 2}, True, "type integer"),
    ("program-config", {"parallelism": "all"}, True, "oneOf: the const"),
    ("program-config", {"parallelism": "2"}, False, "type: a numeric string is not an integer"),
    ("program-config", {"parallelism": True}, False, "type: a boolean is not an integer"),
    ("program-config", {"parallelism": 0}, False, "minimum"),
    ("program-config", {"parallelism": 2.0}, True, "draft 7: 2.0 is an integer"),
    ("program-config", {"wake_interval_s": 119}, False, "minimum 120"),
    ("program-config", {"wake_interval_s": 601}, False, "maximum 600"),
    ("program-config", {"topology": "2x2x2"}, True, "pattern"),
    ("program-config", {"topology": "2x2x2x2"}, False, "pattern: at most three dimensions"),
    ("program-config", {"topology": "2by2"}, False, "pattern"),
    ("program-config", {"tpu_type": "v5p-16"}, True, "pattern"),
    ("program-config", {"tpu_type": "V5P-16"}, False, "pattern is case-sensitive"),
    ("program-config", {"storage_root": "gs://b/x"}, True, "pattern anchored at the start"),
    ("program-config", {"storage_root": "s3://b"}, False, "pattern"),
    ("program-config", {"image": ""}, False, "minLength"),
    ("program-config", {"tpu_typo": "v5p-16"}, False, "additionalProperties false"),
    ("program-config", [], False, "type object"),
    ("run-config", RUN, True, "all required keys"),
    ("run-config", {k: v for k, v in RUN.items() if k != "max_steps"}, False, "required"),
    ("run-config", {**RUN, "max_steps": True}, False, "a boolean is not an integer"),
    ("run-config", {**RUN, "preset": "huge"}, False, "enum"),
    ("run-config", {**RUN, "store": {}}, False, "required in a nested object"),
    ("run-config", {**RUN, "store": {"kind": "hub", "repo_id": "a/b"}}, True, "nested additionalProperties allowed"),
    ("run-config", {**RUN, "dataset_files_sha": "53df4708526da5c8"}, True, "pattern: 16 hex"),
    ("run-config", {**RUN, "dataset_files_sha": "53DF4708526DA5C8"}, False, "pattern: lower-case hex only"),
    ("run-config", {**RUN, "learning_rate": 0}, False, "exclusiveMinimum"),
    ("run-config", {**RUN, "anything_else": 1}, True, "additionalProperties true"),
]


@pytest.mark.parametrize("name, doc, valid, about", CASES, ids=[f"{c[0]}:{c[3]}" for c in CASES])
def test_row43_schemas_judge_as_draft7_and_both_validators_agree(name, doc, valid, about):
    assert (not schemas.issues(doc, name)) is valid, about
    assert fast_ok(name, doc) is valid, about
    if not valid:
        with pytest.raises(SchemaError) as caught:
            schemas.check(doc, name, "cfg.md", {(): 4})
        assert str(caught.value).startswith("cfg.md:4: ") and f"[schema {name}]" in str(caught.value)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5000),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-10, max_value=1e4),
    st.sampled_from(
        ["", "all", "v5p-16", "2x2x2", "gs://b", "./x", "2026-01-01", "supported", "in_progress", "tiny", "hub",
         "kaggle", "local-git", "0123abcd0123abcd", "v045", "x" * 50]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["kind", "a", "mfu", "reserve_hours"]), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def documents(draw):
    name = draw(st.sampled_from(schemas.schema_names()))
    keys = list(schemas.load_schema(name).get("properties", {})) + ["extra"]
    chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys)))
    return name, {key: draw(values) for key in chosen}


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents())
def test_row42_the_lint_and_runtime_validators_agree_on_every_shipped_schema(named_doc):
    name, doc = named_doc
    fast = fast_ok(name, doc)
    # jsonschema itself, both ways (issues() asks it only of a document the fast path refuses)
    assert reference_validator(name).is_valid(doc) == fast, (name, doc)
    assert (not schemas.issues(doc, name)) == fast, (name, doc, schemas.issues(doc, name)[:1])


@functools.cache
def reference_validator(name: str):
    """jsonschema's validator of schema ``name``, as ``core/schemas.py`` makes it (formats unchecked)."""
    import jsonschema

    schema = schemas.load_schema(name)
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)(schema)
