"""WKL001."""

from __future__ import annotations

import re

from wikiengine.core.errors import PageError
from wikiengine.core.identity import MAX_WORKLOAD_LEN, NAME_RE, check_workload_name, explicit_user_prefix
from wikiengine.core.page import read_text
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import lint_cache
from wikiengine.lint.rules._shared import target_experiments
from wikiengine.model.experiment import base_id

# What is scanned, outside fenced code blocks too (launch commands live in fences):
#   frontmatter `workload_name:` / `workload:` (a string or a list of strings),
#   `workload_name: <name>` / `workload_name = "<name>"` / `--workload <name>` / `--workload=<name>`,
#   `**Workload**: `<name>`` and `**Workload name**: <name>`.
_BODY_RES = (
    re.compile(r"\bworkload_name\s*[:=]\s*[\"'`]?([^\s\"'`,)]+)"),
    re.compile(r"--workload[= ]+[\"'`]?([^\s\"'`,)]+)"),
    re.compile(r"\*\*Workload(?: name)?\*\*\s*:?\s*`?([^\s`,)]+)", re.I),
)
_FRONTMATTER_KEYS = ("workload_name", "workload")
# Shell and template fragments in prose are not names: `'$W'`, `${NAME}`, `(auto-generated`.
_FRAGMENT_RE = re.compile(r"[$(){}<>*\[\]]|^[^A-Za-z0-9]")


def is_fragment(text: str) -> bool:
    """A captured "name" that is a shell variable, a template or a parenthesised remark."""
    return bool(_FRAGMENT_RE.search(text))


def _user_prefix(ctx, model_dir: str) -> str | None:
    """USER_PREFIX from the option, else from the model-level program's explicit line."""
    configured = ctx.config.option("WKL001", "user-prefix")
    if configured:
        return str(configured)
    cache = lint_cache(ctx, "user-prefix")
    if model_dir not in cache:
        program = ctx.root / "wiki" / "experiments" / model_dir / "program.md"
        try:
            cache[model_dir] = explicit_user_prefix(read_text(program))
        except PageError:  # a FIFO, /dev/zero or bad bytes: no prefix from it (WK001 reports the page)
            cache[model_dir] = None
    return cache[model_dir]


def workload_names(info) -> list[tuple[int, str]]:
    """``(file line, name)`` of every workload name on the page (placeholders such as
    ``<workload-name>`` or ``TBD`` are not names)."""
    from wikiengine.model.experiment import is_placeholder

    found: list[tuple[int, str]] = []
    page = info.page
    for key in _FRONTMATTER_KEYS:
        value = page.frontmatter.get(key)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and item and not is_placeholder(item) and not is_fragment(item):
                line = next(
                    (n + 2 for n, ln in enumerate(page.frontmatter_text.splitlines()) if ln.startswith(f"{key}:")), 1
                )
                found.append((line, item))
    body = page.body
    if "orkload" not in body:  # most lines never name one: skip the regexes
        return found
    for offset, line in enumerate(body.splitlines()):
        if "orkload" not in line:
            continue
        for pattern in _BODY_RES:
            for match in pattern.finditer(line):
                if not is_placeholder(match.group(1)) and not is_fragment(match.group(1)):
                    found.append((page.body_line + offset, match.group(1)))
    return found


class WorkloadName(Rule):
    """## What it does
    Checks every workload name on an experiment page against the seed's convention:
    under 40 characters, matching `[a-z]([-a-z0-9]*[a-z0-9])?`, and of the form
    `<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]` for the page's lane
    (MODEL_NAME and LANE from its path) and its id.

    Scanned: frontmatter `workload_name` / `workload` (string or list); in the body
    (fenced launch commands included) `workload_name: <name>`, `workload_name = "<name>"`,
    `--workload <name>`, `**Workload**: `<name>`` and `**Workload name**: <name>`. Shell and
    template fragments are not names and are skipped: `'$W'`, `${NAME}`, `(auto-generated)`.

    USER_PREFIX is the option below, else the explicit `USER_PREFIX = <value>` line of the
    model-level `program.md`. `$USER` and git are not consulted: a lint must give the same
    answer on every machine. Without a prefix only the length, the pattern and the
    `-<MODEL_NAME>-<LANE>-v<NNN>-` part are checked.

    ## Why is this bad?
    XPK rejects names of 40 characters or more at parse time, and occupancy checks
    classify clusters by name prefix: a name that does not follow the convention is
    counted as someone else's workload, and its v-id no longer finds its page.

    ## Example
    `workload_name: demo-gemma4-tpu-v045-splash-attention-megablox` (46 characters), or
    `demo-gemma4-jax-v045-splash` on a tpu-lane page.

    Use `demo-gemma4-tpu-v045-splash-mblx`.

    ## Options
    - `user-prefix` (string): the USER_PREFIX to expect, overriding the program.
    """

    code = "WKL001"
    options = {"user-prefix": Option("str")}
    name = "workload-name"
    summary = "a workload name is 40 characters or more, breaks the name pattern, or is not <USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>"
    kinds = ("experiment",)
    reports_on = ("experiment",)
    by_lane = True  # lint/lane_parts.py

    def collect(self, info, ctx):
        """The page's workload names, ``[[line, name], ...]`` (cached with the file)."""
        return [[line, name] for line, name in workload_names(info)] or None

    def check_wiki(self, ctx):
        for info, facts in target_experiments(ctx):
            names = ctx.facts(self.code, info.rel)
            if names:
                yield from self._check(info, facts, names, ctx)

    def _check(self, info, facts, names, ctx):
        prefix = _user_prefix(ctx, facts.folder.model_dir)
        vid_match = re.fullmatch(r"v(\d+)[a-z]?", facts.exp_id or "")  # a retry v043b runs as v043-<slug>-b
        vid = int(vid_match.group(1)) if vid_match else None
        for line, name in names:
            problem = self._problem(name, prefix, facts.folder.model_name, facts.folder.name, vid, base_id(facts.exp_id or "") or None)
            if problem:
                yield self.finding(info.rel, line, f"workload name {name!r}: {problem}")

    @staticmethod
    def _problem(name, prefix, model, lane, vid, exp_id) -> str | None:
        if prefix:
            return check_workload_name(name, prefix, model, lane, vid)
        if len(name) >= MAX_WORKLOAD_LEN:
            return f"{len(name)} characters (must be under {MAX_WORKLOAD_LEN})"
        if not NAME_RE.fullmatch(name):
            return "does not match [a-z]([-a-z0-9]*[a-z0-9])?"
        middle = f"-{model}-{lane}-{exp_id}-" if exp_id else f"-{model}-{lane}-v"
        if middle not in name:
            return f"does not contain {middle}"
        return None
