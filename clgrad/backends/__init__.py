"""Backends implement the primitives every op is composed from; ``interface.Backend`` (a typing.Protocol) lists
them with their semantics: memory (``empty``, ``write``, ``read``, ``synchronize``), ``elementwise`` (copy, cast and
fill are its ``identity`` op), ``reduce``, ``matmul``, ``random``, index, scan, conv and nn primitives, and the
optional capabilities ``fused_optim`` and ``fused_rnn`` (None where a backend lacks them). ``cpu.CPUBackend`` (numpy)
is the reference; ``opencl.backend.OpenCLBackend`` launches kernels. Backends see tensor descriptors only
(``common.py``), never the Tensor.
"""
from __future__ import annotations

from .cpu import CPUBackend

_cpu = CPUBackend()
_opencl = None
_listeners: list = []  # callables that drop caches holding launchers, kernels or queues


def add_cache_listener(drop) -> None:
    """Call ``drop()`` whenever kernels or queues cached outside a backend become stale (the OpenCL kernel cache's
    ``clear()``, the profiler starting or stopping, a device's queue replaced). Layers above register here, so
    they need not know the OpenCL backend: ``pointwise``'s plans hold the backends' prepared launches."""
    if drop not in _listeners:
        _listeners.append(drop)


def invalidate() -> None:
    """Tell every cache listener to drop the launchers, kernels and queues it holds."""
    for drop in _listeners:
        drop()


def get(dev):
    """The backend for a concrete device."""
    global _opencl
    if dev.type == "cpu":
        return _cpu
    if _opencl is None:
        # imported on first use: it imports pyopencl (~0.2 s), which programs that stay on the cpu never pay
        from .opencl.backend import OpenCLBackend

        _opencl = OpenCLBackend()
    return _opencl
