"""USER_PREFIX, MODEL_NAME and workload names, as seed Step 2b and 2(c)(iv-v) derive them."""

from __future__ import annotations

import subprocess

import pytest

from wikiengine.core.errors import WikiError
from wikiengine.core.identity import (
    MAX_WORKLOAD_LEN,
    NAME_RE,
    check_workload_name,
    explicit_user_prefix,
    model_name,
    resolve_user_prefix,
    shorten_slug,
    workload_name,
)


@pytest.fixture
def no_git_identity(monkeypatch, tmp_path):
    """No git user.name anywhere: global and system config disabled, cwd outside any repo."""
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return tmp_path


def git_repo_with_user(path, name):
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "config", "user.name", name], check=True)
    return path


@pytest.mark.parametrize(
    "folder, expected",
    [
        ("gemma4_autoresearch_optimization", "gemma4"),
        ("llama3_8B_autoresearch_optimization", "llama3-8b"),  # the seed's example
        ("Qwen3_30B_A3B_autoresearch_optimization", "qwen3-30b-a3b"),
        ("llama3_8B", "llama3-8b"),
        ("deepseek_v3", "deepseek-v3"),
    ],
)
def test_model_name_from_folder(folder, expected):
    assert model_name(folder) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("# Model\n\nUSER_PREFIX = alekseyv\n", "alekseyv"),
        ("USER_PREFIX=bob\n", "bob"),
        ("- USER_PREFIX = `carol`\n", "carol"),
        ("> USER_PREFIX = 'dave'\n", "dave"),
        ('USER_PREFIX = "Erin"\n', "erin"),
        ("No explicit USER_PREFIX here: it comes from $USER.\n", None),
        ("nothing\n", None),
    ],
)
def test_explicit_user_prefix_line(text, expected):
    assert explicit_user_prefix(text) == expected


def test_chain_step1_program_line_wins_over_user_and_git(tmp_path):
    repo = git_repo_with_user(tmp_path / "r", "Aleksey Vlasenko")
    got = resolve_user_prefix("USER_PREFIX = demo\n", env={"USER": "alekseyv_google_com"}, cwd=repo)
    assert (got.value, got.source) == ("demo", "program")


@pytest.mark.parametrize(
    "user, expected",
    [("alekseyv_google_com", "alekseyv"), ("Alice", "alice"), ("BOB_X_Y", "bob"), ("carol-d", "carol-d")],
)
def test_chain_step2_user_before_first_underscore_lowercased(tmp_path, user, expected):
    repo = git_repo_with_user(tmp_path / "r", "Aleksey Vlasenko")
    got = resolve_user_prefix("# no prefix line\n", env={"USER": user}, cwd=repo)
    assert (got.value, got.source) == (expected, "$USER")


def test_chain_a_user_segment_that_cannot_be_a_name_falls_through_to_git(tmp_path):
    # The seed takes any non-empty segment; one that could not start a workload name
    # ([a-z][-a-z0-9]*) is skipped, and the printed source says where the prefix came from.
    repo = git_repo_with_user(tmp_path / "r", "Aleksey Vlasenko")
    for user in ("john.doe", "1bob", "_lead"):
        got = resolve_user_prefix(None, env={"USER": user}, cwd=repo)
        assert (got.value, got.source) == ("aleksey", "git user.name")


def test_chain_step3_git_first_name_lowercased(tmp_path):
    repo = git_repo_with_user(tmp_path / "r", "Aleksey Vlasenko")
    got = resolve_user_prefix(None, env={}, cwd=repo)
    assert (got.value, got.source) == ("aleksey", "git user.name")
    got = resolve_user_prefix("", env={"USER": ""}, cwd=repo)
    assert got.value == "aleksey"


def test_chain_step4_refuses_when_nothing_yields_a_prefix(no_git_identity):
    with pytest.raises(WikiError) as caught:
        resolve_user_prefix(None, env={}, cwd=no_git_identity)
    assert "cannot derive USER_PREFIX" in str(caught.value)
    assert "USER_PREFIX = <name>" in str(caught.value)


def test_an_invalid_explicit_prefix_is_refused_naming_the_program():
    with pytest.raises(WikiError) as caught:
        resolve_user_prefix("USER_PREFIX = 9lives\n", env={"USER": "alice"}, program_path="wiki/x/program.md")
    assert str(caught.value).startswith("wiki/x/program.md: USER_PREFIX '9lives'")


@pytest.mark.parametrize(
    "prefix, model, lane, vid, slug, retry, expected",
    [
        ("alekseyv", "gemma4", "jax", 7, "splash", "", "alekseyv-gemma4-jax-v007-splash"),
        ("demo", "llama3-8b", "tpu", 123, "remat-policy", "b", "demo-llama3-8b-tpu-v123-remat-policy-b"),
        ("demo", "gemma4", "tpu", 1, "Splash_Attention fusion!", "", "demo-gemma4-tpu-v001-splash-attn-fus"),
        ("demo", "ds-v3", "tpu", 1042, "deepseek-sparsecore-host-offload", "", "demo-ds-v3-tpu-v1042-ds-sc-ho"),
    ],
)
def test_workload_name_examples(prefix, model, lane, vid, slug, retry, expected):
    name = workload_name(prefix, model, lane, vid, slug, retry)
    assert name == expected
    assert len(name) < MAX_WORKLOAD_LEN and NAME_RE.fullmatch(name)
    assert check_workload_name(name, prefix, model, lane, vid) is None


def test_a_long_slug_is_shortened_never_the_required_parts():
    name = workload_name("alekseyv", "gemma4", "jax", 204, "selective-attention-tensor-parallel-megablox-sweep")
    assert name.startswith("alekseyv-gemma4-jax-v204-") and len(name) < MAX_WORKLOAD_LEN
    assert not name.endswith("-")
    with pytest.raises(WikiError, match="leaves no room"):
        workload_name("averyveryverylongprefix", "averylongmodelname", "lane", 1, "x")


def test_shorten_slug_uses_the_seed_abbreviations():
    assert shorten_slug("deepseek-sparsecore-attention-fusion") == "ds-sc-attn-fus"
    assert shorten_slug("expert-parallel-megablox-selective") == "ep-mblx-sel"


@pytest.mark.parametrize(
    "name, why",
    [
        ("demo-gemma4-tpu-v007-a-very-long-slug-name-x", "characters"),
        ("Demo-gemma4-tpu-v007-x", "does not match"),
        ("bob-gemma4-tpu-v007-x", "does not start with demo-gemma4-tpu-v"),
        ("demo-gemma4-jax-v007-x", "does not start with demo-gemma4-tpu-v"),
        ("demo-gemma4-tpu-vx-x", "no v<NNN>-<slug>"),
        ("demo-gemma4-tpu-v008-x", "names v008 but the page is v007"),
    ],
)
def test_check_workload_name_says_why(name, why):
    assert why in check_workload_name(name, "demo", "gemma4", "tpu", 7)
