"""The graph side of Tensor: ``grad_fn``, ``backward``, hooks, ``retain_grad``; ``install`` attaches them.

The Tensor keeps its plain autograd state itself (``tensor.py``); these methods walk or build the graph, so
they live here, above the Tensor, and are attached once ``clgrad`` is imported (``ops.methods.install``).

A *tracked view* (the output of a differentiable view op, or a view that an in-place op wrote through)
remembers the version of its memory at which its ``grad_fn`` was right. When an in-place op on its base
or on a sibling view has changed that memory since, reading ``grad_fn`` rebuilds it as an
``AsStridedBackward0`` of the base's current node, so the view's gradient sees the change (PyTorch does
the same).
"""
from __future__ import annotations

import weakref

from . import engine
from .graph import refresh_view
from .nodes import _Handle


def _get_grad_fn(self):
    d = self.__dict__
    if "_view_version" in d and d["_view_version"] != self._storage.version:
        refresh_view(self)
    return d.get("_grad_fn")


def _set_grad_fn(self, fn) -> None:
    self.__dict__["_grad_fn"] = fn


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate d(self)/d(leaf) into each leaf's ``.grad``. ``gradient`` is needed for non-scalars."""
    engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed; returning a tensor replaces it."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = self.grad_fn
    if fn is None:
        hooks = self.__dict__.setdefault("_hooks", [])
    else:
        hooks = fn.__dict__.setdefault("_tensor_hooks", {}).setdefault(self._output_nr, [])
    hooks.append(hook)
    return _Handle(hooks, hook)


def register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs on a leaf after backward has accumulated its gradient into ``.grad``."""
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = self.__dict__.setdefault("_post_acc_hooks", [])
    hooks.append(hook)
    return _Handle(hooks, hook)


def retain_grad(self) -> None:
    """Keep ``.grad`` for this non-leaf tensor after backward (after its hooks ran, as in PyTorch)."""
    fn = self.grad_fn
    if fn is None:
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        return
    fn.__dict__.setdefault("_retains", {})[self._output_nr] = weakref.ref(self)
    self._retains_grad = True


def install(T) -> None:
    T.grad_fn = property(_get_grad_fn, _set_grad_fn)
    for fn in (backward, register_hook, register_post_accumulate_grad_hook, retain_grad):
        setattr(T, fn.__name__, fn)
