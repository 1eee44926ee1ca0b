"""RELIABILITY row 73 (issue 21): a filed page edited by hand and committed with no hooks is
a finding of plain `wiki lint` (EXP014), of every watcher audit and of the closing audit,
and `wiki loop stop` refuses, until the filed text is restored or a rerun is filed. With
real git and the real writers; an old journal without digests gives no finding."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.lane_runs import record_run
from tests.test_kernel_lane import family  # noqa: F401 - fixtures
from tests.test_lane_step import LANE, MemoryBackend, lane_wiki  # noqa: F401 - fixtures
from tests.test_lane_watch import retrospective, watch_cli
from tests.test_lane_writers import HLO, git, proposal, wiki  # noqa: F401 - fixtures
from wikiengine.lint.registry import rule_class
from wikiengine.lint.runner import lint
from wikiengine.model.filings import drifted_pages
from wikiengine.model.journal import parse_journal
from wikiengine.step import writers as lw
from wikiengine.step.audit import DRIFT_CODE, STOP_AUTHORIZED, run_audit
from wikiengine.step.lane import close as lane_close
from wikiengine.step.lane.start import start_session


def file_one(root, slug="splash-qb", tag="a") -> dict:
    """A stub filed `supported` through the writers, with a tps figure of 1100."""
    vid = lw.new_experiment(root, LANE, slug=slug, variant="2B/v5p-16", proposal_path=proposal(root, tag),
                            track=1)["vid"]
    (root.parent / "hlo.md").write_text(HLO)
    (root.parent / "profile.md").write_text("Splash 19.4% of step time.\n")
    record_run(root, LANE.dir, vid, variant="2B/v5p-16", metrics={"mfu": 42.6, "tps": 1100.0})
    return lw.file_experiment(root, LANE, vid, verdict="supported", profile_path=root.parent / "profile.md",
                              hlo_path=root.parent / "hlo.md", reason="as measured")


def file_rerun(root, vid: str) -> None:
    """File ``vid`` (a retry) after journalling a run of it."""
    record_run(root, LANE.dir, vid, variant="2B/v5p-16", metrics={"mfu": 42.0})
    lw.file_experiment(root, LANE, vid, verdict="inconclusive", reason="rerun of an edited page")


def hand_edit(root, rel: str) -> str:
    """Edit the verdict text and a figure (tps 1100 -> 5000) and commit with no hooks; the
    commit that filed the page, before the edit."""
    filed_at = git(root, "log", "-1", "--format=%H", "--", rel).strip()
    page = root / rel
    text = page.read_text()
    edited = text.replace("tps: 1100.0", "tps: 5000.0").replace("**supported** — as measured",
                                                                 "**supported** — a clear win")
    assert edited.count("5000") >= 1 and "a clear win" in edited
    page.write_text(edited)
    git(root, "commit", "-q", "--no-verify", "-am", "tidy the v048 page")
    return filed_at


def drift_checks(audit, rel: str) -> list[str]:
    return [f.check for f in audit.findings if f.path == rel and f.check == DRIFT_CODE]


def test_row73_the_audit_code_is_the_lint_rule_of_the_same_check():
    assert rule_class(DRIFT_CODE).__name__ == "FiledPageMatchesJournal"


def test_row73_a_committed_hand_edit_is_flagged_by_lint_every_audit_and_the_stop(lane_wiki, tmp_path):
    root = lane_wiki
    start_session(root, LANE, parallelism="1")
    filed = file_one(root)
    rel = filed["page"]
    filing = hand_edit(root, rel)
    plain = subprocess.run([sys.executable, "-m", "wikiengine", "lint"], cwd=root, capture_output=True, text=True,
                           timeout=300)
    assert plain.returncode == 1, plain.stdout + plain.stderr
    line = next(ln for ln in plain.stdout.splitlines() if "EXP014" in ln)
    assert line.startswith(f"{rel}:1:1: EXP014 filed page of {filed['vid']} was changed after it was filed")
    assert f"git checkout {filing[:12]} -- {rel}" in line and f"wiki exp retry {filed['vid']} gemma4 tpu" in line
    assert "EXP007" not in plain.stdout  # the edit is in HEAD: the comparison with HEAD no longer sees it
    for _ in range(2):  # every watcher audit, the delta ones after the first too
        doc = json.loads(watch_cli(root).stdout)
        found = [f for f in doc["findings"] if f["check"] == DRIFT_CODE and f["path"] == rel]
        assert len(found) == 1 and f"git checkout {filing[:12]} -- {rel}" in found[0]["correction"], doc
    retrospective(root)
    closing = watch_cli(root, "--closing")
    assert closing.returncode == 1 and DRIFT_CODE in closing.stdout
    assert not (root / LANE.dir / STOP_AUTHORIZED).exists()
    head = git(root, "rev-parse", "HEAD")
    with pytest.raises(lane_close.StopRefused, match=f"EXP014 filed page of {filed['vid']}"):
        lane_close.stop(root, backend=MemoryBackend(tmp_path / "art"))
    assert git(root, "rev-parse", "HEAD") == head
    git(root, "checkout", filing, "--", rel)  # the repair the finding names
    git(root, "commit", "-q", "-m", "restore the filed v048 page")
    assert [f.render() for f in lint(root, base=None, use_cache=False).findings] == []
    assert watch_cli(root, "--closing").returncode == 0 and (root / LANE.dir / STOP_AUTHORIZED).is_file()
    assert lane_close.stop(root, backend=MemoryBackend(tmp_path / "art"))["stopped"]


def test_row73_a_filed_rerun_repairs_it(lane_wiki):
    root = lane_wiki
    start_session(root, LANE, parallelism="1")
    filed = file_one(root)
    hand_edit(root, filed["page"])
    retry = lw.retry_experiment(root, LANE, filed["vid"])
    assert drift_checks(run_audit(root, LANE), filed["page"]) == [DRIFT_CODE]  # a stub is no rerun yet
    file_rerun(root, retry["vid"])
    assert drift_checks(run_audit(root, LANE), filed["page"]) == []
    assert [f for f in lint(root, base=None, use_cache=False).findings if f.code == DRIFT_CODE] == []


def test_row73_a_deleted_filed_page_is_flagged_on_its_path(lane_wiki):
    root = lane_wiki
    filed = file_one(root)
    git(root, "rm", "-q", filed["page"])
    git(root, "commit", "-q", "--no-verify", "-m", "drop v048")
    found = [f for f in lint(root, base=None, use_cache=False).findings if f.code == DRIFT_CODE]
    assert [(f.path, "is gone" in f.message) for f in found] == [(filed["page"], True)]


def test_row73_an_old_journal_without_digests_gives_no_finding(lane_wiki):
    root = lane_wiki
    filed = file_one(root)
    journal = root / LANE.journal
    records = parse_journal(journal.read_text())
    journal.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "digest"}) + "\n" for r in records))
    git(root, "commit", "-q", "-am", "a journal from before the digests")
    hand_edit(root, filed["page"])
    assert drifted_pages(root, parse_journal(journal.read_text())) == []
    assert drift_checks(run_audit(root, LANE), filed["page"]) == []
    assert [f for f in lint(root, base=None, use_cache=False).findings if f.code == DRIFT_CODE] == []


def test_row73_the_example_wiki_and_its_writers_leave_no_drift(lane_wiki):
    """Precision: everything the writers file (a stub, a file, a retry, a file) is its own filed text."""
    root = lane_wiki
    filed = file_one(root)
    retry = lw.retry_experiment(root, LANE, filed["vid"])
    file_rerun(root, retry["vid"])
    assert drifted_pages(root, parse_journal((root / LANE.journal).read_text())) == []


def test_row73_a_kernel_family_audit_and_close_flag_an_edited_filed_page(family, capsys):  # noqa: F811
    from tests.test_kernel_lane import FAM, FAMILY, kernel
    from wikiengine.step.kernel.audit import run_family_audit

    root, _authoring, stub = family
    assert kernel(root, capsys, "file", FAMILY, "--verdict", "invalid")[0] == 0
    rel = stub["page"]
    filing = git(root, "log", "-1", "--format=%H", "--", rel).strip()
    (root / rel).write_text((root / rel).read_text().replace("**invalid**", "**supported**"))
    git(root, "commit", "-q", "--no-verify", "-am", "a better verdict")
    for _ in range(2):
        found = [f for f in run_family_audit(root, FAM).findings if f.check == DRIFT_CODE]
        assert [(f.path, f"git checkout {filing[:12]} -- {rel}" in f.correction) for f in found] == [(rel, True)]
    status, err = kernel(root, capsys, "close", FAMILY)
    assert status == 3 and f"EXP014 filed page of {stub['vid']}" in err
    git(root, "checkout", filing, "--", rel)
    git(root, "commit", "-q", "-m", "restore the filed page")
    assert [f for f in run_family_audit(root, FAM).findings if f.check == DRIFT_CODE] == []


def test_row73_a_filing_not_yet_committed_is_a_write_in_progress_not_an_edit(lane_wiki):
    """A writer killed after writing the journal and before the page leaves a filing record
    ahead of its page; the next writer finishes it. Until a commit holds the filing, it is
    no finding; once committed, a page that is not its filed text is."""
    root = lane_wiki
    stub = lw.new_experiment(root, LANE, slug="splash-qb", variant="2B/v5p-16", proposal_path=proposal(root, "a"),
                             track=1)
    journal = root / LANE.journal
    record = {"op": "file", "vid": stub["vid"], "verdict": "refuted", "page": stub["page"],
              "digest": "sha256:" + "0" * 64, "at": "2026-12-01T00:00:00Z"}
    journal.write_text(journal.read_text() + json.dumps(record) + "\n")

    def found():
        return [f.path for f in lint(root, base=None, use_cache=False).findings if f.code == DRIFT_CODE]

    assert found() == [] and drift_checks(run_audit(root, LANE), stub["page"]) == []
    git(root, "commit", "-q", "--no-verify", "-am", "a filing record with no filed page")
    assert found() == [stub["page"]] and drift_checks(run_audit(root, LANE), stub["page"]) == [DRIFT_CODE]
