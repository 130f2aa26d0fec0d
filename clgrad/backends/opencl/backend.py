"""The OpenCL backend: the primitives as launches of kernels rendered from ``clgrad/kernels``."""
from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from ... import dtypes as D
from ...device import device
from ...storage import Storage
from ..common import Desc, copy_compute, is_contiguous, pairs
from . import capture, programs, runtime
from .conv import CLConv
from .conv_gemm import CLConvGemm
from .elementwise import CLElementwise
from .fft import CLFFT
from .index import CLIndex
from .launch import Launcher
from .linalg import CLLinalg
from .matmul import CLMatmul
from .nn import CLNN
from .optim import CLOptim
from .pending import check_pending
from .random import CLRandom
from .reduce import CLReduce
from .rnn import CLRNN
from .scan import CLScan
from .sparse import CLSparse


class OpenCLBackend:
    """The ``Backend`` protocol (interface.py) on OpenCL devices: memory here, every other primitive bound from an op
    family object (elementwise, reduce, matmul, random, index, scan, conv, nn) that launches through one shared
    ``Launcher``. Methods are bound once, so a call costs what a method call on the family costs."""

    name = "opencl"
    FAMILIES = (CLElementwise, CLReduce, CLMatmul, CLRandom, CLIndex, CLScan, CLConv, CLNN, CLSparse, CLFFT, CLLinalg)

    def __init__(self):
        self.launcher = Launcher()
        self.dev, self.check_dtype = self.launcher.dev, self.launcher.check_dtype
        for family in self.FAMILIES:
            ops = family(self, self.launcher)
            for name in family.PRIMITIVES:
                setattr(self, name, getattr(ops, name))
        # optional capabilities: the fused optimizer steps and LSTM steps (the cpu backend has neither)
        self.fused_optim = CLOptim(self, self.launcher)
        self.fused_rnn = CLRNN(self, self.launcher)
        self.fused_conv = CLConvGemm(self, self.launcher)  # implicit-GEMM convolutions (conv_gemm.py)

    def empty(self, dev: device, dt: D.dtype, size: int) -> Storage:
        cl_dev = runtime.get(dev.index)
        self.check_dtype(cl_dev, dt)
        if dt.kind == "c":  # complex: interleaved (re, im) pairs in a storage of the real dtype
            dt, size = dt.real, 2 * size
        if size == 0:
            return Storage(dev, dt, 0, None)
        alloc = cl_dev.allocator
        buf, rounded = alloc.malloc(size * dt.itemsize)
        return Storage(dev, dt, size, buf, lambda: alloc.free(buf, rounded))

    def empty_maker(self, dev: device, dt: D.dtype, size: int):
        """``empty(dev, dt, size)`` as a function of no arguments, checked once (cached elementwise plans)."""
        self.check_dtype(runtime.get(dev.index), dt)
        return runtime.get(dev.index).allocator.maker(size * dt.itemsize, lambda buf, free: Storage(dev, dt, size, buf, free))

    def write(self, storage: Storage, host: np.ndarray, offset: int = 0) -> None:
        """Copy ``host`` (converted to the storage's dtype, C order) into the storage from element ``offset``."""
        host = pairs(host)
        if host.size == 0:
            return
        if offset < 0 or offset + host.size > storage.size:
            raise RuntimeError(f"write of {host.size} elements at offset {offset} overflows a storage of {storage.size}")
        if programs.tracing is not None:
            programs.tracing.transfers += 1
        dev = runtime.get(storage.device.index)
        data = np.ascontiguousarray(host, dtype=storage.dtype.np)
        rec = capture.current()
        if rec is not None:  # a constant of the captured region: uploaded again at each replay
            rec.upload(storage.data, data, offset * storage.dtype.itemsize)
            return
        # blocking: the caller may reuse or mutate its host array as soon as we return
        with runtime.waiting(dev):
            cl.enqueue_copy(dev.queue, storage.data, data, dst_offset=offset * storage.dtype.itemsize, is_blocking=True)

    def read(self, t) -> np.ndarray:
        capture.refuse("it copies a tensor to the host")
        t = self.contiguous(t)
        host = np.empty(t.shape, t.dtype.np)
        if programs.tracing is not None:
            programs.tracing.transfers += 1
        if host.size:
            dev = self.dev(t)
            with runtime.waiting(dev):
                cl.enqueue_copy(dev.queue, host, t._storage.data, src_offset=t._offset * t.dtype.itemsize,
                                is_blocking=True)
        check_pending()  # a deferred bounds check failed: raise before anyone uses what was computed
        return host

    def scratch(self, d: device, dt: D.dtype, shape) -> Desc:
        """A fresh contiguous descriptor of ``shape`` (a launcher's temporary)."""
        return Desc(self.empty(d, dt, math.prod(shape)), shape)

    def contiguous(self, t):
        """``t`` itself when contiguous, else a contiguous copy (a descriptor)."""
        if is_contiguous(t):
            return t
        copy = self.scratch(t.device, t.dtype, t.shape)
        self.elementwise("identity", copy, [t], copy_compute(t.dtype, t.dtype))
        return copy

    def synchronize(self, dev: device | None = None) -> None:
        capture.refuse("it waits for the device")
        for cl_dev in [runtime.get(dev.index)] if dev is not None else runtime.devices():
            if cl_dev._queue is not None:
                with runtime.waiting(cl_dev):
                    cl_dev.queue.finish()
        check_pending()
