"""Run a child process that can reach no credential (RELIABILITY row 47: the clean-room publisher).

Passing ``token=False`` to a client is not enough: a library may still read ``HF_TOKEN``,
a token file, ``~/.netrc`` or ``kaggle.json`` on its own. :func:`run_clean` starts the
child with

- every credential-looking variable removed, by the rule of :func:`is_secret_name`
  (``tests/test_clean_room.py`` enumerates it): a name containing TOKEN, SECRET, PASSW,
  CREDENTIAL, PRIVATE or APIKEY; a name with a word KEY, AUTH, PASS or PAT between
  underscores (``AWS_ACCESS_KEY_ID``, ``SSH_AUTH_SOCK``, not ``GIT_AUTHOR_NAME``); every
  ``KAGGLE_*``, ``AWS_*``, ``AZURE_*``, ``GOOGLE_*``, ``CLOUDSDK_*``, ``ACTIONS_ID_TOKEN_REQUEST_*``;
  the files that hold credentials (``NETRC``, ``KUBECONFIG``, ``HF_TOKEN_PATH``...); and any
  variable whose value is a URL with a password (``https://user:pass@host``);
- ``HOME``, ``HF_HOME``, ``XDG_CONFIG_HOME`` and ``XDG_CACHE_HOME`` pointed at a fresh,
  empty directory, so no token file, ``.netrc`` or ``kaggle.json`` is reachable;

and, before the real command, a preflight in the same environment that fails unless
``huggingface_hub.get_token()`` is None and no Kaggle credential can be found.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from wikiengine.core.errors import Refused

STRIPPED_NAMES = frozenset({
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "NETRC", "KUBECONFIG", "DOCKER_CONFIG", "GNUPGHOME",
    "PGPASSFILE", "GIT_ASKPASS", "SSH_ASKPASS",
})
STRIPPED_PREFIXES = ("KAGGLE_", "ACTIONS_ID_TOKEN_REQUEST_", "AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_")
_SECRET_PART = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|APIKEY", re.IGNORECASE)
_SECRET_WORDS = frozenset({"KEY", "AUTH", "PASS", "PAT"})
_URL_WITH_PASSWORD = re.compile(r"://[^/@\s]*:[^/@\s]*@")
_PREFLIGHT = """
import os, sys
from pathlib import Path
problems = []
try:
    import huggingface_hub
except ImportError:
    huggingface_hub = None
if huggingface_hub is not None and huggingface_hub.get_token() is not None:
    problems.append("huggingface_hub.get_token() found a token")
home = Path.home()
for place in (home / ".netrc", home / ".kaggle" / "kaggle.json", home / ".kaggle" / "access_token",
              Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "kaggle" / "kaggle.json"):
    if place.exists():
        problems.append(f"{place} is reachable")
for name in os.environ:
    if name.startswith("KAGGLE_") or name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"):
        problems.append(f"{name} is set")
if problems:
    print("; ".join(problems), file=sys.stderr)
    sys.exit(3)
"""


class CleanRoomError(Refused):
    """The clean room could not be made: a credential would still be reachable."""


def is_secret_name(name: str) -> bool:
    """True for a variable the clean room never passes on (the rule in the module docstring)."""
    upper = name.upper()
    return (
        upper in STRIPPED_NAMES
        or upper.startswith(STRIPPED_PREFIXES)
        or bool(_SECRET_PART.search(upper))
        or not _SECRET_WORDS.isdisjoint(re.split(r"[^A-Z0-9]+", upper))
    )


def is_secret(name: str, value: str) -> bool:
    """A credential by its name, or a value that carries a password (a URL's ``user:pass@``)."""
    return is_secret_name(name) or bool(_URL_WITH_PASSWORD.search(value))


def clean_environment(parent: Mapping[str, str], home: Path) -> dict[str, str]:
    """``parent`` without credentials, with every home-like directory at ``home``."""
    env = {name: value for name, value in parent.items() if not is_secret(name, value)}
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_ASSETS_CACHE"):
        env.pop(name, None)
    env.update(
        HOME=str(home),
        HF_HOME=str(home / ".cache" / "huggingface"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    return env


# Where compilers cache by default under TMPDIR (``/tmp/torchinductor_<user>``, Triton's
# ``~/.triton``): a run's own scratch directory holds them, removed with it.
SCRATCH_CACHES = {"TORCHINDUCTOR_CACHE_DIR": "torchinductor", "TRITON_CACHE_DIR": "triton"}


def scratch_environment(env: dict[str, str], tmp: Path) -> dict[str, str]:
    """``env`` with ``TMPDIR`` and the compiler caches at ``tmp`` (created), a run's own
    scratch directory that its supervisor removes when the run ends."""
    tmp.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(tmp)
    env.update({name: str(tmp / folder) for name, folder in SCRATCH_CACHES.items()})
    return env


def run_clean(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float = 3600.0,
    python: str = sys.executable,
) -> subprocess.CompletedProcess:
    """Run ``argv`` in the clean room (see the module docstring) and return its result.

    ``extra_env`` adds variables (never a credential-looking one: CleanRoomError). Raises
    CleanRoomError when the preflight finds a reachable credential; the command's own
    exit status is left to the caller.
    """
    for name in extra_env or {}:
        if is_secret_name(name):
            raise CleanRoomError(f"clean room: {name} looks like a credential and is never passed on")
    import tempfile  # (random, with it: not for a caller that only asks is_secret_name)

    with tempfile.TemporaryDirectory(prefix="clean-room-") as tmp:
        env = clean_environment(os.environ, Path(tmp))
        env.update(extra_env or {})
        check = subprocess.run([python, "-c", _PREFLIGHT], env=env, cwd=cwd, capture_output=True, text=True,
                               timeout=timeout_s)
        if check.returncode != 0:
            raise CleanRoomError(f"clean room: {check.stderr.strip() or 'preflight failed'}")
        return subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
