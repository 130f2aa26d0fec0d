"""OpenCL implementation of the ``sparse`` primitive (an op family of OpenCLBackend): ``spmm``, a launch of
``kernels/spmm.cl.mako``. See ``cpu_sparse.CPUSparse`` for the reference semantics.

CSR rows per work-item, not COO entries with atomics: each output element sums its row's entries in order, so the
result is deterministic and needs no float atomics (float64 atomics need cl_khr_int64_base_atomics, which Rusticl
and some GPUs lack).
"""
from __future__ import annotations

from ... import dtypes as D
from ..common import INT32_MAX
from . import programs
from .launch import Args, Launcher, index_type, launch_size


class CLSparse:
    PRIMITIVES = ("spmm",)

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    def spmm(self, out, rowptr, cols, vals, dense) -> None:
        """out [M, N] = A @ dense for the CSR matrix A (``rowptr``, ``cols``, ``vals``); see interface.Backend.spmm."""
        dt = out.dtype
        if dt is D.bool:
            raise NotImplementedError(f"sparse mm is not implemented for dtype bool on device {out.device}")
        M, N = out.shape
        if M * N == 0:
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, dt)
        sizes = [M * N] + [t._storage.size for t in (out, rowptr, cols, vals, dense)]
        idx_np, idx_t = index_type(max(sizes) > INT32_MAX)
        params = dict(ctype=dt.ctype, acc="float" if dt in D.HALF_FLOATS else dt.ctype, ptr_ctype=rowptr.dtype.ctype,
                      col_ctype=cols.dtype.ctype, idx_t=idx_t, fp64=dt is D.float64)
        args = Args(idx_np)
        for t in (out, rowptr, cols, vals, dense):
            args.buf(t._storage.data)  # None (a NULL pointer) for an empty tensor: the kernel never reads it then
            args.idx(t._offset, *t._strides)
        args.idx(M, N, dense.shape[0], cols.shape[0])
        name = f"spmm_{dt.ctype}_{rowptr.dtype.ctype}_{cols.dtype.ctype}"
        kernel = programs.get_kernel(dev, "spmm", name, tuple(args.types), params)
        kernel(dev.queue, *launch_size(dev, M * N), *args.values)
