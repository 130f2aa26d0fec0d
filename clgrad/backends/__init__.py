"""Backends implement a short list of primitives; every op is composed from them.

The primitives (see ``cpu.CPUBackend`` for the reference semantics):
``empty``, ``write``, ``read``, ``elementwise`` (n-ary with broadcasting; copy, cast and fill are
the ``identity`` op), ``reduce``, ``matmul``, ``random`` and ``synchronize``.
"""
from __future__ import annotations

from .cpu import CPUBackend

_cpu = CPUBackend()
_opencl = None


def get(dev):
    """The backend for a concrete device."""
    global _opencl
    if dev.type == "cpu":
        return _cpu
    if _opencl is None:
        from .opencl.backend import OpenCLBackend

        _opencl = OpenCLBackend()
    return _opencl
