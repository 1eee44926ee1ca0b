"""The methods ``dataclasses`` generates, compiled once per user (core/dataclass_code.py): a
class made from kept code behaves as one made by plain ``exec``, and the kept code is read
only from a private file of this user outside every git work tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Classes of every kind dataclasses writes code for, and what each does, as one JSON line.
# With "hooked" as argv[1] the script goes through wikiengine (which installs the hook) and
# also prints how many sources this process compiled, then saves as the CLI does.
SCRIPT = r'''
import sys
if sys.argv[1] == "hooked":
    import wikiengine  # installs the hook
    from wikiengine.core import dataclass_code
import dataclasses, json, types
from dataclasses import dataclass, field, InitVar

# the classes live in a module of the package (only its classes' code is kept); the first
# with deferred annotations, the others evaluated
probe = sys.modules["wikiengine._probe"] = types.ModuleType("wikiengine._probe")
exec(compile("""
from __future__ import annotations
from dataclasses import dataclass, field
@dataclass(frozen=True, order=True)
class Deferred:
    name: str
    size: int = 3
    tags: list = field(default_factory=list, compare=False)
""", "<deferred>", "exec"), probe.__dict__)
Deferred = probe.Deferred
__name__ = "wikiengine._probe"  # the classes below are made in this namespace

@dataclass
class Plain:
    a: int
    b: str = "x"
    c: InitVar[int] = 1
    def __post_init__(self, c):
        self.b = self.b * c

@dataclass(eq=False, repr=False)
class Bare:
    a: int

@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class Slotted:
    a: int
    b: float = 0.5

@dataclass(frozen=True)
class Child(Deferred):
    extra: tuple = ()

out = {}
d = Deferred("n", 4, ["t"])
out["deferred"] = [repr(d), d == Deferred("n", 4, []), hash(d) == hash(Deferred("n", 4)), d < Deferred("o"),
                   str(Deferred.__init__.__annotations__)]
try:
    d.name = "m"
except dataclasses.FrozenInstanceError as err:
    out["frozen"] = type(err).__name__
p = Plain(2, "ab", 3)
out["plain"] = [repr(p), p == Plain(2, "ababab", 1), str(Plain.__init__.__annotations__)]
out["bare"] = [Bare(1) == Bare(1), " object at 0x" in repr(Bare(1))]
s = Slotted(a=1)
out["slotted"] = [repr(s), hash(s) == hash(Slotted(a=1)), hasattr(s, "__dict__"), Slotted.__slots__]
try:
    Slotted(1)
except TypeError as err:
    out["kw_only"] = "positional" in str(err)
out["child"] = [repr(Child("k", extra=(1,))), [f.name for f in dataclasses.fields(Child)]]
out["doc"] = [Plain.__doc__, Bare.__doc__, Child.__doc__]  # written from the signature: inspect, deferred

__name__ = "__main__"
@dataclass
class Outside:  # another program's class: plain exec, never kept
    a: int

out["outside"] = [repr(Outside(1)), str(Outside.__init__.__annotations__), Outside.__doc__]
if sys.argv[1] == "hooked":
    out["compiled"] = len(dataclass_code._KEPT._added)
    out["kept_outside"] = any("Outside" in text for text in dataclass_code._KEPT._added)
    from wikiengine.core import usercache
    usercache.save_all()
print(json.dumps(out))
'''


def run(mode: str, cache: Path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def kept_file(cache: Path) -> list[Path]:
    return sorted((cache / "wikiengine" / "dataclasses").glob("*.marshal"))


def test_a_class_made_from_kept_code_behaves_as_one_made_by_exec(tmp_path):
    cache = tmp_path / "cache"
    plain = run("plain", cache)
    first, again = run("hooked", cache), run("hooked", cache)
    assert first.pop("compiled") > 10 and again.pop("compiled") == 0  # the second process compiled nothing
    assert first.pop("kept_outside") is False and again.pop("kept_outside") is False
    assert first == plain and again == plain
    assert "'name': 'str'" in plain["deferred"][-1] and "<class 'int'>" in plain["plain"][-1]  # both annotation modes held
    [file] = kept_file(cache)
    assert file.stat().st_mode & 0o777 == 0o600


def test_kept_code_is_not_read_from_a_file_others_may_write_nor_from_a_damaged_one(tmp_path):
    cache = tmp_path / "cache"
    plain = run("plain", cache)
    run("hooked", cache)
    [file] = kept_file(cache)
    file.chmod(0o666)
    shared = run("hooked", cache)
    assert shared.pop("compiled") > 10 and shared.pop("kept_outside") is False and shared == plain
    file.chmod(0o600)
    file.write_bytes(b"\x00not marshal")
    damaged = run("hooked", cache)
    assert damaged.pop("compiled") > 10 and damaged.pop("kept_outside") is False and damaged == plain


def test_no_code_is_kept_inside_a_git_work_tree(tmp_path):
    """CI often points XDG_CACHE_HOME into the checkout, where a commit could plant the file."""
    tree = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    cache = tree / ".cache"
    first, again = run("hooked", cache), run("hooked", cache)
    assert first["compiled"] > 10 and again["compiled"] == first["compiled"]
    assert kept_file(cache) == []


WHERE = "this test module"


def test_the_routed_exec_takes_the_namespaces_exec_would():
    from wikiengine.core.dataclass_code import _exec

    ns: dict = {}
    _exec("found = WHERE", None, ns)  # no globals: the caller's, as exec takes them
    assert ns == {"found": WHERE}
    own = {"WHERE": "given"}
    _exec("found = WHERE", own)  # globals alone: they are the locals too
    assert own["found"] == "given"
    code = compile("found = 2", "<t>", "exec")
    _exec(code, own, ns)  # a code object runs as it is
    assert ns["found"] == 2
