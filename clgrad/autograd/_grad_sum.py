"""Gradient contributions summed in groups: the backward engine's accumulation of a node input's gradients.

An input used k times (a weight stepped through 100 time steps, a hidden state read by two layers) receives k
contributions, and summing each as it arrives is k - 1 launches of ``a + b``. On devices whose backend has
``fused_launcher`` (OpenCL), contributions of one dtype, shape and device wait in a ``Pending`` list and are
summed ``GROUP`` at a time by one generated kernel (``a + b + c + ...``, left to right: the order, and so the
bits, of the one-by-one sums): 99 contributions take 15 launches instead of 99. The sum is taken when the list
is full and when the engine hands the node its gradients. Anything else (float16, broadcast or sparse
gradients, gradients that require grad under ``create_graph``, a ``clgrad.compile`` trace) is added at once.
"""
from __future__ import annotations

from .. import backends
from .. import dtypes as D
from ..backends.common import INT32_MAX
from ..tensor import Tensor

GROUP = 8  # fused_launcher's most inputs
_launchers: dict = {}  # (count, dtype, device, shape, strides of each input, big) -> launch
backends.add_cache_listener(_launchers.clear)  # the profiler, a capture or a queue switch: stale launchers


class Pending(list):
    """Contributions to one gradient, not summed yet (at most GROUP)."""


def add(prev, grad):
    """``prev`` (a Tensor or Pending) plus the contribution ``grad``: a Tensor, or a Pending to sum later."""
    if type(prev) is Pending:
        if _groupable(prev[0], grad):
            prev.append(grad)
            return total(prev) if len(prev) == GROUP else prev
        return total(prev) + grad
    if _groupable(prev, grad):
        return Pending((prev, grad))
    return prev + grad


def _groupable(a, b) -> bool:
    if type(a) is not Tensor or type(b) is not Tensor or a.dtype is not b.dtype or a._shape != b._shape:
        return False
    dev = a.device
    if dev != b.device or dev.type != "opencl" or a.dtype not in (D.float32, D.float64):
        return False
    if a.requires_grad or b.requires_grad:
        return False
    from ..backends.opencl import programs

    return programs.tracing is None  # clgrad.compile's trace follows table ops only


def total(pending: Pending) -> Tensor:
    """One tensor: the contributions summed left to right by one kernel."""
    first = pending[0]
    dev, dt, shape = first.device, first.dtype, first._shape
    out = Tensor._empty(shape, dt, dev)
    big = max([out.numel()] + [x._storage.size for x in pending]) > INT32_MAX
    key = (len(pending), dt, dev, shape, tuple(x._strides for x in pending), big)
    launch = _launchers.get(key)
    if launch is None:
        if len(_launchers) >= 1024:
            _launchers.clear()
        expr = " + ".join("abcdefgh"[:len(pending)])
        launch = _launchers[key] = backends.get(dev).fused_launcher(
            f"grad_sum{len(pending)}", expr, (), out, list(pending), dt)
    launch(out, list(pending))
    return out
