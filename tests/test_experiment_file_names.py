"""How an experiment page's file name is read (model/experiment.py ``parse_file_name``), in the
forms conventions.md records: the current form, a prefixed id, retry letters (also written
after a hyphen), an id of another scheme, an impossible date, no id. The reader parses the
id once; these hold what it gives."""

from __future__ import annotations

import pytest

from wikiengine.model.experiment import FileName, file_name_regexes, parse_file_name


@pytest.mark.parametrize("name, read", [
    ("2026-06-03-v024-splash.md", FileName("2026-06-03", "v024", "splash", True)),
    ("2026-06-03-qwen3-jax-v024-splash-attn.md", FileName("2026-06-03", "v024", "splash-attn", False)),
    ("2026-06-03-v043b-retry.md", FileName("2026-06-03", "v043b", "retry", True)),
    ("2026-06-03-v057-e-rerun.md", FileName("2026-06-03", "v057e", "rerun", True)),  # the retry v057e, hyphen-written
    ("2026-06-03-v057-e.md", FileName("2026-06-03", "v057e", None, True)),
    ("2026-06-03-v043b-e-twice.md", FileName("2026-06-03", "v043b", "e-twice", True)),  # a letter already: a slug
    ("2026-13-45-v001-bad-date.md", FileName(None, "v001", "bad-date", True)),
    ("2026-06-03-v45-short.md", FileName("2026-06-03", None, None, False)),  # fewer than three digits: no id
    ("2026-01-01-notes.md", FileName("2026-01-01", None, None, False)),
    ("notes.md", FileName(None, None, None, False)),
])
def test_a_file_name_is_read_as_a_person_reads_it(name, read):
    assert parse_file_name(name) == read


def test_a_lane_with_its_own_id_scheme_keeps_its_ids_as_written():
    regexes = file_name_regexes(r"exp\d+")
    assert parse_file_name("2026-06-03-exp12-adam.md", regexes) == FileName("2026-06-03", "exp12", "adam", True)
    assert parse_file_name("2026-06-03-exp12-b-adam.md", regexes) == FileName("2026-06-03", "exp12", "b-adam", True)
