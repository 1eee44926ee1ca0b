"""Secrets never leave (RELIABILITY rows 46 and 47).

Canary values are planted in HF_TOKEN and KAGGLE_KEY, a full cycle runs through the real
clients against the loopback fakes (check, save, launch, status, log, quota, and the
error paths: faults, refusals, deadlines), and every output is searched for the exact
value, its URL-encoded forms and its base64 forms: files written, log records, captured
stdout/stderr, exception messages and tracebacks, the commits the run made, and the
attributes of the backend objects (what a traceback with locals would print).
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import textwrap
import traceback
import urllib.parse
from pathlib import Path

import pytest

from tests.fakes import fake_hub as fake_hub_module
from tests.fakes import fake_kaggle as fake_kaggle_module
from tests.fakes.fixtures import REPO_ID, RecordingSleep, fast_policy, kaggle_loopback_env, loopback_only  # noqa: F401
from wikiengine.executors.clean_room import CleanRoomError, clean_environment, run_clean
from wikiengine.executors.compute import ComputeError, LaunchRequest
from wikiengine.executors.hub_store import HubStore
from wikiengine.executors.kaggle_compute import KaggleCompute
from wikiengine.executors.store import StoreError

HF_CANARY = "hf_CanaryHubToken7Qx2Lm9Zp4Wv8Rt3"
KAGGLE_USER = "canaryowner"
KAGGLE_CANARY = "c4nary+kaggle/key=Zx81Qw"  # '+', '/' and '=' make its encoded forms differ

pytestmark = pytest.mark.usefixtures("loopback_only")


def forms(secret: str, user: str | None = None) -> set[str]:
    """The exact value, its URL encodings and base64 encodings (alone and as HTTP Basic user:key)."""
    out = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    raws = [secret.encode()] + ([f"{user}:{secret}".encode()] if user else [])
    for raw in raws:
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            out.add(encode(raw).decode().rstrip("="))
    return out


CANARY_FORMS = forms(HF_CANARY) | forms(KAGGLE_CANARY, KAGGLE_USER)


def leaks(text: str) -> list[str]:
    return sorted(form for form in CANARY_FORMS if form in text)


@pytest.fixture
def canary_env(tmp_path, monkeypatch):
    from huggingface_hub import close_session, constants

    home = tmp_path / "hf-home"
    home.mkdir()
    monkeypatch.setenv("HF_TOKEN", HF_CANARY)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    kaggle_loopback_env(monkeypatch, tmp_path, KAGGLE_USER, KAGGLE_CANARY)
    yield
    close_session()


def _walk_attributes(obj, seen=None, depth=0) -> list[str]:
    """repr() of an object and of its attributes, a few levels down (what locals-printing shows)."""
    seen = seen if seen is not None else set()
    if id(obj) in seen or depth > 3:
        return []
    seen.add(id(obj))
    out = [repr(obj)]
    for value in getattr(obj, "__dict__", {}).values():
        out += _walk_attributes(value, seen, depth + 1)
    return out


@pytest.mark.waits
def test_row46_canaries_reach_no_file_log_output_message_or_commit(canary_env, tmp_path, caplog, capfd, monkeypatch):
    caplog.set_level(logging.DEBUG)
    hub = fake_hub_module.FakeHub(required_token=HF_CANARY).start()
    kaggle = fake_kaggle_module.FakeKaggle(username=KAGGLE_USER, key=KAGGLE_CANARY).start()
    from kagglesdk import kaggle_env as sdk_env

    monkeypatch.setitem(sdk_env._env_to_endpoint, sdk_env.KaggleEnv.LOCAL, kaggle.url)
    messages: list[str] = []
    try:
        hub.create_repo(REPO_ID)
        store = HubStore(REPO_ID, endpoint=hub.url, cache_dir=tmp_path / "hub-cache",
                         policy=fast_policy(RecordingSleep()))
        compute = KaggleCompute(KAGGLE_USER, claims_path=tmp_path / "claims.json", policy=fast_policy(RecordingSleep()))

        # save checkpoint 4 through a lost commit answer, then a pinned check through a 429
        ckpt_dir = tmp_path / "out" / "checkpoint-4"
        ckpt_dir.mkdir(parents=True)
        (ckpt_dir / "cursor.json").write_text('{"step": 4}\n')
        hub.inject("commit", fake_hub_module.Fault("land_then_status", status=500))
        head = store.commit_pointer(4, store.commit_checkpoint(4, ckpt_dir, store.head()))
        hub.inject("refs", fake_hub_module.status_fault(429, retry_after=0))
        assert store.head() == head and store.read_pointer(head).step == 4
        assert hub.authenticated_requests > 0  # the token was used, from the environment only

        # store error paths: a 5xx storm, a stale parent, a missing file
        hub.inject("refs", *[fake_hub_module.status_fault(503)] * 10)
        for failing in (store.head, lambda: store.commit_pointer(5, "0" * 40),
                        lambda: store.read_file("nope.json", head)):
            with pytest.raises(StoreError) as err:
                failing()
            messages.append("".join(traceback.format_exception(err.value)))

        # launch, status, log, quota, and the refusals
        record = compute.launch(LaunchRequest(f"{KAGGLE_USER}/canary-session1", "print('hi')\n", 3600))
        while compute.status(record.ref).state.alive:
            pass
        compute.log_tail(record.ref)
        compute.exit_report(record.ref)
        compute.quota()
        for fault in (fake_kaggle_module.Fault("capacity"), fake_kaggle_module.Fault("empty_error"),
                      fake_kaggle_module.status_fault(401)):
            kaggle.inject("SaveKernel", fault)
            with pytest.raises(ComputeError) as err:
                compute.launch(LaunchRequest(f"{KAGGLE_USER}/canary-session2", "print('hi')\n", 3600))
            messages.append("".join(traceback.format_exception(err.value)))
        monkeypatch.setenv("KAGGLE_KEY", "not-the-key")  # a refused credential: the 401 message
        with pytest.raises(ComputeError) as err:
            compute.quota()
        messages.append(str(err.value))
        monkeypatch.setenv("KAGGLE_KEY", KAGGLE_CANARY)
        kaggle.inject("GetKernelSessionStatus", *[fake_kaggle_module.status_fault(500)] * 10)
        messages.append(repr(compute.status(record.ref)))
        objects = _walk_attributes(store) + _walk_attributes(compute)
        commits = [
            f"{c.title}\n{c.message}\n" + "\n".join(f"{p}\n{b.decode(errors='replace')}" for p, b in c.files.items())
            for c in hub.repo(REPO_ID).commits
        ]
    finally:
        hub.stop()
        kaggle.stop()

    files = {str(p): p.read_bytes().decode("latin-1")
             for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    out, err_out = capfd.readouterr()
    logs = [record.getMessage() for record in caplog.records]
    assert files and logs and messages and commits
    found = {
        "files": {path: leaks(text) for path, text in files.items() if leaks(text)},
        "logs": [line for line in logs if leaks(line)],
        "stdout/stderr": leaks(out + err_out),
        "messages": [m for m in messages if leaks(m)],
        "commits": [c for c in commits if leaks(c)],
        "objects": [o for o in objects if leaks(o)],
    }
    assert not any(found.values()), found


def test_row46_the_canary_search_itself_finds_a_planted_leak():
    assert leaks(f"Authorization: Basic {base64.b64encode(f'{KAGGLE_USER}:{KAGGLE_CANARY}'.encode()).decode()}")
    assert leaks(urllib.parse.quote(KAGGLE_CANARY, safe=""))
    assert leaks(f"token={HF_CANARY}")


CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    import huggingface_hub
    from huggingface_hub import HfApi, CommitOperationAdd, constants
    constants.HF_HUB_DISABLE_XET = True
    home = Path.home()
    reachable = [str(p) for p in (home / ".netrc", home / ".kaggle" / "kaggle.json",
                                  home / ".cache" / "huggingface" / "token") if p.exists()]
    api = HfApi(endpoint=os.environ["FAKE_HUB_URL"])
    refs = api.list_repo_refs("pub/model", repo_type="model")
    head = refs.branches[0].target_commit
    api.create_commit("pub/model", [CommitOperationAdd("README.md", b"# model\\n")], commit_message="publish",
                      parent_commit=head)
    print(json.dumps({"token": huggingface_hub.get_token(), "reachable": reachable, "env": dict(os.environ)}))
    """
)


def test_row47_clean_room_child_reaches_no_credential_and_still_publishes(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".kaggle").mkdir(parents=True)
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".netrc").write_text(f"machine huggingface.co login hf password {HF_CANARY}\n")
    (home / ".kaggle" / "kaggle.json").write_text(json.dumps({"username": KAGGLE_USER, "key": KAGGLE_CANARY}))
    (home / ".cache" / "huggingface" / "token").write_text(HF_CANARY)
    token_path = tmp_path / "token-file"
    token_path.write_text(HF_CANARY)
    for name, value in {
        "HOME": str(home), "HF_HOME": str(home / ".cache" / "huggingface"), "HF_TOKEN": HF_CANARY,
        "HUGGING_FACE_HUB_TOKEN": HF_CANARY, "HF_TOKEN_PATH": str(token_path), "KAGGLE_KEY": KAGGLE_CANARY,
        "KAGGLE_USERNAME": KAGGLE_USER, "KAGGLE_CONFIG_DIR": str(home / ".kaggle"),
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": HF_CANARY, "ACTIONS_ID_TOKEN_REQUEST_URL": "http://127.0.0.1:9/oidc",
    }.items():
        monkeypatch.setenv(name, value)
    hub = fake_hub_module.FakeHub().start()  # no token required: an anonymous publish must work
    try:
        hub.create_repo("pub/model", "model")
        result = run_clean([sys.executable, "-c", CHILD],
                           extra_env={"FAKE_HUB_URL": hub.url, "HF_HUB_DISABLE_TELEMETRY": "1"}, timeout_s=120)
    finally:
        hub.stop()
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["token"] is None and report["reachable"] == []
    assert not [name for name in report["env"] if name.startswith(("KAGGLE_", "ACTIONS_ID_TOKEN")) or "TOKEN" in name]
    assert not leaks(result.stdout + result.stderr)
    assert hub.authenticated_requests == 0
    assert [c.title for c in hub.repo("pub/model", "model").commits][-1] == "publish"


def test_row47_a_credential_passed_in_is_refused(tmp_path):
    with pytest.raises(CleanRoomError, match="HF_TOKEN"):
        run_clean([sys.executable, "-c", "pass"], extra_env={"HF_TOKEN": HF_CANARY})


def test_row47_preflight_refuses_when_a_token_is_still_reachable(tmp_path, monkeypatch):
    """If a credential survived the stripping (here: a sitecustomize that sets HF_TOKEN), nothing runs."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import os\nos.environ['HF_TOKEN'] = {HF_CANARY!r}\n")
    marker = tmp_path / "ran"
    monkeypatch.setenv("PYTHONPATH", str(site))
    with pytest.raises(CleanRoomError, match="get_token"):
        run_clean([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert not marker.exists()


def test_clean_environment_keeps_ordinary_variables():
    env = clean_environment({"PATH": "/bin", "LANG": "C", "MY_API_KEY": "x", "GH_TOKEN": "y"}, Path("/tmp/h"))
    assert env["PATH"] == "/bin" and env["LANG"] == "C" and env["HOME"] == "/tmp/h"
    assert "MY_API_KEY" not in env and "GH_TOKEN" not in env


def test_subprocess_module_is_the_only_runner():
    """The clean room runs children with an explicit environment, never the parent's (a static guard)."""
    source = Path(run_clean.__code__.co_filename).read_text()
    assert source.count("subprocess.run(") == 2 and source.count("env=env") == 2
    assert subprocess  # imported for the reader: the guard is about subprocess.run


def test_row46_a_wiki_step_leaves_no_canary_in_memory_commits_or_the_launched_script(canary_env, tmp_path, capfd,
                                                                                   caplog, monkeypatch):
    """A whole wake (check, book, launch, record, commit) with canary credentials, then a second
    wake; memory pages, the wiki's git history (every patch), runtime state and the script sent to
    Kaggle are searched."""
    import copy
    import subprocess as sp

    from test_relay_support import CONFIG, Clock, make_wiki

    from wikiengine.step.relay.wake import run_step

    caplog.set_level(logging.DEBUG)
    hub = fake_hub_module.FakeHub(required_token=HF_CANARY).start()
    kaggle = fake_kaggle_module.FakeKaggle(username=KAGGLE_USER, key=KAGGLE_CANARY).start()
    from kagglesdk import kaggle_env as sdk_env

    monkeypatch.setitem(sdk_env._env_to_endpoint, sdk_env.KaggleEnv.LOCAL, kaggle.url)
    try:
        hub.create_repo(REPO_ID)
        config = copy.deepcopy(CONFIG)
        config["session_timeout_s"] = 7200
        config["store"] = {"kind": "hub", "repo_id": REPO_ID, "endpoint": hub.url, "cache_dir": ".wiki/hub-cache",
                           "base_wait_s": 0.05}
        config["compute"] = {"kind": "kaggle", "owner": KAGGLE_USER, "slug_prefix": "canary-session",
                             "accelerator": "gpu", "base_wait_s": 0.05}
        root = tmp_path / "wiki-repo"
        root.mkdir()
        make_wiki(root, config)
        clock = Clock()
        kaggle.clock = clock
        kaggle.next_runs.append(fake_kaggle_module.Run(statuses=["RUNNING"]))
        assert run_step(root, clock=clock).decision == "launch"
        clock.advance(minutes=30)
        assert run_step(root, clock=clock).decision == "running"
        assert hub.authenticated_requests > 0
    finally:
        hub.stop()
        kaggle.stop()
    history = sp.run(["git", "log", "-p", "--all", "--format=%H %an %ae%n%B"], cwd=root, capture_output=True,
                     text=True, check=True).stdout
    objects = sp.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root, capture_output=True,
                     check=True).stdout.decode("latin-1")
    files = {str(p): p.read_bytes().decode("latin-1") for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}
    out, err = capfd.readouterr()
    found = {
        "files": [path for path, text in files.items() if leaks(text)],
        "git history": leaks(history),
        "git objects": leaks(objects),
        "launched script": [s["slug"] for s in kaggle.saves if leaks(json.dumps(s))],
        "output": leaks(out + err),
        "logs": [r.getMessage() for r in caplog.records if leaks(r.getMessage())],
    }
    assert any(p.endswith("STATE.md") for p in files) and "memory/" in history
    assert not any(found.values()), found
