"""PRG002."""

from __future__ import annotations

from wikiengine.lint.rule import Rule


class ProgramConfigSchema(Rule):
    """## What it does
    Resolves the program cascade of every `program.md` (root, then each level down to
    it) and validates the resolved `## Config` yaml block against its area's schema
    (`schema/program-config.schema.json`, or `run-config` for training runs). The
    finding points at the key, in the file whose block is in effect.

    ## Why is this bad?
    The config block is read by the engine after inheritance: a child that overrides
    `## Config` replaces the whole block, so a value that was valid at the root can go
    missing or wrong in a lane, and nothing notices until a wake fails.

    ## Example
    ````markdown
    ## Config

    ```yaml
    wake_interval_s: 30
    ```
    ````
    Use a value the schema allows:
    ````markdown
    ## Config

    ```yaml
    wake_interval_s: 300
    ```
    ````

    ## Options
    None (the additive marker comes from `[tool.wiki] additive-marker`).
    """

    code = "PRG002"
    name = "program-config-schema"
    summary = "a resolved config block does not validate against its schema"
    reports_on = ("program",)

    def check_wiki(self, ctx):
        from wikiengine.core.errors import WikiError
        from wikiengine.model.cascade import resolve
        from wikiengine.model.targets import target_for_path

        seen = set()
        targets = set(ctx.targets)
        for info in _programs_to_check(ctx):
            if info.error is not None:
                continue  # WK001 reports it
            try:
                target = target_for_path(ctx.root, info.path.parent)
                chain = {level.program.relative_to(ctx.root).as_posix() for level in target.levels}
                if not chain & targets:
                    continue  # its findings could only land on files that are not reported
                program = resolve(target, additive_marker=ctx.config.additive_marker, validate=False)
                if program.config_origin is not None and not _valid(program.config, target.area.config_schema, ctx):
                    # only now pay for jsonschema, to say which key on which line
                    resolve(target, additive_marker=ctx.config.additive_marker)
            except WikiError as err:
                if not err.line or err.message.startswith("duplicate section"):
                    continue  # outside an area, no root program, or PRG001's duplicate
                rel = _relative(ctx.root, err.path)
                if not ctx.exists(rel) or ctx.info(rel).error is not None:
                    continue  # an unreadable program is WK001's
                if (rel, err.line, err.message) not in seen:
                    seen.add((rel, err.line, err.message))
                    yield self.finding(rel, err.line, f"config block: {err.message}")


def _programs_to_check(ctx):
    """Every program of the wiki, or in a PATH run only those at or below a target
    program (a cascade's files are the program and its ancestors): a run on five
    experiment pages checks none and classifies no file."""
    if ctx.targets is ctx.files:
        return ctx.pages("program")
    from wikiengine.lint.kinds import kind_of

    found = set()
    for rel in ctx.targets:
        if kind_of(rel) == "program":
            below = ctx.files_under(rel.rsplit("/", 1)[0] + "/")
            found.update(r for r in below if r.endswith("/program.md") and kind_of(r) == "program")
    return [ctx.info(rel) for rel in sorted(found)]


def _valid(config: dict, schema: str, ctx) -> bool:
    from wikiengine.core.validators import compiled

    try:
        compiled(schema)(config)
    except ValueError:
        return False
    return True


def _relative(root, path) -> str:
    """``path`` of a cascade error as a posix path relative to ``root``; a relative path
    is already relative to the root (never to the current directory)."""
    from pathlib import Path

    if path is None:
        return ""
    full = Path(path)
    if not full.is_absolute():
        full = Path(root) / full
    try:
        return full.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)
