"""``clgrad.compile(fn, mode="reduce-overhead")``: a whole step captured once and replayed (``graphs.py``).

Per signature (each tensor argument's shape, dtype, device and requires_grad; the other arguments' values; grad
mode): the first ``WARMUP`` calls run eagerly (kernels get built, optimizers create their state), the next one
captures the function over static copies of the tensor arguments, and every call from then on copies its tensors
into those static inputs, replays the graph and returns the captured outputs. As with torch's CUDA graphs, the
returned tensors are the same objects at every call: a later call overwrites them (clone what you keep). The
capture runs nothing itself, so N calls do exactly N steps, bit-identical to eager.

A function that cannot be captured (host reads such as ``loss.item()``, data-dependent shapes, the cpu device)
runs eagerly from then on, with a one-time warning; ``fullgraph=True`` raises the reason instead.

    >>> step = clgrad.compile(train_step, mode="reduce-overhead")
    >>> for x, y in loader:
    ...     loss = step(x, y)            # eager, eager, then one replay per call
"""
from __future__ import annotations

import warnings

from .autograd.grad_mode import is_grad_enabled
from .graphs import CLGraph, NotCapturable, graph
from .nn.modules.module import Module
from .tensor import is_tensor

WARMUP = 1  # eager calls per signature before the capture
MAX_GRAPHS = 8  # captured signatures kept per function (each holds its memory pool)
_EAGER = object()


class CapturedStep:
    """A callable that replays a captured graph of ``fn`` per signature (see the module docstring)."""

    def __init__(self, fn, fullgraph: bool = False, guard=None):
        self.fn, self.fullgraph, self.guard = fn, fullgraph, guard  # guard() joins the signature
        self.entries: dict = {}
        self.calls: dict = {}
        self.warned = False
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        key = _signature(args, kwargs)
        if key is not None and self.guard is not None:
            key += (self.guard(),)
        entry = self.entries.get(key, _EAGER if key is None else None)
        if entry is None:
            seen = self.calls[key] = self.calls.get(key, 0) + 1
            if seen <= WARMUP:
                return self.fn(*args, **kwargs)
            entry = self._capture(key, args, kwargs)
        if entry is _EAGER:
            if key is None:
                self._fallback("its tensor arguments are not all on one OpenCL device (or an argument is unhashable)")
            return self.fn(*args, **kwargs)
        g, statics, out = entry
        for s, a in zip(statics, _tensors(args, kwargs)):
            if s is not a:
                s.copy_(a)
        g.replay()
        return out

    def _capture(self, key, args, kwargs):
        """Capture ``fn`` over static copies of the tensor arguments; ``_EAGER`` if it cannot be captured."""
        statics = [a.detach().clone().requires_grad_(a.requires_grad) for a in _tensors(args, kwargs)]
        it = iter(statics)
        s_args = [next(it) if is_tensor(a) else a for a in args]
        s_kwargs = {k: next(it) if is_tensor(v) else v for k, v in sorted(kwargs.items())}
        g = CLGraph()
        device = statics[0].device if statics else None
        try:
            with graph(g, device=device):
                out = self.fn(*s_args, **s_kwargs)
        except NotCapturable as exc:
            self._fallback(str(exc))
            self.entries[key] = _EAGER
            return _EAGER
        if len(self.entries) >= MAX_GRAPHS:
            self.entries.clear()
        entry = self.entries[key] = (g, statics, out)
        return entry


    def _fallback(self, why: str) -> None:
        """Eager from now on (for this signature): warn once per function; ``fullgraph=True`` raises."""
        if self.fullgraph:
            raise NotCapturable(f"compile(mode='reduce-overhead', fullgraph=True): the step cannot be captured: {why}")
        if not self.warned:
            self.warned = True
            warnings.warn(f"compile(mode='reduce-overhead'): {getattr(self.fn, '__name__', 'the function')} runs "
                          f"eagerly: {why}", stacklevel=4)


class CapturedModule(Module):
    """``compile(model, mode="reduce-overhead")``: ``forward`` replays a captured graph where no gradient is being
    recorded (inference: ``no_grad``, or no parameter or input requiring grad); a forward that autograd records runs
    eagerly (a replay would return outputs without their graph). ``_orig_mod`` is the model, as in torch."""

    def __init__(self, model: Module, fullgraph: bool = False):
        super().__init__()
        self._orig_mod = model
        self._step = CapturedStep(model, fullgraph, guard=lambda: model.training)  # train() and eval() apart

    def forward(self, *args, **kwargs):
        recording = is_grad_enabled() and (any(p.requires_grad for p in self._orig_mod.parameters())
                                           or any(t.requires_grad for t in _tensors(args, kwargs)))
        if recording:
            return self._orig_mod(*args, **kwargs)
        return self._step(*args, **kwargs)


def _tensors(args, kwargs) -> list:
    return [a for a in args if is_tensor(a)] + [v for _, v in sorted(kwargs.items()) if is_tensor(v)]


def _signature(args, kwargs):
    """A hashable key of the call, or None when it cannot be captured (a cpu tensor, an unhashable argument)."""
    parts = [is_grad_enabled(), tuple(sorted(kwargs))]
    devices = set()
    try:
        for x in (*args, *[v for _, v in sorted(kwargs.items())]):
            if is_tensor(x):
                if x.device.type != "opencl":
                    return None
                devices.add(x.device)
                parts.append(("T", x.dtype, tuple(x.shape), x.device, x.requires_grad))
            else:
                hash(x)
                parts.append(("V", type(x), x))
    except TypeError:
        return None
    return tuple(parts) if len(devices) <= 1 else None
