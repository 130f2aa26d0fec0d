"""The reference backend: host memory through numpy. Storage is a 1-D numpy array, so
``from_numpy`` and ``.numpy()`` share memory with the caller."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..device import CPU
from ..registry.elementwise import OPS
from ..storage import Storage
from .common import cast, compute_np, is_scalar, pairs, view_of  # noqa: F401 (cast: the ops layer imports it from here)
from .cpu_conv import CPUConv
from .cpu_fft import CPUFFT
from .cpu_index import CPUIndex
from .cpu_linalg import CPULinalg
from .cpu_matmul import CPUMatmul
from .cpu_nn import CPUNN
from .cpu_random import CPURandom
from .cpu_reduce import CPUReduce
from .cpu_scan import CPUScan
from .cpu_sparse import CPUSparse
from .opencl.pending import IntegerDivisionByZero


class CPUBackend:
    """The ``Backend`` protocol (interface.py) in numpy: the reference every other backend is tested against. Memory
    and elementwise here, every other primitive bound from an op family object, as in the OpenCL backend."""

    name = "cpu"
    FAMILIES = (CPUReduce, CPUMatmul, CPURandom, CPUIndex, CPUScan, CPUConv, CPUNN, CPUSparse, CPUFFT, CPULinalg)
    fused_optim = None  # no fused optimizer steps: optimizers compose them from elementwise ops
    fused_rnn = None  # no fused LSTM steps: nn.LSTM composes them from elementwise table ops
    fused_conv = None  # no implicit-GEMM convolutions: ops/conv.py runs im2col + matmul

    def __init__(self):
        for family in self.FAMILIES:
            ops = family(self)
            for name in family.PRIMITIVES:
                setattr(self, name, getattr(ops, name))

    def empty(self, dev, dt: D.dtype, size: int) -> Storage:
        if dt.kind == "c":  # complex: interleaved (re, im) pairs in a storage of the real dtype
            dt, size = dt.real, 2 * size
        return Storage(CPU, dt, size, np.empty(size, dt.np))

    def wrap(self, flat: np.ndarray, dt: D.dtype) -> Storage:
        """Storage that shares memory with a 1-D numpy array."""
        return Storage(CPU, dt, flat.shape[0], flat)

    def write(self, storage: Storage, host: np.ndarray, offset: int = 0) -> None:
        """Copy ``host`` (in C order) into the storage from element ``offset``."""
        host = pairs(host)
        if offset < 0 or offset + host.size > storage.size:
            raise RuntimeError(f"write of {host.size} elements at offset {offset} overflows a storage of {storage.size}")
        storage.data[offset : offset + host.size] = np.asarray(host).reshape(-1)

    def read(self, t) -> np.ndarray:
        return np.array(view_of(t), copy=True)

    def elementwise_launcher(self, op: str, out, inputs, compute: D.dtype):
        """numpy has nothing to prepare: the launcher is the primitive itself."""
        return lambda out, inputs: self.elementwise(op, out, inputs, compute)

    def elementwise(self, op: str, out, inputs, compute: D.dtype) -> None:
        if out.numel() == 0:
            return
        entry = OPS[op]
        cnp = compute_np(compute)
        arrays = []
        for k, x in enumerate(inputs):
            if k in entry.bool_args:
                arr = (np.array(x) if is_scalar(x) else view_of(x)).astype(np.bool_, copy=False)
            elif is_scalar(x):  # Python scalars enter the computation unrounded, like PyTorch's opmath scalars
                with np.errstate(all="ignore"):
                    arr = np.array(x).astype(cnp)
            else:
                arr = view_of(x)
                if compute in D.HALF_FLOATS and x.dtype is not compute:
                    arr = cast(arr, compute)  # operands convert to the common dtype first, as in PyTorch
                arr = arr.astype(cnp, copy=False)
            arrays.append(arr)
        if entry.int_div_check and compute.kind in "iu" and not np.all(arrays[1]):
            raise IntegerDivisionByZero("ZeroDivisionError")  # as PyTorch's CPU does, before writing
        with np.errstate(all="ignore"):
            result = entry.np(*arrays)
        np.copyto(view_of(out), cast(result, out.dtype), casting="unsafe")

    def synchronize(self, dev=None) -> None:
        pass
