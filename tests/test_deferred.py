"""Standard modules every ``wiki`` process imported for nothing are imported on first use
(core/deferred.py): ``inspect`` (which ``dataclasses`` asks only for a class without a
docstring) and ``ipaddress`` (which ``urllib.parse`` asks only of a bracketed host)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(script: str, tmp_path: Path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


DEFERRED = r'''
import json, sys
import wikiengine
from dataclasses import dataclass
loaded = lambda: [name for name in ("ast", "dis", "tokenize") if name in sys.modules]
seen = [loaded()]
@dataclass
class Documented:
    """It has a docstring."""
    a: int
seen.append(loaded())
import inspect  # the statement alone loads nothing
seen.append(loaded())
@dataclass
class Bare:
    a: int
seen.append(loaded())
print(json.dumps([seen, Bare.__doc__, Documented.__doc__, inspect.cleandoc("  x"), type(inspect).__name__]))
'''


def test_inspect_is_imported_only_when_a_class_without_a_docstring_asks_for_it(tmp_path):
    """``dataclasses`` imports ``inspect`` (ast, dis, tokenize: about 8 ms of every command's
    start) for the signature it writes as the docstring of a class that has none."""
    seen, bare, documented, cleaned, kind = run(DEFERRED, tmp_path)
    assert seen == [[], [], [], ["ast", "dis", "tokenize"]]
    assert (bare, documented, cleaned) == ("Bare(a: int)", "It has a docstring.", "x")
    assert kind == "_Deferred"  # its holders keep the stand-in, which now answers every name


def test_every_dataclass_of_the_package_has_a_docstring():
    """Else making it loads ``inspect`` (above) in every process that imports its module."""
    bare = []
    for folder in ("wikiengine", "executors", "training"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None
                        and any("dataclass" in ast.unparse(d) for d in node.decorator_list)):
                    bare.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert bare == []


def test_ipaddress_is_imported_only_when_a_url_s_bracketed_host_asks_for_it(tmp_path):
    script = """
import json, sys
import wikiengine, pathlib, urllib.parse
seen = [type(sys.modules["ipaddress"]).__name__]
host = urllib.parse.urlsplit("http://[::1]:8080/x").hostname
seen.append(type(sys.modules["ipaddress"]).__name__)
import ipaddress
print(json.dumps([seen, host, str(ipaddress.ip_address("10.0.0.1"))]))
"""
    assert run(script, tmp_path) == [["_Deferred", "module"], "::1", "10.0.0.1"]
