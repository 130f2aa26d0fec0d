"""Tracing: run a model once while the hook in ``autograd/function.py`` records every ``Function`` call.

The inputs are made to require gradients, so every op that depends on them takes its autograd path (a
``Function.apply``) and is seen here. A traced tensor is known by its place in the autograd graph (its
``grad_fn`` and output number, so an in-place op, which moves the target to the result's node, is followed) or,
for tensors that carry no graph (integer and bool results), by identity. Ops whose tensor arguments are all
constants (parameters, buffers, tensors made inside ``forward``) are left out when constant folding is on: their
results become constants of the exported graph.
"""
from __future__ import annotations

import math
from functools import partial

from ..autograd import function as _function
from ..autograd.grad_mode import enable_grad
from ..ops.elementwise import Elementwise
from ..tensor import is_tensor

_apply = _function.Function.apply.__func__


def flat_tensors(obj) -> list:
    """The tensors in a nested structure of tuples, lists and dicts, in order."""
    if is_tensor(obj):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in flat_tensors(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in flat_tensors(item)]
    return []


def key(t):
    """What a traced tensor is known by: its autograd node and output number, or (no node) its identity."""
    fn = t.grad_fn
    return (id(fn), t._output_nr) if fn is not None else id(t)


def unexpanded(t):
    """``t``'s shape before broadcasting (stride-0 dims as 1) if that is a dense row-major layout, else None."""
    shape = tuple(1 if st == 0 else n for n, st in zip(t._shape, t._strides))
    expect = 1
    for n, st in zip(reversed(shape), reversed(t._strides)):
        if n != 1 and st != expect:
            return None
        expect *= n
    return shape


class Node:
    """One recorded call: ``fn`` is a Function class (or a module, for a module-level symbolic)."""

    __slots__ = ("fn", "args", "kwargs", "outputs", "alt", "keys", "out_keys")

    def __init__(self, fn, args, kwargs, outputs):
        self.fn, self.args, self.kwargs, self.outputs, self.alt = fn, args, kwargs, outputs, None
        # what the tensors were known by at the call: an in-place op later moves a tensor to another node
        self.keys = {id(t): key(t) for t in flat_tensors(args) + flat_tensors(kwargs)}
        self.out_keys = tuple(key(t) if is_tensor(t) else None for t in outputs)

    @property
    def name(self) -> str:
        fn = self.fn
        if not isinstance(fn, type):
            return type(fn).__name__
        return fn.op if issubclass(fn, Elementwise) else (fn.node_name or fn.__name__)


class Trace:
    """One run of the model: the recorded nodes and the tensors they made."""

    def __init__(self, fold: bool, module_symbolic):
        self.fold = fold
        self.module_symbolic = module_symbolic  # module -> its symbolic, or None to trace inside it
        self.nodes: list[Node] = []
        self.keys: dict = {}  # key(t) -> t, for the inputs and every recorded output
        self.storages: dict = {}  # id(storage) -> the traced tensors on it
        self.inputs: list = []
        self.input_keys: list = []

    # ---- what is traced ------------------------------------------------------------------------
    def _add(self, t) -> None:
        self.keys[key(t)] = t
        self.storages.setdefault(id(t._storage), []).append(t)

    def add_input(self, t):
        """The tensor the model gets for input ``t``: float inputs require grad (so ops on them record), and
        are cloned so the model may change them in place."""
        if t.dtype.is_floating_point:
            t = t.detach().requires_grad_().clone()
        else:
            t = t.detach()
        self._add(t)
        self.inputs.append(t)
        self.input_keys.append(key(t))
        return t

    def is_traced(self, t) -> bool:
        return key(t) in self.keys or id(t._storage) in self.storages

    def base_of(self, t):
        """A traced tensor whose memory ``t`` (an untracked view: a reshape, maybe expanded) looks at in the
        same order, or None."""
        dense = unexpanded(t)
        if dense is None:
            return None
        for s in self.storages.get(id(t._storage), ()):
            if (s._offset == t._offset and s.numel() == math.prod(dense) and s.dtype is t.dtype
                    and s.is_contiguous()):
                return s
        return None

    # ---- recording -----------------------------------------------------------------------------
    def _record(self, fn, args, kwargs, out) -> None:
        tensors = flat_tensors(args) + flat_tensors(kwargs)
        if self.fold and not any(self.is_traced(t) for t in tensors):
            return  # a constant: folded into the graph as its value
        if not isinstance(fn, type):
            outputs = tuple(flat_tensors(out))  # a module's (out, (h, c)) is flattened
        else:
            outputs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        self.nodes.append(Node(fn, args, kwargs, outputs))
        for t in outputs:
            if is_tensor(t):
                self._add(t)

    def __call__(self, cls, args, kwargs):
        """The hook: run the call untraced (ops inside a Function are its own business), then record it."""
        _function.TRACER = None
        try:
            out = _apply(cls, *args, **kwargs)
        finally:
            _function.TRACER = self
        self._record(cls, args, kwargs, out)
        return out

    def _module_call(self, module, forward, *args, **kwargs):
        _function.TRACER = None
        try:
            out = forward(*args, **kwargs)
        finally:
            _function.TRACER = self
        self._record(module, args, kwargs, out)
        return out

    def run(self, model, args, kwargs):
        """Call ``model(*args, **kwargs)`` with recording on; returns its output."""
        patched = []
        for m in model.modules():
            if self.module_symbolic(m) is not None:
                m.__dict__["forward"] = partial(self._module_call, m, m.forward)
                patched.append(m)
        if _function.TRACER is not None:
            raise RuntimeError("clgrad.onnx.export() was called while another export is tracing")
        _function.TRACER = self
        try:
            with enable_grad():
                return model(*args, **kwargs)
        finally:
            _function.TRACER = None
            for m in patched:
                m.__dict__.pop("forward", None)
