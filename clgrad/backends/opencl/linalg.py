"""OpenCL implementation of the ``linalg`` primitives (an op family of OpenCLBackend): ``eigh`` and ``svd_jacobi``
(parallel-order Jacobi) and the unblocked panels ``getrf_panel`` and ``potrf_panel``, launches of
``kernels/linalg.cl.mako``, one work-group per matrix. See ``cpu_linalg.CPULinalg`` for the reference semantics."""
from __future__ import annotations

from ... import dtypes as D
from ..common import INT32_MAX
from . import programs
from .launch import Args, Launcher, index_type

LOCAL = (64, 256)  # work-items per matrix, below and from n = 128: a round updates n/2 column pairs of n rows
# work-items per matrix of a panel kernel (a power of two; below and from 128 rows), on a CPU and elsewhere: a CPU
# work-item takes whole rows in a SIMD loop, and on PoCL (2 cores) 8 took a third of 64's time on a 32x64x64 batch
# and 16 a quarter of 64's on one 512x512
PANEL_LOCAL = {True: (8, 16), False: (64, 256)}
MAX_SWEEPS = {D.float32: 20, D.float64: 30}  # Jacobi converges quadratically: ~6-10 sweeps in practice


class CLLinalg:
    PRIMITIVES = ("eigh", "svd_jacobi", "getrf_panel", "potrf_panel", "trsm_lower")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    def _launch(self, kind: str, a, out, v, dims) -> None:
        dt = a.dtype
        if dt not in MAX_SWEEPS:
            raise NotImplementedError(f"linalg.{kind}: clgrad's Jacobi kernels take float32 and float64, not {dt}")
        batch, n = a.shape[0], a.shape[-1]
        if a.numel() == 0 or batch == 0:
            return
        dev = self.rt.dev(a)
        self.rt.check_dtype(dev, dt)
        pairs = (n + 1) // 2
        scratch = self.be.empty(a.device, dt, batch * 2 * pairs)
        idx_np, idx_t = index_type(a.numel() > INT32_MAX)
        args = Args(idx_np)
        args.buf(a._storage.data, out._storage.data, v._storage.data, scratch.data)
        args.idx(*dims)
        args.scalar(D.int32.np, MAX_SWEEPS[dt])
        local = min(LOCAL[n >= 128], dev.props.max_work_group_size)
        params = dict(kind=kind, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64, wg=local)
        kernel = programs.get_kernel(dev, "linalg", f"{kind}_jacobi_{dt.ctype}", tuple(args.types), params)
        kernel(dev.queue, (batch * local,), (local,), *args.values)
        del scratch  # the allocator reuses the buffer only for launches enqueued after this one (in-order queue)

    def eigh(self, w, v, a, upper: bool = False) -> None:
        """Eigenvalues ascending and eigenvectors of the symmetric ``a`` [B, n, n]; see interface.Backend.eigh."""
        self._launch("eigh", a, w, v, (a.shape[-1],))

    def svd_jacobi(self, s, v, a) -> None:
        """``a`` [B, m, n] (m >= n) <- A V, ``s`` its column norms descending, ``v`` V; see interface.Backend."""
        self._launch("svd", a, s, v, (a.shape[-2], a.shape[-1]))

    def _panel(self, kind: str, a, bufs: list, dims: tuple) -> None:
        """One launch of the ``kind`` panel kernel over the batch ``a`` [B, rows, cols], one work-group each."""
        dt = a.dtype
        if dt not in MAX_SWEEPS:
            raise NotImplementedError(f"linalg: clgrad's {kind} kernel takes float32 and float64, not {dt}")
        batch, rows = a.shape[0], a.shape[1]
        if a.numel() == 0:
            return
        dev = self.rt.dev(a)
        self.rt.check_dtype(dev, dt)
        local = _local(dev, rows)
        idx_np, idx_t = index_type(a.numel() > INT32_MAX)
        args = Args(idx_np)
        args.buf(*bufs)
        args.idx(*dims)
        params = dict(kind=kind, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64, wg=local)
        kernel = programs.get_kernel(dev, "linalg", f"{kind}_panel_{dt.ctype}", tuple(args.types), params)
        kernel(dev.queue, (batch * local,), (local,), *args.values)

    def trsm_lower(self, a, b) -> None:
        """``b`` [B, n, k] <- X with L X = b for the lower triangle L of ``a`` [B, n, n]; see interface.Backend."""
        self._panel("trsm", b, [a._storage.data, b._storage.data], (b.shape[1], b.shape[2]))

    def getrf_panel(self, a, piv, k: int, e: int) -> None:
        """LU with partial pivoting of columns k..e-1 of ``a`` [B, m, c] in place; see interface.Backend."""
        m, c = a.shape[1], a.shape[2]
        self._panel("getrf", a, [a._storage.data, piv._storage.data], (m, c, piv.shape[-1], k, e))

    def potrf_panel(self, a, k: int, e: int) -> None:
        """Lower Cholesky of the diagonal blocks ``a[:, k:e, k:e]`` of ``a`` [B, n, n]; see interface.Backend."""
        self._panel("potrf", a, [a._storage.data], (a.shape[-1], k, e))


def _local(dev, rows: int) -> int:
    """Work-items per matrix of a panel kernel: a power of two within the device's limit."""
    local = min(PANEL_LOCAL["CPU" in dev.props.type][rows >= 128], dev.props.max_work_group_size)
    return 1 << (local.bit_length() - 1)
