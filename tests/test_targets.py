"""Targets: areas, inference from a directory, named targets and hostile names (row 44)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import WikiError
from wikiengine.model.targets import (
    check_name,
    find_root,
    infer_target,
    inside,
    list_lanes,
    list_models,
    safe_join,
    target_for_kernel,
    target_for_model,
    target_for_path,
    target_for_run,
)

M = "wiki/experiments/gemma4_autoresearch_optimization"


@pytest.fixture
def wiki_root(tmp_path):
    root = tmp_path / "repo"
    for rel in (
        "wiki/experiments/program.md",
        f"{M}/program.md",
        f"{M}/tpu/program.md",
        f"{M}/tpu/experiments/2026-01-01-v001-x.md",
        "wiki/experiments/llama3_8B_autoresearch_optimization/torchax/notes.md",
        "wiki/kernel_experiments/program.md",
        "wiki/kernel_experiments/flash_attention/pallas/program.md",
        "wiki/runs/program.md",
        "wiki/runs/r1/program.md",
    ):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("## S\nx\n", encoding="utf-8")
    return root


def names(target):
    return [(lv.name, lv.directory.name) for lv in target.levels]


def test_infer_from_any_directory_below_a_lane(wiki_root):
    target = infer_target(wiki_root, wiki_root / M / "tpu" / "experiments")
    assert target.model_dir == "gemma4_autoresearch_optimization" and target.lane == "tpu"
    assert [lv.name for lv in target.levels] == ["root", "model", "lane"]  # deeper dirs stay in the lane
    assert infer_target(wiki_root, wiki_root / M).lane is None
    assert infer_target(wiki_root, wiki_root / "wiki") is None
    kernel = infer_target(wiki_root, wiki_root / "wiki/kernel_experiments/flash_attention/pallas")
    assert names(kernel) == [("root", "kernel_experiments"), ("family", "flash_attention"), ("pallas", "pallas")]


def test_named_targets(wiki_root):
    assert names(target_for_model(wiki_root, "gemma4", "tpu"))[1:] == [
        ("model", "gemma4_autoresearch_optimization"),
        ("lane", "tpu"),
    ]
    assert target_for_model(wiki_root, "gemma4_autoresearch_optimization", None).lane is None
    assert names(target_for_kernel(wiki_root, "flash_attention"))[-1] == ("pallas", "pallas")
    assert names(target_for_run(wiki_root, "r1")) == [("root", "runs"), ("run", "r1")]
    assert target_for_path(wiki_root, wiki_root / M / "tpu" / "program.md").lane == "tpu"


def test_listing(wiki_root):
    assert list_models(wiki_root) == ["gemma4_autoresearch_optimization", "llama3_8B_autoresearch_optimization"]
    assert list_lanes(wiki_root, "gemma4_autoresearch_optimization") == ["tpu"]
    assert list_lanes(wiki_root, "llama3_8B_autoresearch_optimization") == []  # torchax has no program.md


def test_unknown_names_list_what_exists(wiki_root):
    with pytest.raises(WikiError, match=r"no model 'qwen3' .*models: gemma4, llama3_8B"):
        target_for_model(wiki_root, "qwen3", None)
    with pytest.raises(WikiError, match=r"no lane 'gpu' under model 'gemma4' \(lanes: tpu\)"):
        target_for_model(wiki_root, "gemma4", "gpu")


def test_find_root_walks_up_and_honours_wiki_root(wiki_root, monkeypatch):
    monkeypatch.delenv("WIKI_ROOT", raising=False)
    assert find_root(wiki_root / M / "tpu") == wiki_root.resolve()
    monkeypatch.setenv("WIKI_ROOT", str(wiki_root / "wiki"))
    with pytest.raises(WikiError, match="WIKI_ROOT has no wiki/"):
        find_root(wiki_root)


HOSTILE = [
    "..",
    "../..",
    "../../etc",
    "/etc",
    "/",
    ".",
    "",
    "tpu/../../..",
    "a/b",
    "a\\b",
    "x\x00y",
    "\x00",
    "tab\there",
    "CON",
    "con",
    "NUL.md",
    "com1",
    "LPT9.txt",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_row44_hostile_names_are_refused_for_every_kind_of_target(wiki_root, name):
    for call in (
        lambda: target_for_model(wiki_root, name, None),
        lambda: target_for_model(wiki_root, "gemma4", name),
        lambda: target_for_kernel(wiki_root, name),
        lambda: target_for_run(wiki_root, name),
    ):
        with pytest.raises(WikiError):
            call()


def test_row44_a_reserved_name_is_refused_even_when_the_directory_exists(wiki_root):
    (wiki_root / M / "CON").mkdir()
    (wiki_root / M / "CON" / "program.md").write_text("## S\n")
    with pytest.raises(WikiError, match="reserved on Windows"):
        target_for_model(wiki_root, "gemma4", "CON")


@pytest.mark.parametrize("variant", ["TPU", "Tpu", "tpu ", " tpu"])
def test_row44_case_and_space_variants_do_not_alias_a_lane(wiki_root, variant):
    with pytest.raises(WikiError):
        target_for_model(wiki_root, "gemma4", variant)


def test_row44_nfc_and_nfd_spellings_are_distinct_targets(wiki_root):
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    (wiki_root / "wiki/runs" / nfc).mkdir()
    assert target_for_run(wiki_root, nfc).directory.name == nfc
    with pytest.raises(WikiError, match="no run"):
        target_for_run(wiki_root, nfd)


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "outside"
    (secret / "pallas").mkdir(parents=True)
    (secret / "program.md").write_text("## Secret\nleak\n")
    (secret / "pallas" / "program.md").write_text("## Secret\nleak\n")
    return secret


def test_row44_symlinks_that_escape_the_root_are_refused(wiki_root, outside):
    os.symlink(outside, wiki_root / "wiki/kernel_experiments/evil")
    os.symlink(outside, wiki_root / "wiki/experiments/evil_autoresearch_optimization")
    os.symlink(outside, wiki_root / M / "escape")
    os.symlink(outside, wiki_root / "wiki/runs/away")
    for call in (
        lambda: target_for_kernel(wiki_root, "evil"),
        lambda: target_for_model(wiki_root, "evil", None),
        lambda: target_for_model(wiki_root, "gemma4", "escape"),
        lambda: target_for_run(wiki_root, "away"),
        lambda: target_for_path(wiki_root, wiki_root / "wiki/kernel_experiments/evil/pallas"),
        lambda: target_for_path(wiki_root, outside),
    ):
        with pytest.raises(WikiError, match="outside"):
            call()


def test_row44_a_symlink_inside_the_root_is_followed(wiki_root):
    os.symlink(wiki_root / M / "tpu", wiki_root / M / "tpu-alias")
    assert target_for_model(wiki_root, "gemma4", "tpu-alias").lane == "tpu-alias"


def test_safe_join_and_inside(tmp_path):
    base = tmp_path / "base"
    (base / "a").mkdir(parents=True)
    assert safe_join(base, "a", "b.md") == base / "a" / "b.md"
    for bad in ("..", "/etc", "a/../..", "x\x00"):
        with pytest.raises(WikiError):
            safe_join(base, bad)
    with pytest.raises(WikiError, match="resolves outside"):
        inside(base, base / ".." / "elsewhere")
    assert inside(base, base / "a" / ".." / "a") == (base / "a").resolve()


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(list("./\\\x00 \t~:aéCON") + ["..", "\u0301", "\uff0e", "r1"]), max_size=8).map("".join))
def test_row44_fuzz_names_resolve_inside_the_area_or_are_refused(tmp_path_factory, name):
    root = tmp_path_factory.mktemp("fz")
    (root / "wiki/runs/r1").mkdir(parents=True)
    try:
        check_name(name, "run")
    except WikiError:
        return
    assert "/" not in name and name not in ("", ".", "..")
    try:
        target = target_for_run(root, name)
    except WikiError:
        return
    assert target.directory.resolve().parent == (root / "wiki/runs").resolve()
    assert Path(name).name == name


def test_row44_a_symlink_loop_is_a_clear_error(wiki_root):
    os.symlink("loop", wiki_root / "wiki/kernel_experiments/loop")
    with pytest.raises(WikiError, match="cannot resolve"):
        target_for_kernel(wiki_root, "loop")
    with pytest.raises(WikiError):
        target_for_path(wiki_root, wiki_root / "wiki/kernel_experiments/loop")


def test_find_root_refuses_a_start_that_does_not_exist(wiki_root, monkeypatch):
    # `wiki step --root /typo` must not act on whichever parent happens to hold a wiki/.
    monkeypatch.delenv("WIKI_ROOT", raising=False)
    with pytest.raises(WikiError, match="no such directory"):
        find_root(wiki_root / "wiki" / "typo")
