"""`wiki exp renumber VID`: one v-id, one page again (RELIABILITY row 69).

Two clones that each ran `wiki exp new` before fetching hand out the same id; after the
merge the id names two pages, and the lane wake dispatches neither. The page to keep is
the one a run was dispatched for, else the one added first (its first commit, then its
``created`` date, then its path); every other page of the id gets the next free id (a page
whose run was dispatched is never moved: the run's name carries the id)
(:func:`wikiengine.model.journal.next_id`: never one used on any branch). For each page
moved, in one commit through the lane's write transaction:

- the page file is renamed ``<date>-<new id>-<slug>.md``;
- its frontmatter (``title``, ``workload_name``, ``artifacts``), its title line and the
  workload and artifact paths its Setup names follow the new id;
- the journal records of that page (its claim or retry, found by its path or workload
  name) carry the new id, and a ``renumber`` record says what was moved; a filed page
  gets an ``amend`` record with the digest of its renamed text;
- links to it in other pages (the index, hypotheses, analyses) point at the new file,
  and a link text that led with the old id leads with the new one;
- the lane log's entries that name it (``<id>-<slug>``) name the new id, and the log gets
  a ``renumber`` entry. (RESULTS.tsv rows are not rewritten: two rows of one id cannot
  be told apart there.)
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from wikiengine.core.clock import Clock, now_iso, today, utcnow
from wikiengine.core.errors import WikiError
from wikiengine.core.identity import workload_name
from wikiengine.core.links import destinations, relative_target
from wikiengine.core.page import parse_page
from wikiengine.model import experiment as ex
from wikiengine.model import logbook
from wikiengine.model.journal import BranchIds, append_record, next_id, page_digest, parse_journal, used_ids
from wikiengine.model.lanes import Lane
from wikiengine.step import writers as lw
from wikiengine.step.audit import first_commit_time
from wikiengine.step.txn import LaneLock, LaneTxn


def keep_order(root: Path, pages: list[ex.ExperimentPage], dispatched: set[str]) -> list[ex.ExperimentPage]:
    """The pages of one id, the one to keep first: a dispatched page, then the earliest added."""
    def key(page: ex.ExperimentPage):
        added = first_commit_time(root, page.rel)
        return (page.frontmatter.get("workload_name") not in dispatched, added is None, added or 0.0,
                str(page.frontmatter.get("created", "")), page.rel)

    return sorted(pages, key=key)


def renumber_experiment(root: Path, lane: Lane, vid: str, *, dry_run: bool = False, clock: Clock = utcnow) -> dict:
    """Give every page but the kept one of ``vid`` the next free id (see the module docstring)."""
    wanted = ex.canonical_id(vid)
    settings = lw.lane_settings(root, lane)
    with BranchIds(root, lane) as branches, LaneLock(root, lane) as lock:
        pages = [p for p in lw.lane_pages(root, lane) if p.exp_id == wanted]
        if len(pages) < 2:
            raise WikiError(f"{wanted} names {len(pages)} page(s) in lane {lane.model_prefix}/{lane.name}: "
                            "nothing to renumber")
        txn = LaneTxn(root, lane)
        journal = txn.read(lane.journal)
        records = parse_journal(journal, lane.journal)
        dispatched = {str(r.get("workload")) for r in records if r.get("op") == "dispatch" and r.get("vid") == wanted}
        kept, *moved = keep_order(root, pages, dispatched)
        ran = [p.rel for p in moved if p.frontmatter.get("workload_name") in dispatched]
        if ran:
            raise WikiError(f"{wanted}: more than one of its pages was dispatched ({kept.rel}, {', '.join(ran)}): "
                            "a run's name carries its id, so renumber moves only a page never dispatched: "
                            "resolve these pages by hand")
        used = used_ids(root, lane, records, branches)
        others = [p for p in _wiki_pages(root) if p not in {page.rel for page in pages}]
        renamed = []
        for page in moved:
            new = next_id(used)
            used.add(new)
            renamed.append(_move(txn, root, lane, settings, page, str(new), others, clock))
        journal = txn.read(lane.journal)
        for done in renamed:
            journal = append_record(journal, {"op": "renumber", "vid": done["vid"], "from": wanted,
                                              "page": done["page"], "was": done["was"], "at": now_iso(clock)})
        txn.write(lane.journal, journal)
        moves = ", ".join(f"{d['was']} -> {d['vid']}" for d in renamed)
        entry = logbook.render_entry(today(clock), "renumber", f"{wanted} named {len(pages)} pages", {
            "Pages updated": ", ".join(d["page"] for d in renamed),
            "Notes": f"two clones allocated {wanted} offline; kept {kept.rel}; moved {moves}"})
        txn.write(lane.log, logbook.insert_entry(txn.read(lane.log), entry))
        result = {"vid": wanted, "kept": kept.rel, "renumbered": renamed, "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"exp({wanted}): renumber the later of its pages: "
                                      + ", ".join(d["vid"] for d in renamed))
        return result


def _move(txn: LaneTxn, root: Path, lane: Lane, settings: lw.LaneSettings, page: ex.ExperimentPage, new: str,
          others: list[str], clock: Clock) -> dict:
    """Stage one page's move to id ``new``: its file, its text, its journal records, links to it."""
    old = page.exp_id
    name = ex.parse_file_name(page.rel.rsplit("/", 1)[-1])
    slug = name.slug or page.slug or "x"
    date = name.date or str(page.frontmatter.get("created") or today(clock))
    rel = f"{posixpath.dirname(page.rel)}/{ex.page_file_name(date, new, slug)}"
    number = ex.parse_vid(new)
    old_workload = page.frontmatter.get("workload_name")
    workload = workload_name(settings.user_prefix, lane.model_name, lane.name, number.number, slug, number.letter)
    old_paths = page.frontmatter.get("artifacts") if isinstance(page.frontmatter.get("artifacts"), dict) else {}
    paths = lw.artifact_paths(settings, lane, new, slug, date)
    parsed = parse_page(page.text, page.rel)
    front = {"title": re.sub(rf"^{re.escape(old)}\b", new, str(parsed.frontmatter.get("title", f"{new} {slug}")))}
    if old_workload:
        front["workload_name"] = workload
    if old_paths:
        front["artifacts"] = paths
    text = parsed.with_frontmatter(front).to_text()
    head, sep, body = text.partition("\n---\n") if text.startswith("---") else ("", "", text)
    body = re.sub(rf"^# {re.escape(old)}\b", f"# {new}", body, count=1, flags=re.M)
    if old_workload:
        body = body.replace(str(old_workload), workload)
    if old_paths.get("root"):
        body = body.replace(str(old_paths["root"]), paths["root"])
    text = head + sep + body
    txn.remove(page.rel)
    txn.write(rel, text)
    journal = txn.read(lane.journal)
    lines = []
    for record in parse_journal(journal, lane.journal):
        mine = record.get("vid") == old and (record.get("page") == page.rel
                                             or (old_workload and record.get("workload") == old_workload))
        if mine:
            record = {**record, "vid": new, **({"page": rel} if "page" in record else {}),
                      **({"workload": workload} if record.get("workload") == old_workload else {})}
        lines.append(record)
    rewritten = ""
    for record in lines:
        rewritten = append_record(rewritten, record)
    if ex.is_filed(page.frontmatter):  # the page as filed changed: its newest filing record says how
        rewritten = append_record(rewritten, {"op": "amend", "vid": new, "page": rel, "digest": page_digest(text),
                                              "reason": f"renumbered from {old}", "at": now_iso(clock)})
    txn.write(lane.journal, rewritten)
    if page.slug and sum(1 for p in lw.lane_pages(root, lane) if p.exp_id == old and p.slug == page.slug) == 1:
        txn.write(lane.log, txn.read(lane.log).replace(f"{old}-{page.slug}", f"{new}-{page.slug}"))
    for other in others:
        before = txn.read(other)
        after = relink(before, other, page.rel, rel, old, new)
        if after != before:
            txn.write(other, after)
    return {"vid": new, "was": page.rel, "page": rel, "workload_name": workload if old_workload else None}


def relink(text: str, where: str, old_rel: str, new_rel: str, old_id: str, new_id: str) -> str:
    """``text`` (the page at ``where``) with every link to ``old_rel`` pointing at ``new_rel``,
    and a link text that led with ``old_id`` leading with ``new_id``."""
    folder = posixpath.dirname(where)
    for dest in set(destinations(text)):
        target = relative_target(dest)
        if target is None or posixpath.normpath(posixpath.join(folder, target)) != old_rel:
            continue
        new_dest = posixpath.relpath(new_rel, folder or ".") + dest[len(target):]
        text = re.sub(rf"\[{re.escape(old_id)}\b([^\]\n]*)\]\({re.escape(dest)}([\s)])",
                      lambda m, d=new_dest: f"[{new_id}{m.group(1)}]({d}{m.group(2)}", text)
        text = text.replace(f"]({dest})", f"]({new_dest})").replace(f"]({dest} ", f"]({new_dest} ")
    return text


def _wiki_pages(root: Path) -> list[str]:
    """Every markdown page under ``wiki/`` (where links to an experiment page live)."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md") if p.is_file())
