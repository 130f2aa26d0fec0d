"""What a symbolic function sees (``Call``) and the table symbolic functions are registered in.

A symbolic function ``fn(g, c)`` gets the ``GraphBuilder`` and one recorded call, adds ONNX nodes, and returns
the ONNX names of the call's outputs (one name, or a list with one entry per output; None for an output it does
not export). Functions are registered per Function class (variants, which are subclasses, find their base), per
elementwise op name, or per module class (module-level symbolics, which see the module's call as one node).
"""
from __future__ import annotations

from functools import partial

from .. import dtypes as D
from ..ops import pointwise as P
from ..ops.elementwise import Elementwise
from ..registry.elementwise import OPS
from ..tensor import is_tensor
from .errors import SymbolicValueError, UnsupportedOperatorError

SYMBOLICS: dict = {}  # Function class -> fn
ELEMENTWISE: dict = {}  # registry op name -> fn(g, c, xs) with xs the operands as ONNX names of the compute dtype
MODULES: dict = {}  # module class -> (accepts(module) -> bool, fn)
MIN_OPSET: dict = {}  # name -> the lowest opset the symbolic supports


def register(*classes, opset: int | None = None):
    def deco(fn):
        for cls in classes:
            SYMBOLICS[cls] = fn
            if opset:
                MIN_OPSET[_name(cls)] = opset
        return fn
    return deco


def elementwise(*names, opset: int | None = None):
    def deco(fn):
        for name in names:
            ELEMENTWISE[name] = fn
            if opset:
                MIN_OPSET[name] = opset
        return fn
    return deco


def register_module(cls, accepts=lambda m: True):
    def deco(fn):
        MODULES[cls] = (accepts, fn)
        return fn
    return deco


def _name(cls) -> str:
    return getattr(cls, "node_name", None) or cls.__name__


def supported() -> list:
    names = {_name(c) for c in SYMBOLICS} | set(ELEMENTWISE) | {c.__name__ for c in MODULES}
    return sorted(names)


def module_symbolic(module):
    for cls in type(module).__mro__:
        entry = MODULES.get(cls)
        if entry is not None:
            return entry[1] if entry[0](module) else None
    return None


def lookup(node, opset: int):
    """The symbolic function of a recorded node; UnsupportedOperatorError names the op when there is none."""
    fn = node.fn
    if not isinstance(fn, type):
        return module_symbolic(fn)
    if issubclass(fn, Elementwise):
        found = ELEMENTWISE.get(fn.op)
        found = found and partial(run_elementwise, fn=found)
    else:
        found = next((SYMBOLICS[k] for k in fn.__mro__ if k in SYMBOLICS), None)
        if found is None and callable(getattr(fn, "symbolic", None)):
            found = _user_symbolic
    if found is None:
        raise UnsupportedOperatorError(f"clgrad::{node.name}", opset, None, supported())
    need = MIN_OPSET.get(node.name) or MIN_OPSET.get(_name(fn))
    if need and opset < need:
        raise UnsupportedOperatorError(f"clgrad::{node.name}", opset, need)
    return found


def run_elementwise(g, c, fn):
    """Operands to ONNX values of the compute dtype, ``fn(g, c, xs, compute)``, then a cast to the output dtype."""
    op = c.node.fn.op
    rec = OPS[op]
    operands = c.node.args
    compute = c.kw("compute")
    if compute is None:
        compute = P.compute_dtype(op, [x for k, x in enumerate(operands) if k not in rec.bool_args], c.out().device)
    xs = []
    for k, x in enumerate(operands):
        dt = D.bool if k in rec.bool_args else compute
        xs.append(c.tensor(k, dt) if is_tensor(x) else g.scalar(x, dt))
    y = fn(g, c, xs, compute)
    return g.cast(y, D.bool if rec.predicate else compute, c.out_dtype())


def _user_symbolic(g, c):
    """A user Function with a static ``symbolic(g, *args)`` (PyTorch's convention): tensors come as value names,
    and ``g.op(...)`` adds nodes."""
    args = [c.tensor(i) if c.is_tensor(i) else c.static(i) for i in range(len(c.node.args))]
    return c.node.fn.symbolic(g, *args)


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an argument without a plain equality: treat as different
        return a is b


class Call:
    """One recorded call as its symbolic function sees it; ``alt`` is the same call in the second run."""

    def __init__(self, g, node):
        self.g, self.node, self.alt = g, node, node.alt
        self.name = f"clgrad::{node.name}"

    def _alt_arg(self, i):
        return self.alt.args[i] if self.alt is not None else self.node.args[i]

    def is_tensor(self, i) -> bool:
        return hasattr(self.node.args[i], "_storage")

    def tensor(self, i, dtype=None):
        """Argument ``i`` as an ONNX value name (cast to ``dtype`` if given); None stays None."""
        t = self.node.args[i]
        if t is None:
            return None
        name = self.g.value(t, self._alt_arg(i) if self.alt is not None else None, self.name,
                            self.node.keys.get(id(t)))
        return name if dtype is None else self.g.cast(name, t.dtype, dtype)

    def static(self, i):
        """Argument ``i``, a Python value that must not depend on a dynamic axis."""
        a, b = self.node.args[i], self._alt_arg(i)
        if not _same(a, b):
            raise SymbolicValueError(f"{self.name}: argument {a!r} depends on a dynamic axis (it was {b!r} when the "
                                     "inputs were resized); clgrad.onnx cannot export it")
        return a

    def both(self, i) -> tuple:
        """Argument ``i`` in both runs."""
        return self.node.args[i], self._alt_arg(i)

    def arg(self, i):
        return self.node.args[i]

    def kw(self, name, default=None):
        return self.node.kwargs.get(name, default)

    def dtype(self, i):
        return self.node.args[i].dtype

    def shapes(self, i) -> tuple:
        """The shapes of tensor argument ``i`` in both runs."""
        return tuple(self.node.args[i].shape), tuple(self._alt_arg(i).shape)

    def out(self, k: int = 0):
        return self.node.outputs[k]

    def out_shapes(self, k: int = 0) -> tuple:
        a = tuple(self.node.outputs[k].shape)
        return a, (tuple(self.alt.outputs[k].shape) if self.alt is not None else a)

    def out_dtype(self, k: int = 0):
        return self.node.outputs[k].dtype
