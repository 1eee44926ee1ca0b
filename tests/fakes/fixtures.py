"""Pytest fixtures that run the real Hub and Kaggle clients against the loopback fakes.

Import the fixtures you need into a test module (``from tests.fakes.fixtures import
fake_hub, hub_store``). Nothing here reaches the network: the clients are pointed at
``127.0.0.1`` servers, their homes and token files live in ``tmp_path``, and the
credentials are test values.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.fakes.fake_hub import FakeHub
from wikiengine.executors.http_policy import RetryPolicy

HF_TEST_TOKEN = "hf_loopbackTestToken0123456789"
KAGGLE_TEST_USER = "relaybot"
KAGGLE_TEST_KEY = "kaggle-loopback-test-key-0123456789"
REPO_ID = "relaybot/ounce-ckpt"


@pytest.fixture
def loopback_only(monkeypatch):
    """Refuse (and record) every connection or name lookup that is not loopback; fail the test if any happened."""
    import socket

    attempts: list[str] = []
    loopback = {"127.0.0.1", "localhost", "::1"}
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def host_of(address) -> str:
        return address[0] if isinstance(address, tuple) else str(address)

    def guard(host: str) -> None:
        if host not in loopback and not str(host).startswith("127.") and not str(host).startswith("/"):
            attempts.append(str(host))
            raise OSError(f"test: network access to {host} refused")

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            guard(host_of(address))
        return real_connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            guard(host_of(address))
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        guard(host.decode() if isinstance(host, bytes) else str(host))
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert attempts == [], f"non-loopback network access attempted: {attempts}"


class RecordingSleep:
    """A ``sleep`` for RetryPolicy that records each requested wait and waits only briefly."""

    def __init__(self):
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        import time

        self.waits.append(seconds)
        time.sleep(min(seconds, 0.02))


def fast_policy(sleep: RecordingSleep, **overrides) -> RetryPolicy:
    values = dict(deadline_s=20.0, request_timeout_s=5.0, max_attempts=4, base_wait_s=0.05, max_wait_s=0.2)
    values.update(overrides)
    return RetryPolicy(sleep=sleep, **values)


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """huggingface_hub with Xet off, its home and token file in tmp, HF_TOKEN a test value."""
    from huggingface_hub import close_session, constants

    home = tmp_path / "hf-home"
    home.mkdir()
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", HF_TEST_TOKEN)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    yield home
    close_session()


@pytest.fixture
def fake_hub(hub_env):
    hub = FakeHub(page_size=2, required_token=HF_TEST_TOKEN).start()
    hub.create_repo(REPO_ID, "dataset")
    yield hub
    hub.stop()


@pytest.fixture
def sleeps():
    return RecordingSleep()


@pytest.fixture
def hub_store(fake_hub, tmp_path, sleeps):
    from wikiengine.executors.hub_store import HubStore

    return HubStore(
        REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / "hub-cache", policy=fast_policy(sleeps)
    )


@pytest.fixture
def kaggle_env(tmp_path, monkeypatch):
    """The kaggle client pointed at loopback: LOCALHOST env, creds in env vars, config dir in tmp."""
    config_dir = kaggle_loopback_env(monkeypatch, tmp_path, KAGGLE_TEST_USER, KAGGLE_TEST_KEY)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    if "kaggle" in sys.modules:  # KaggleApi reads its config dir at class creation
        monkeypatch.setattr(sys.modules["kaggle"].api, "config_dir", str(config_dir), raising=False)
    yield config_dir


def kaggle_loopback_env(monkeypatch, tmp_path, username: str, key: str):
    """The kaggle client's environment for a loopback server: LOCALHOST, these credentials in env
    vars, a config dir in ``tmp_path`` (returned), no token or proxy from the real environment."""
    config_dir = tmp_path / "kaggle-config"
    config_dir.mkdir()
    for name in ("KAGGLE_API_TOKEN", "KAGGLE_API_V1_TOKEN", "KAGGLE_PROXY", "VERBOSE", "VERBOSE_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCALHOST")
    monkeypatch.setenv("KAGGLE_USERNAME", username)
    monkeypatch.setenv("KAGGLE_KEY", key)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return config_dir


@pytest.fixture
def fake_kaggle(kaggle_env, monkeypatch):
    from tests.fakes.fake_kaggle import FakeKaggle

    server = FakeKaggle(username=KAGGLE_TEST_USER, key=KAGGLE_TEST_KEY).start()
    from kagglesdk import kaggle_env as sdk_env

    monkeypatch.setitem(sdk_env._env_to_endpoint, sdk_env.KaggleEnv.LOCAL, server.url)
    yield server
    server.stop()


def kaggle_json(config_dir, username: str, key: str) -> None:
    (config_dir / "kaggle.json").write_text(json.dumps({"username": username, "key": key}))
