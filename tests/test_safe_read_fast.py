"""The reading path's shortcuts held to what they replace: the confinement test by string
prefix against ``os.path.commonpath``, the unbuffered read against a buffered one."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikiengine.core import safe_read
from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import read_regular

# canonical absolute paths: parts without "", ".", ".." or "/", drawn from a few names so
# that prefixes, equal paths and names that share a prefix (``wiki`` / ``wiki2``) are common
_PART = st.sampled_from(["a", "ab", "wiki", "wiki2", "w", "wiki.md", "x y", "é"])
_CANONICAL = st.lists(_PART, max_size=5).map(lambda parts: "/" + "/".join(parts))


@settings(max_examples=2000, deadline=None)
@given(real=_CANONICAL, base=_CANONICAL)
def test_under_is_commonpath_on_canonical_paths(real, base):
    assert safe_read._under(real, base) == (os.path.commonpath([real, base]) == base)


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 65537, 1 << 20])
def test_read_regular_gives_the_bytes_a_buffered_read_gives(tmp_path, size):
    page = tmp_path / "page.md"
    page.write_bytes(os.urandom(size))
    data, st_ = read_regular(page, within=tmp_path)
    assert data == page.read_bytes() and st_.st_size == size


def test_short_reads_are_read_on_to_the_end(tmp_path, monkeypatch):
    """A read may give fewer bytes than asked for (a pipe-backed or network file system):
    the pieces are joined, as a buffered read joins them."""
    page = tmp_path / "page.md"
    page.write_bytes(b"0123456789" * 100)
    real_read = os.read
    monkeypatch.setattr(safe_read.os, "read", lambda fd, n: real_read(fd, min(n, 7)))
    assert read_regular(page)[0] == page.read_bytes()


def test_a_file_that_grew_past_the_limit_is_refused_and_its_descriptor_closed(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_bytes(b"x" * 10)
    real_fstat, real_close, closed = os.fstat, os.close, []

    def grown(fd):
        result = real_fstat(fd)
        page.write_bytes(b"x" * 50)  # it grows between the stat and the read
        return result

    monkeypatch.setattr(safe_read.os, "fstat", grown)
    monkeypatch.setattr(safe_read.os, "close", lambda fd: (closed.append(fd), real_close(fd)))
    with pytest.raises(PageError, match="too large"):
        read_regular(page, limit=20)
    assert closed


def test_a_link_out_of_the_root_is_refused(tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    root = tmp_path / "wiki"
    root.mkdir()
    (root / "page.md").symlink_to(outside)
    (tmp_path / "wiki2").mkdir()
    (tmp_path / "wiki2" / "near.md").write_text("x")
    (root / "near.md").symlink_to(tmp_path / "wiki2" / "near.md")  # a sibling sharing the root's name as a prefix
    for name in ("page.md", "near.md"):
        with pytest.raises(PageError, match="outside the repository"):
            read_regular(root / name, within=root)
