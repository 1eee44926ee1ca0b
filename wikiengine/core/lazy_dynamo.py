"""torch's ``torch._dynamo`` imported only once something compiles, never by an eager call.

Importing dynamo costs about 1.4 s of CPU, as long again as torch. torch imports it at the
first call of every function it wraps to keep a compiling frame out (``torch._disable_dynamo``:
a dispatch mode's ``__torch_dispatch__``, an optimizer's ``add_param_group``, ``zero_grad``,
``state_dict``, ``load_state_dict``), and at every ``Optimizer.step()`` (its ``_use_grad``
wrapper calls ``torch._dynamo.graph_break()``). Until something loads dynamo no frame can be
compiling: those guards and graph breaks do nothing, so an eager process (a training step)
runs the wrapped function as it is, and torch's own wrapper once dynamo is loaded. A wrapper
of another layout than the one recognised here is called as it is (it imports dynamo).

The kernel verifier does the same for a custom op's kernel in its own file
(``wikiengine/step/kernel/verify.py`` runs alone on a pod, importing nothing of wikiengine).
"""

from __future__ import annotations

import functools
import sys

DYNAMO = "torch._dynamo"

# what torch's `_use_grad` (torch/optim/optimizer.py) reads: its grad mode and the graph breaks
# around the step; a wrapper that reads anything else is another layout, called as it is
_USE_GRAD_NAMES = frozenset({"torch._dynamo", "_dynamo", "cast", "Optimizer", "is_grad_enabled", "set_grad_enabled",
                             "defaults", "graph_break"})
_DISABLE_DYNAMO_METHODS = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def _until_dynamo_loads(eager, torch_own):
    """``eager`` while ``torch._dynamo`` is not loaded, ``torch_own`` once it is."""
    @functools.wraps(torch_own)
    def call(*args, **kwargs):
        return (torch_own if DYNAMO in sys.modules else eager)(*args, **kwargs)

    return call


def eager_until_dynamo(wrapper):
    """A ``torch._disable_dynamo`` wrapper as a plain call of the function it wraps until dynamo is
    loaded, the wrapper itself after; a function of another layout as it is."""
    fn = getattr(wrapper, "__wrapped__", None)
    code = getattr(wrapper, "__code__", None)
    if fn is None or code is None or code.co_name != "inner" or not code.co_filename.endswith("_compile.py"):
        return wrapper
    return _until_dynamo_loads(fn, wrapper)


def _use_grad_layer(step):
    """torch's ``_use_grad`` wrapper in ``step``'s chain of wrappers, or None for another layout."""
    while step is not None:
        code = getattr(step, "__code__", None)
        if code is not None and code.co_name == "_use_grad":
            return step if set(code.co_names) <= _USE_GRAD_NAMES and hasattr(step, "__wrapped__") else None
        step = getattr(step, "__wrapped__", None)
    return None


def _eager_step(torch_step):
    """``torch_step`` (an ``Optimizer.step``) without the dynamo import of its ``_use_grad``: the
    same grad mode around the same body until dynamo is loaded, torch's ``_use_grad`` after."""
    use_grad = _use_grad_layer(torch_step)
    if use_grad is None:
        return torch_step
    body = use_grad.__wrapped__

    def step(self, *args, **kwargs):
        import torch

        previous = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(self.defaults["differentiable"])
            return body(self, *args, **kwargs)
        finally:
            torch.set_grad_enabled(previous)

    return _until_dynamo_loads(step, use_grad)


@functools.cache
def eager_optimizer(optimizer_class: type) -> type:
    """A subclass of a torch optimizer that imports no dynamo until something else does: torch's
    own step, state and hooks, each dynamo guard a plain call until dynamo is loaded. It keeps the
    class name (torch's profiler names the step by it)."""
    members = {"__module__": optimizer_class.__module__, "__qualname__": optimizer_class.__qualname__,
               "__doc__": optimizer_class.__doc__, "step": _eager_step(optimizer_class.step)}
    for name in _DISABLE_DYNAMO_METHODS:
        members[name] = eager_until_dynamo(getattr(optimizer_class, name))
    return type(optimizer_class.__name__, (optimizer_class,), members)
