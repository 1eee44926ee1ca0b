"""The loops several rules share, so that a rule writes only its own check.

- :func:`target_experiments`, :func:`target_kernel_experiments`: for a cross-file rule, the
  target pages of that kind whose facts could be read (the others are EXP001's and WK001's
  findings), with their facts;
- :class:`ExperimentPageRule`: a page rule on those experiment pages, which writes
  ``check_facts``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import experiment_facts
from wikiengine.lint.rules._kernels import kernel_facts
from wikiengine.model.experiment import ExperimentPage

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from wikiengine.lint.context import LintContext, PageInfo


def pages_with_facts(ctx: LintContext, kind: str, read_facts: Callable[[PageInfo, LintContext], Any]) -> Iterator:
    """``(info, facts)`` of each target page of ``kind`` whose facts ``read_facts`` could read."""
    for info in ctx.target_pages(kind):
        facts = read_facts(info, ctx)
        if facts is not None:
            yield info, facts


def target_experiments(ctx: LintContext) -> Iterator[tuple[PageInfo, ExperimentPage]]:
    """``(info, facts)`` of each target experiment page whose facts could be read."""
    return pages_with_facts(ctx, "experiment", experiment_facts)


def target_kernel_experiments(ctx: LintContext) -> Iterator[tuple[PageInfo, ExperimentPage]]:
    """``(info, facts)`` of each target kernel experiment page whose facts could be read."""
    return pages_with_facts(ctx, "kernel-experiment", kernel_facts)


class ExperimentPageRule(Rule):
    """A page rule on the experiment pages whose facts could be read (EXP001 and WK001 report
    the others): a rule writes ``check_facts``."""

    kinds = ("experiment",)

    def check_page(self, info: PageInfo, ctx: LintContext):
        facts = experiment_facts(info, ctx)
        if facts is not None:
            yield from self.check_facts(info, facts, ctx)

    def check_facts(self, info: PageInfo, facts: ExperimentPage, ctx: LintContext):
        return ()
