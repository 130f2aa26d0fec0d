"""The graph's nodes: ``Node``, the leaf sink ``AccumulateGrad``, saved tensors, and ``FunctionCtx`` (what a
``Function``'s ``forward`` and ``backward`` receive, and what a recorded call becomes)."""
from __future__ import annotations

import re

from ..tensor import is_tensor

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward."
)

# anomaly mode is process-wide, as in PyTorch: "enabled" records forward tracebacks, "check_nan" checks
# every gradient a backward returns
ANOMALY = {"enabled": False, "check_nan": True}


class Node:
    """A node of the backward graph. ``next_functions`` holds (node, output_nr) for each tensor input of the
    forward call, as PyTorch's does; ``_edges`` has one entry per forward argument (None for non-tensors),
    matching the gradients backward returns."""

    next_functions: tuple = ()
    _edges: tuple = ()
    _input_meta: tuple = ()  # (shape, dtype, device) of each forward argument that is a tensor, else None
    _qualified = False  # PyTorch prints its C++ nodes with their namespace: 'torch::autograd::CopySlices'

    def name(self) -> str:
        name = type(self).__name__
        return f"clgrad::autograd::{name}" if self._qualified else name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward; it may return new grad_inputs."""
        hooks = self.__dict__.setdefault("_post_hooks", [])
        hooks.append(fn)
        return _Handle(hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node's backward; it may return new grad_outputs."""
        hooks = self.__dict__.setdefault("_pre_hooks", [])
        hooks.append(fn)
        return _Handle(hooks, fn)


class _Handle:
    def __init__(self, hooks: list, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


class AccumulateGrad(Node):
    """The sink for a leaf: adds the incoming gradient into ``variable.grad``. The leaf refers to it only
    weakly (see ``graph.gradient_edge``), so leaf and accumulator form no reference cycle."""

    _qualified = True

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()


class SavedTensor:
    """A tensor saved for backward plus its version at save time, to catch later in-place changes.

    An output of the node itself is kept as a bare alias of its memory (no ``grad_fn``), so the node and
    its output don't refer to each other: otherwise each such pair would be a reference cycle that only
    the garbage collector can free. ``unpack`` re-attaches the node, so double backward still works.
    """

    __slots__ = ("tensor", "version", "output_nr")

    def __init__(self, tensor, output_nr=None):
        if output_nr is not None:
            tensor = type(tensor)._make(tensor._storage, tensor.dtype, tensor._shape, tensor._strides,
                                        tensor._offset)
        self.tensor = tensor
        self.version = tensor._storage.version if tensor is not None else 0
        self.output_nr = output_nr

    def unpack(self, node: Node):
        t = self.tensor
        if t is None:
            return None
        if t._storage.version != self.version:
            raise RuntimeError(_modified_message(t, node if self.output_nr is not None else None,
                                                 self.output_nr, self.version))
        if self.output_nr is not None:
            t = t._view(t._shape, t._strides)
            t.grad_fn, t._output_nr = node, self.output_nr
        return t


def _short_name(node) -> str:
    """PyTorch names a node in this message without its ``Backward<N>`` suffix: ``ExpBackward0`` -> ``Exp``."""
    return re.sub(r"Backward\d*$", "", node.name())


def _modified_message(t, node, output_nr, expected) -> str:
    if node is None and t.grad_fn is not None:  # an input: named by what produces it now
        node, output_nr = t.grad_fn, t._output_nr
    which = f", which is output {output_nr} of {_short_name(node)}," if node is not None else ""
    if ANOMALY["enabled"]:
        hint = ("the backtrace further above shows the operation that failed to compute its gradient. The "
                "variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("enable anomaly detection to find the operation that failed to compute its gradient, with "
                "clgrad.autograd.set_detect_anomaly(True, check_nan=False).")
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{t.type()} {list(t.shape)}]{which} is at version {t._storage.version}; expected version "
            f"{expected} instead. Hint: {hint}")


class FunctionCtx:
    """What ``forward`` and ``backward`` receive as ``ctx``. Graph nodes are ctx objects."""

    needs_input_grad: tuple = ()
    materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not is_tensor(t):
                raise TypeError("save_for_backward can only save variables, but argument 0 is of type "
                                f"{type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        saved = self.__dict__.get("_saved")
        if saved is None:
            if self.__dict__.get("_freed"):
                raise RuntimeError(_FREED)
            return tuple(self.__dict__.get("_to_save", ()))  # inside forward, before the node is wired
        return tuple(s.unpack(self) for s in saved)

    def _release(self) -> None:
        """Drop the saved tensors once backward no longer needs them. A node that saved none can run again,
        as in PyTorch (a second backward through ``(a + b).sum()`` works; through ``a.exp()`` it raises)."""
        saved = self.__dict__.get("_saved")
        if saved and any(s.tensor is not None for s in saved):
            self._saved = None
            self._freed = True


class BackwardCFunction(FunctionCtx, Node):
    """Base of the per-Function node classes (``MulBackward0``, ``MyReLUBackward``)."""

    _forward_cls: type

    def apply(self, *grads):
        return self._forward_cls.backward(self, *grads)
