"""Bootstrap: the whole body of a launched training kernel, rendered per launch.

It pins a git revision and the sha256 of the session launcher, fetches the launcher at
that revision, refuses to run it when the hash differs, and executes the very bytes
it hashed. Only line 13 (QUOTA_LEFT_HOURS) changes per launch: see training.launch.
"""
import hashlib, json, os, re, subprocess, sys, tempfile  # noqa: E401

REPO = "UNPINNED"
REV = "UNPINNED"
LAUNCHER_PATH = "training/launcher.py"
LAUNCHER_SHA = "UNPINNED"
os.environ["QUOTA_LEFT_HOURS"] = "0"
SESSION_ARGS = []


def fail(message):
    print(f"bootstrap refused: {message}", file=sys.stderr, flush=True)
    raise SystemExit(3)


def git(*args, cwd=None):
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True)
    if out.returncode != 0:
        fail(f"git {args[0]} failed: {out.stderr.decode(errors='replace').strip()[-200:]}")
    return out.stdout


def fetch(repo, rev, path):
    """The bytes of ``path`` at commit ``rev`` of ``repo`` (a local directory or a git URL)."""
    if os.path.isdir(repo):
        return git("-C", repo, "cat-file", "blob", f"{rev}:{path}")
    scratch = tempfile.mkdtemp(prefix="bootstrap-")
    git("init", "--quiet", "--bare", scratch)
    git("--git-dir", scratch, "fetch", "--quiet", "--depth", "1", repo, rev)
    return git("--git-dir", scratch, "cat-file", "blob", f"{rev}:{path}")


def main():
    if not re.fullmatch(r"[0-9a-f]{40}", REV):
        fail(f"REV is not a 40-hex commit id: {REV!r}")
    if not re.fullmatch(r"[0-9a-f]{64}", LAUNCHER_SHA):
        fail(f"LAUNCHER_SHA is not a 64-hex sha256: {LAUNCHER_SHA!r}")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", os.environ["QUOTA_LEFT_HOURS"]):
        fail(f"QUOTA_LEFT_HOURS is not a number of hours: {os.environ['QUOTA_LEFT_HOURS']!r}")
    code = fetch(REPO, REV, LAUNCHER_PATH)
    digest = hashlib.sha256(code).hexdigest()
    if digest != LAUNCHER_SHA:
        fail(f"{LAUNCHER_PATH} at {REV[:12]} has sha256 {digest[:16]}..., pinned {LAUNCHER_SHA[:16]}...")
    print(json.dumps({"event": "bootstrap", "rev": REV, "launcher_sha256": digest}), flush=True)
    pinned = {"repo": REPO, "rev": REV, "session_args": list(SESSION_ARGS)}
    exec(compile(code, LAUNCHER_PATH, "exec"), {"__name__": "__main__", "BOOTSTRAP": pinned})


if __name__ == "__main__":
    main()
