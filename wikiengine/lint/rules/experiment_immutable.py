"""EXP007: verdict pages are immutable (RELIABILITY row 38)."""

from __future__ import annotations

from wikiengine.core.errors import WikiError
from wikiengine.core.page import parse_page
from wikiengine.lint.cache import content_hash
from wikiengine.lint.kinds import kind_of
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import resolve_verdict
from wikiengine.model.filings import restores_filing


class VerdictPageImmutable(Rule):
    """## What it does
    Compares the wiki with the base revision (`HEAD` for a pre-commit run, `REV` for
    `wiki lint --since REV`) and flags every experiment page whose status was already a
    verdict at the base and that has since been changed, renamed or deleted. The check
    reads git, not the staging area, so an edit committed with `--no-verify` (or made in
    a web editor) is still caught by the next `wiki lint --since <last trusted commit>`.

    Assigning the verdict itself (`in_progress` at the base, a verdict now) is the one
    allowed change, besides restoring the text that the lane journal's filing record
    keeps (the repair of an earlier edit, EXP014). A deletion is reported on the deleted page's path, in every run
    (a pre-commit run on the staged files included), although the file is gone.

    ## Why is this bad?
    A verdict closes an experiment: the model page, merges to trunk and later hypotheses
    cite it. Editing it afterwards rewrites the evidence under them; a new experiment is
    the way to revisit a result.

    ## Example
    Changing `status: supported` to `status: refuted` on
    `2026-06-05-v045-splash.md` after it was committed.

    File `2026-06-12-v052-splash-recheck.md` with the new evidence instead.

    ## Options
    None. Needs git; skipped (with a notice) outside a repository.
    """

    code = "EXP007"
    name = "verdict-page-immutable"
    summary = "a page whose status was already a verdict at the base revision was changed, renamed or deleted"
    needs_git = True
    cache_wiki = False  # compares with git, not only with the pages

    def check_wiki(self, ctx):
        git = ctx.git
        if git is None:
            return
        rename_sources = set(git.renamed_from.values())
        examined = [
            (rel, status) for rel, status in sorted(git.changes.items())
            if status in ("M", "R", "D") and not (status == "D" and rel in rename_sources)
            and kind_of(git.renamed_from.get(rel, rel)) == "experiment"
        ]
        base_texts = git.base_texts([rel for rel, _status in examined])  # one git process
        verdicts = _base_verdicts(ctx, {git.renamed_from.get(rel, rel): base_texts[rel] for rel, _status in examined})
        for rel, status in examined:
            old_rel = git.renamed_from.get(rel, rel)
            base_text = base_texts[rel]
            verdict = verdicts.get(old_rel)
            if base_text is None or verdict is None:
                continue
            if status == "D":
                yield self.finding(
                    rel, 1, f"verdict page (verdict {verdict!r} at {git.base[:12]}) was deleted: verdict pages are immutable"
                )
            elif status == "R":
                yield self.finding(
                    rel, 1, f"verdict page (verdict {verdict!r} at {git.base[:12]}) was renamed from {old_rel}"
                )
            elif _current_text(ctx, rel) != base_text and not restores_filing(ctx.root, rel):
                yield self.finding(
                    rel, 1, f"verdict page (verdict {verdict!r} at {git.base[:12]}) was changed: verdict pages are immutable"
                )


BASE_VERDICTS = "EXP007-base-verdicts"
KEPT_VERDICTS = 4096  # rows of the table, the oldest dropped first


def _base_verdicts(ctx, texts: dict[str, str | None]) -> dict[str, str | None]:
    """The verdict of each page's text at the base (None: in progress, unreadable or absent),
    kept in a table by the text's hash: a commit's text does not change, so a pre-commit run
    over pages it saw before parses no YAML (whose import alone was a tenth of such a run)."""
    table = ctx.cache.table(BASE_VERDICTS, "") if ctx.cache is not None else {}
    verdicts, added = {}, {}
    for rel, text in texts.items():
        if text is None:
            continue
        key = content_hash(text.encode("utf-8", errors="surrogateescape"))
        if key not in table:
            try:
                added[key] = resolve_verdict(parse_page(text, rel).frontmatter)[0]
            except WikiError:
                added[key] = None
        verdicts[rel] = added[key] if key in added else table[key]
    if added and ctx.cache is not None:
        ctx.cache.keep(BASE_VERDICTS, "", dict(list({**table, **added}.items())[-KEPT_VERDICTS:]), len(added))
    return verdicts


def _current_text(ctx, rel: str) -> str | None:
    try:
        return (ctx.root / rel).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
