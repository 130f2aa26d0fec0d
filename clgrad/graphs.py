"""Whole-step capture and replay on OpenCL: ``torch.cuda.CUDAGraph`` / ``torch.cuda.graph`` for clgrad.

    g = clgrad.opencl.CLGraph()
    static_x = clgrad.zeros(64, 784, device="opencl")
    for _ in range(3):                      # warm up eagerly: kernels built, optimizer state created
        step(static_x)
    with clgrad.opencl.graph(g):            # records the launches; runs nothing (as CUDA graphs)
        static_loss = step(static_x)
    for x in batches:
        static_x.copy_(x)                   # new data goes into the captured input
        g.replay()                          # every launch of the step again, no Python per op
        print(static_loss.item())

While a graph captures, every kernel launch on the current OpenCL device is recorded with its arguments bound
(backends/opencl/capture.py), buffers come from the graph's private pool and stay its own until ``reset()``, and the
things that change per step are refreshed before each replay: the Philox offset of each random draw (the generator
advances exactly as eager calls would), the step count and bias corrections of fused Adam, the deferred bounds
checks of the losses. Host reads (``.item()``, ``.numpy()``, ``print``), ``synchronize()``, data-dependent sizes
(``nonzero``, masks) and host-computed per-step scalars that cannot be refreshed raise ``NotCapturable`` (a
RuntimeError) naming the operation; the capture is aborted and its memory released, and eager work goes on.
"""
from __future__ import annotations

from . import random as _random
from .autograd import Function
from .autograd import grad as _grad
from .backends.opencl import capture, pending, programs, runtime
from .backends.opencl.allocator import GraphPool
from .backends.opencl.capture import NotCapturable
from .device import current_index
from .device import device as _device
from .tensor import is_tensor

__all__ = ["CLGraph", "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "NotCapturable",
           "make_graphed_callables"]


def is_current_stream_capturing() -> bool:
    """True while a graph capture is open (``torch.cuda.is_current_stream_capturing``)."""
    return capture.current() is not None


def graph_pool_handle() -> GraphPool:
    """A memory pool that several graphs can share (``torch.cuda.graph_pool_handle``): pass it as ``pool=``."""
    return GraphPool()


def on_replay(fn, *args) -> None:
    """While capturing: run ``fn(*args)`` before each replay (host bookkeeping the region did once)."""
    rec = capture.current()
    if rec is not None:
        rec.before_replay(lambda: fn(*args))


def refuse(what: str) -> None:
    """While capturing: abort the capture and raise NotCapturable (``what`` says why); otherwise nothing."""
    capture.refuse(what)


class CLGraph:
    """A captured sequence of OpenCL launches: ``capture_begin``/``capture_end`` (or ``with graph(g)``), ``replay``,
    ``reset``, ``pool`` (``torch.cuda.CUDAGraph``'s methods)."""

    def __init__(self, keep_graph: bool = False):
        self._rec = None
        self._pool: GraphPool | None = None
        self._dev = None
        self._rng = None

    def capture_begin(self, pool=None, capture_error_mode: str = "global", device=None) -> None:
        """Start recording the launches of ``device`` (clgrad's addition; default: the current OpenCL device, as
        torch captures the current stream). Nothing runs until ``replay``."""
        if capture.active is not None:
            raise RuntimeError("Cannot begin a graph capture while another capture is open on this process")
        if self._rec is not None:
            raise RuntimeError("This CLGraph already holds a capture: call reset() before capturing again")
        if programs._recorder is not None:
            raise RuntimeError("Cannot capture a graph while clgrad.profiler is recording")
        if device is not None and _device(device).type != "opencl":
            raise RuntimeError(f"CLGraph captures the launches of an OpenCL device, not {device}: ops on the cpu run "
                               "eagerly and cannot be replayed (torch.cuda.graph likewise needs a CUDA device)")
        index = None if device is None else _device(device).index
        dev = runtime.get(current_index() if index is None else index)
        self._dev, self._pool = dev, pool if pool is not None else GraphPool()
        self._pool.users += 1
        self._rng = (_random.default_generator._seed, _random.default_generator._offset)
        dev.allocator.capturing = self._pool
        self._rec = capture.Recorder(dev, self._abort)
        capture.active = self._rec

    def capture_end(self) -> None:
        """Stop recording. The buffers the launches use become the graph's until ``reset``."""
        rec = self._rec
        if rec is None or rec.aborted:
            raise RuntimeError("CLGraph.capture_end: no capture is open (it was aborted or never begun)")
        capture.active = None
        alloc = self._dev.allocator
        alloc.capturing = None
        for buf in rec.keep:
            if getattr(buf, "size", None) is not None and id(buf) in rec.buffers:
                alloc.adopt(self._pool, buf, buf.size)

    def replay(self) -> None:
        """Enqueue every recorded launch again (asynchronously, like every clgrad op)."""
        rec = self._rec
        if rec is None or rec.aborted or capture.active is rec:
            raise RuntimeError("CLGraph.replay: the graph holds no finished capture")
        capture.refuse("it replays a graph inside a capture")
        rec.replay(pending.defer_slot)

    def reset(self) -> None:
        """Forget the capture and give its memory back."""
        rec, self._rec = self._rec, None
        if rec is None:
            return
        if capture.active is rec:
            capture.active = None
        self._release(rec)

    def pool(self) -> GraphPool | None:
        """The graph's memory pool (share it with ``capture_begin(pool=...)``)."""
        return self._pool

    def launches(self) -> int:
        """How many launches (kernels, fills, uploads) a replay enqueues."""
        return len(self._rec.ops) if self._rec is not None else 0

    def _abort(self) -> None:
        """A refused operation ended the capture: release everything, undo the generator's advance."""
        rec, self._rec = self._rec, None
        rec.aborted = True
        _random.default_generator._seed, _random.default_generator._offset = self._rng
        self._release(rec)

    def _release(self, rec) -> None:
        alloc = self._dev.allocator
        if alloc.capturing is self._pool:
            alloc.capturing = None
        for dev, slot, *_ in rec.checks:
            pending.unreserve(dev, slot)
        rec.checks = []
        self._pool.users -= 1
        if self._pool.users <= 0:
            alloc.release_pool(self._pool)

    def __del__(self):
        try:
            self.reset()
        except Exception:  # interpreter shutdown: the device may be gone
            pass


CUDAGraph = CLGraph


class graph:
    """``with clgrad.opencl.graph(g):`` captures the block into ``g`` (``torch.cuda.graph``; ``stream`` is accepted
    and ignored: a device has one queue; ``device`` picks the device to capture, default the current one)."""

    def __init__(self, cuda_graph: CLGraph, pool=None, stream=None, capture_error_mode: str = "global", device=None):
        self.graph, self.pool, self.mode, self.device = cuda_graph, pool, capture_error_mode, device

    def __enter__(self):
        self.graph.capture_begin(pool=self.pool, capture_error_mode=self.mode, device=self.device)
        return self.graph

    def __exit__(self, exc_type, exc, tb):
        rec = self.graph._rec
        if exc_type is None:
            self.graph.capture_end()
        elif rec is not None and not rec.aborted and capture.active is rec:  # the user's error: drop the capture
            rec.abort()
        return False


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    """``torch.cuda.make_graphed_callables``: each callable (a function or module) with its forward and backward
    captured as two graphs (sharing one pool) over ``sample_args``, returned as a callable that autograd records as
    one node. Calls must pass tensors of the sample's shapes; a module keeps its parameters (their gradients
    accumulate as usual) and gets the graphed forward."""
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    graphed = tuple(_graphed(fn, args, num_warmup_iters, allow_unused_input, pool)
                    for fn, args in zip(callables, sample_args))
    return graphed[0] if single else graphed


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _graphed(fn, sample_args, warmup: int, allow_unused: bool, pool):
    if not isinstance(sample_args, tuple) or not all(is_tensor(a) for a in sample_args):
        raise TypeError("make_graphed_callables: sample_args must be a tuple of tensors for each callable")
    params = tuple(fn.parameters()) if hasattr(fn, "parameters") else ()
    inputs = sample_args + params
    wanted = [t for t in inputs if t.requires_grad]
    device = sample_args[0].device if sample_args else None
    for _ in range(warmup):  # kernels built and lazily created state made, outside the graphs
        outs = [o for o in _outputs(fn(*sample_args)) if o.requires_grad]
        _grad(outs, wanted, grad_outputs=[o.new_ones(o.shape) for o in outs], allow_unused=allow_unused)
    fwd, bwd = CLGraph(), CLGraph()
    with graph(fwd, pool=pool, device=device):
        static_outs = _outputs(fn(*sample_args))
    differentiable = [o for o in static_outs if o.requires_grad]
    static_grad_outs = [o.new_zeros(o.shape) for o in differentiable]
    with graph(bwd, pool=fwd.pool(), device=device):
        grads = _grad(differentiable, wanted, grad_outputs=static_grad_outs, allow_unused=allow_unused)
    grads = iter(grads)
    static_grads = tuple(next(grads) if t.requires_grad else None for t in inputs)
    return _Graphed(fn, len(sample_args), params, sample_args, fwd, bwd, static_outs, static_grad_outs,
                    static_grads, isinstance(static_outs, tuple) and len(static_outs) > 1)


class _Graphed:
    """A graphed callable: ``_Replay`` (one autograd node) over its two graphs."""

    def __init__(self, fn, n_args, params, statics, fwd, bwd, outs, grad_outs, grads, many):
        self.fn, self.n_args, self.params, self.statics, self.many = fn, n_args, params, statics, many
        self.fwd, self.bwd, self.outs, self.grad_outs, self.grads = fwd, bwd, outs, grad_outs, grads
        if hasattr(fn, "forward"):
            fn.forward = self  # torch too replaces the module's forward

    def __call__(self, *args):
        if len(args) != self.n_args:
            raise TypeError(f"the graphed callable takes {self.n_args} tensors, as its sample_args; got {len(args)}")
        outs = _Replay.apply(self, *args, *self.params)
        return outs if self.many else outs[0] if isinstance(outs, tuple) else outs


class _Replay(Function):
    @staticmethod
    def forward(ctx, graphed, *inputs):
        ctx.graphed = graphed
        for static, x in zip(graphed.statics, inputs[:graphed.n_args]):
            if static is not x:
                static.copy_(x)
        graphed.fwd.replay()
        return tuple(o.detach() for o in graphed.outs)

    @staticmethod
    def backward(ctx, *grads):
        graphed = ctx.graphed
        differentiable = [g for o, g in zip(graphed.outs, grads) if o.requires_grad]
        for static, g in zip(graphed.grad_outs, differentiable):
            if g is None:
                static.zero_()
            else:
                static.copy_(g)
        graphed.bwd.replay()
        return (None,) + tuple(None if g is None else g.detach().clone() for g in graphed.grads)
