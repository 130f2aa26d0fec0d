"""``clgrad.compile``: a function's chain of elementwise ops as one kernel.

The first call with a new signature (the tensor arguments' dtypes, shapes, strides and devices, the other
arguments' values, grad mode and the default dtype) runs the function eagerly and watches what it launches. If it
launched only elementwise ops, all computing in float32 or float64, each reading the function's tensor arguments,
Python scalars or results of earlier ops in the chain (whole, at the chain's shape), and it returned one of those
results, later calls with that signature run one generated kernel: the ops as statements in their order, so a
multiply-add rounds exactly as the separate kernels do (bit-identical results) while the intermediates never
reach memory (``a * b + c`` on 16M floats moves 16 bytes per element instead of 28).

Everything else runs eagerly, every time, with eager results: reductions, products, indexing, random numbers,
host reads, in-place writes, integer or bool ops, tensors that require grad while grad mode is on, the cpu device,
and functions returning several tensors. ``fullgraph=True`` raises instead of falling back. Like
``torch.jit.trace``, a trace bakes in what the function computed from anything but its arguments (globals, a
closure's scalars); tensors the function did not receive as arguments are never baked in (such a function stays
eager). A ``nn.Module`` is returned unchanged (its forward has products and convolutions: nothing to fuse).

    >>> fused = clgrad.compile(lambda a, b, c: (a * b + c).relu())
    >>> fused(x, y, z)  # first call: eager, traced; later calls: one kernel
"""
from __future__ import annotations

import hashlib
import threading
import weakref

from . import backends
from . import dtypes as D
from .autograd.grad_mode import is_grad_enabled
from .backends.opencl import programs
from .captured import CapturedModule, CapturedStep
from .nn.modules.module import Module
from .registry.elementwise import OPS
from .tensor import Tensor, is_tensor

__all__ = ["compile"]

_EAGER = object()  # a signature whose calls run eagerly
_UNTRACED = object()  # a first call that ran while another trace was active: try again next time
MAX_INPUTS = 8  # the elementwise template's operand letters a..h
MAX_CACHE = 64  # signatures kept per compiled function


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False):
    """``torch.compile``'s signature: ``compile(fn)``, ``@compile`` or ``@compile(fullgraph=True)``.
    ``mode="reduce-overhead"`` captures the whole call and replays it (``captured.py``, CUDA graphs' analogue: a
    training step, or a module's inference forward); other modes fuse elementwise chains. ``dynamic``, ``backend``
    and ``options`` are accepted and ignored (there is one backend)."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if disable:
        return model
    if mode == "reduce-overhead":  # whole-step capture and replay (captured.py)
        if isinstance(model, Module):
            return CapturedModule(model, fullgraph)
        if not callable(model):
            raise RuntimeError(f"compile(): expected a callable or an nn.Module, got {type(model).__name__}")
        return CapturedStep(model, fullgraph)
    if isinstance(model, Module):
        return model
    if not callable(model):
        raise RuntimeError(f"compile(): expected a callable or an nn.Module, got {type(model).__name__}")
    return _Compiled(model, fullgraph)


class _Trace:
    """What a traced call launched: elementwise launches in order (op, out, inputs, compute), all launches (any
    other kernel, from this thread or another, makes the counts differ and the trace unusable), host transfers."""

    def __init__(self):
        self.elementwise, self.launches, self.transfers = [], 0, 0


class _Compiled:
    def __init__(self, fn, fullgraph: bool):
        self.fn, self.fullgraph = fn, fullgraph
        self.plans: dict = {}
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        key = _signature(args, kwargs)
        plan = self.plans.get(key) if key is not None else _EAGER
        if plan is not None and plan is not _EAGER:
            return plan.run(args)
        if plan is _EAGER:
            if self.fullgraph:
                raise RuntimeError("compile(fullgraph=True): the function is not a chain of elementwise ops on its "
                                   "tensor arguments (see clgrad.compiler's docstring)")
            return self.fn(*args, **kwargs)
        result, plan = self._trace(args, kwargs)
        if plan is _UNTRACED:
            return result  # another trace was running (another thread, or a compiled call inside this one)
        if len(self.plans) >= MAX_CACHE:
            self.plans.clear()
        self.plans[key] = plan or _EAGER
        if plan is None and self.fullgraph:
            raise RuntimeError("compile(fullgraph=True): the function is not a chain of elementwise ops on its "
                               "tensor arguments (see clgrad.compiler's docstring)")
        return result

    def _trace(self, args, kwargs):
        if not _tracer_lock.acquire(blocking=False):  # one trace at a time: this call just runs
            return self.fn(*args, **kwargs), _UNTRACED
        try:
            trace = programs.tracing = _Trace()
            result = self.fn(*args, **kwargs)
        finally:
            programs.tracing = None
            _tracer_lock.release()
        try:
            return result, _Plan.build(trace, args, result)
        except _NotFusable:
            return result, None


_tracer_lock = threading.Lock()


class _NotFusable(Exception):
    pass


def _signature(args, kwargs):
    """A hashable key of everything a trace depends on besides tensor values; None when some argument can't be
    keyed (then calls run eagerly)."""
    parts = [is_grad_enabled(), D.get_default_dtype()]
    try:
        for x in (*args, *sorted(kwargs.items())):
            if is_tensor(x):
                if x.device.type == "cpu":
                    return None  # a 0-dim cpu tensor next to device tensors travels as a scalar value: never trace
                parts.append(("T", x.dtype, x._shape, x._strides, x.device, x.requires_grad))
            else:
                hash(x)
                parts.append(("V", type(x), x))
        return tuple(parts)
    except TypeError:
        return None


class _Plan:
    """One fused kernel for a traced signature: leaves are views of the arguments (``(arg, shape, strides,
    offset delta)``) or Python scalars, statements compute the chain's live ops."""

    def __init__(self, leaves, statements, result, compute, shape, device):
        self.leaves, self.statements, self.result = leaves, statements, result
        self.compute, self.shape, self.device = compute, shape, device
        digest = hashlib.sha256("\n".join(statements).encode()).hexdigest()[:12]
        self.name = f"fused_{digest}"
        self.launch = None
        _LIVE.add(self)

    @staticmethod
    def build(trace: _Trace, args, result) -> _Plan:
        recs = trace.elementwise
        if trace.transfers or trace.launches != len(recs) or len(recs) < 2 or not is_tensor(result):
            raise _NotFusable
        if result.requires_grad:
            raise _NotFusable  # autograd recorded the chain: a replay would return a tensor without its graph
        compute = recs[0][3]
        if compute not in (D.float32, D.float64) or result.device.type != "opencl":
            raise _NotFusable
        arg_of = {id(a._storage): (i, a) for i, a in enumerate(args) if is_tensor(a)}
        if len(arg_of) != sum(is_tensor(a) for a in args):
            raise _NotFusable  # arguments sharing memory: a replay could not tell which one a read came from
        shape = tuple(recs[0][1]._shape)
        produced, nodes, leaves = {}, [], {}
        for op, out, inputs, comp in recs:
            entry = OPS[op]
            if comp is not compute or out.dtype is not compute or entry.predicate or entry.bool_args:
                raise _NotFusable
            if (id(out._storage) in arg_of or id(out._storage) in produced or tuple(out._shape) != shape
                    or out._offset or not out.is_contiguous()):
                raise _NotFusable  # in place, or not the chain's shape
            operands = [_operand(x, produced, arg_of, leaves) for x in inputs]
            nodes.append((entry.c, operands))
            produced[id(out._storage)] = (len(nodes) - 1, out)
        last = produced.get(id(result._storage))
        if last is None or not result._same_view(last[1]):
            raise _NotFusable
        if len(leaves) > MAX_INPUTS:
            raise _NotFusable
        statements = _statements(nodes, last[0], leaves)
        order = sorted(leaves.items(), key=lambda kv: kv[1])
        return _Plan([k for k, _ in order], statements, f"t{last[0]}", compute, shape, result.device)

    def run(self, args):
        inputs = []
        for leaf in self.leaves:
            if leaf[0] == "scalar":
                inputs.append(leaf[1])
            else:
                _, i, lshape, strides, delta = leaf
                a = args[i]
                inputs.append(Tensor._make(a._storage, a.dtype, lshape, strides, a._offset + delta))
        out = Tensor._empty(self.shape, self.compute, self.device)
        if out.numel():
            if self.launch is None:
                self.launch = backends.get(self.device).fused_launcher(
                    self.name, self.result, tuple(self.statements), out, inputs, self.compute)
            self.launch(out, inputs)
        return out


_LIVE: weakref.WeakSet = weakref.WeakSet()  # plans holding launchers, dropped when kernels go stale


def _drop_launchers() -> None:
    for plan in list(_LIVE):
        plan.launch = None


programs.add_cache_listener(_drop_launchers)  # launchers hold kernels and queues (the profiler swaps both)


def _operand(x, produced, arg_of, leaves):
    """("t", node) for a chain result read whole, ("l", leaf) for an argument's view or a scalar."""
    if not is_tensor(x):
        key = ("scalar", x)
    elif id(x._storage) in produced:
        node, out = produced[id(x._storage)]
        if not x._same_view(out):
            raise _NotFusable  # a chain result read broadcast or as a view
        return ("t", node)
    elif id(x._storage) in arg_of:
        i, a = arg_of[id(x._storage)]
        key = ("arg", i, tuple(x._shape), tuple(x._strides), x._offset - a._offset)
    else:
        raise _NotFusable  # a tensor the function did not receive: its value would be baked in
    if key not in leaves:
        leaves[key] = len(leaves)
    return ("l", leaves[key])


def _statements(nodes, last: int, leaves) -> list:
    """C statements for the nodes ``last`` depends on: leaves copied out of the operand letters first (so an op's
    own a, b, c never shadow what it reads), then one block per op, its table expression over its operands."""
    live, stack = set(), [last]
    while stack:
        k = stack.pop()
        if k not in live:
            live.add(k)
            stack += [j for kind, j in nodes[k][1] if kind == "t"]
    letters = "abcdefgh"
    out = [f"const T l{k} = {letters[k]};" for k in range(len(leaves))]
    for k in sorted(live):
        expr, operands = nodes[k]
        binds = ", ".join(f"{letters[p]} = {'t' if kind == 't' else 'l'}{j}" for p, (kind, j) in enumerate(operands))
        out.append(f"T t{k}; {{ const T {binds}; t{k} = {expr}; }}")
    return out
