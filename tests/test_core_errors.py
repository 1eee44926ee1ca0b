"""core.errors: one root, typed families, and one table of exit codes, each value with one meaning."""

from __future__ import annotations

import importlib

import pytest

from wikiengine._cli import main as cli
from wikiengine.core import errors
from wikiengine.core.errors import ExitCode, WikiError, exit_code_of

# Every module that defines an error class: imported so that the walk below sees them all.
MODULES = (
    "wikiengine.core.git", "wikiengine.model.memory", "wikiengine.step.txn", "wikiengine.step.kernel.close",
    "wikiengine.step.lane.close", "wikiengine.step.lane.start", "wikiengine.step.relay.act",
    "wikiengine.executors.compute", "wikiengine.executors.store", "wikiengine.executors.http_policy",
    "wikiengine.executors.clean_room", "wikiengine.executors.registry", "wikiengine.executors.lane_backend",
    "wikiengine.executors.kaggle_compute", "wikiengine.executors.gke.dispatch", "wikiengine.executors.gke.kube",
    "wikiengine.executors.hub_store", "wikiengine.training.checkpoint", "wikiengine.training.config",
    "wikiengine.training.launch", "wikiengine.training.autoresearch_knobs", "wikiengine.training.plan",
    "wikiengine.training.data", "wikiengine.training.session",
)


def subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *subclasses(sub)}
    return found


def test_each_exit_code_has_one_name_and_the_fixed_ones_keep_their_numbers():
    assert len(ExitCode.__members__) == len(list(ExitCode)) == len({int(c) for c in ExitCode})  # no alias
    assert (ExitCode.OK, ExitCode.FINDINGS, ExitCode.BAD_INPUT, ExitCode.INTERNAL, ExitCode.INTERRUPTED) == (
        0, 1, 2, 70, 130)
    assert (ExitCode.REFUSED, ExitCode.REVIVED) == (3, 4)  # pinned remote code and deployed units use them


def test_every_error_of_the_project_is_a_wiki_error_and_only_the_families_choose_a_status():
    for name in MODULES:
        importlib.import_module(name)
    family_modules = {"wikiengine.core.errors"}
    for cls in subclasses(WikiError):
        assert ExitCode(cls.exit_code) in ExitCode
        if "exit_code" in vars(cls):
            assert cls.__module__ in family_modules, f"{cls.__module__}.{cls.__name__} sets its own exit status"
    roots = {c for c in subclasses(Exception) if c.__module__.startswith("wikiengine.")
             and not issubclass(c, WikiError)}
    # the generated validators' exceptions are the fastjsonschema contract, caught as ValueError;
    # WordingDeferred is a lint worker's signal to hand a page back to the parent, caught in
    # lint/runner.py around the page's analysis and never raised out of it
    assert {c.__name__ for c in roots} <= {"JsonSchemaValueException", "JsonSchemaValuesException", "WordingDeferred"}


def _families():
    from wikiengine.executors.compute import CapacityError, ComputeError, ComputeUnavailableError
    from wikiengine.executors.gke.kube import KubeUnavailable
    from wikiengine.executors.http_policy import DeadlineExceeded
    from wikiengine.executors.store import StaleParentError, StoreUnavailableError
    from wikiengine.step.kernel.close import CloseRefused
    from wikiengine.step.lane.close import StopRefused
    from wikiengine.step.lane.start import NoFreeClusters
    from wikiengine.training.config import ConfigError

    return [
        (WikiError("bad"), ExitCode.BAD_INPUT),
        (ConfigError("bad"), ExitCode.BAD_INPUT),
        (ComputeError("refused"), ExitCode.BAD_INPUT),
        (StaleParentError("moved"), ExitCode.BAD_INPUT),
        (CloseRefused("no"), ExitCode.REFUSED),
        (StopRefused("no"), ExitCode.REFUSED),
        (errors.LockBusy("held"), ExitCode.BUSY),
        (NoFreeClusters("none"), ExitCode.BUSY),
        (CapacityError("full"), ExitCode.BUSY),
        (ComputeUnavailableError("5xx"), ExitCode.UNAVAILABLE),
        (KubeUnavailable("5xx"), ExitCode.UNAVAILABLE),
        (StoreUnavailableError("down"), ExitCode.UNAVAILABLE),
        (DeadlineExceeded("late"), ExitCode.UNAVAILABLE),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED),
        (BrokenPipeError(), ExitCode.OK),
        (RuntimeError("a bug"), ExitCode.INTERNAL),
    ]


@pytest.mark.parametrize("index", range(len(_families())))
def test_the_cli_maps_each_typed_error_to_its_status(monkeypatch, capsys, index):
    exc, status = _families()[index]
    from wikiengine._cli import resolve

    def handler(args):
        raise exc

    monkeypatch.delenv("WIKI_TRACEBACK", raising=False)
    monkeypatch.setattr(resolve, "run", handler)
    assert exit_code_of(exc) == status
    assert cli.main(["resolve"]) == status
    err = capsys.readouterr().err
    if isinstance(exc, WikiError):
        assert err == f"error: {exc}\n"
    elif status == ExitCode.INTERNAL:
        assert err.count("\n") == 1 and "internal error: RuntimeError: a bug" in err


def test_a_value_error_mixin_is_still_caught_as_one():
    from wikiengine.training.launch import BootstrapError

    with pytest.raises(ValueError):
        raise BootstrapError("pins are invalid")
    assert str(BootstrapError("pins are invalid")) == "pins are invalid"
