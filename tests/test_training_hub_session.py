"""Sessions against the loopback Hub: the real huggingface_hub client through HubStore.

The trainer's two commits, the pointer, the resume and the byte verification must work
unchanged on the Hub-backed store (named on the command line as a JSON store mapping).
"""

from __future__ import annotations

import json

import pytest

from tests.fakes.fixtures import REPO_ID, fake_hub, hub_env, hub_store, loopback_only, sleeps  # noqa: F401
from wikiengine.training import session
from wikiengine.training.checkpoint import read_cursor, read_verified_from_store
from wikiengine.training.demo import create_demo_run

pytestmark = pytest.mark.usefixtures("loopback_only")


from torch_threads import one_torch_thread  # noqa: E402,F401  (autouse: one torch thread)


@pytest.mark.waits
def test_sessions_relay_through_the_hub_store(tmp_path, fake_hub, hub_store, capsys):  # noqa: F811
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=4, save_steps=2)
    for expected in (4, 8):
        assert session.main(run.session_argv(), store=hub_store) == 0
        end = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-1]
        assert (end["end_step"], end["reason"]) == (expected, "boundary" if expected < 8 else "max_steps")
    head = hub_store.head()
    assert hub_store.read_pointer(head).step == 8
    titles = [c.title for c in hub_store.list_commits(head)]
    assert titles[:5] == ["final 8", "latest -> 8", "checkpoint 8", "latest -> 6", "checkpoint 6"]
    files = read_verified_from_store(hub_store, 8, head)
    assert read_cursor(files["cursor.json"]).tokens_consumed == 8 * 8 * 64


def test_store_named_as_a_json_mapping_on_the_command_line(tmp_path, fake_hub, capsys):  # noqa: F811
    run = create_demo_run(tmp_path / "run", max_steps=2, session_steps=2, save_steps=2)
    spec = json.dumps({"kind": "hub", "repo_id": REPO_ID, "endpoint": fake_hub.url,
                       "cache_dir": str(tmp_path / "cache"), "deadline_s": 30})
    argv = ["--store", spec, "--config", str(run.config_path), "--out", str(run.out_dir), "--no-progress"]
    assert session.main(argv) == 0
    end = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-1]
    assert end["end_step"] == 2


@pytest.mark.parametrize("spec", ['{"kind": "nope"}', "{}", '{"kind": "hub", "kind": "hub"}'])
def test_bad_store_spec_is_bad_input(tmp_path, capsys, spec):
    run = create_demo_run(tmp_path / "run")
    argv = ["--store", spec, "--config", str(run.config_path), "--out", str(run.out_dir), "--no-progress"]
    assert session.main(argv) == 2
    assert capsys.readouterr().err.startswith("error: ")
