"""OpenCL implementation of the ``linalg`` primitives (an op family of OpenCLBackend): ``eigh`` and ``svd_jacobi``
(parallel-order Jacobi) and the unblocked panels ``getrf_panel`` and ``potrf_panel``, launches of
``kernels/linalg.cl.mako``, one work-group per matrix. See ``cpu_linalg.CPULinalg`` for the reference semantics."""
from __future__ import annotations

from ... import dtypes as D
from ..common import INT32_MAX
from . import looplimit, programs
from .launch import Args, Launcher, index_type

LOCAL = (64, 256)  # work-items per matrix, below and from n = 128: a round updates n/2 column pairs of n rows
# work-items per matrix of the getrf and potrf panels (a power of two; below and from 128 rows), on a CPU and
# elsewhere: a CPU work-item takes whole rows in explicit vectors, and every barrier costs each work-group, so on
# PoCL (2 cores) one work-item per matrix took 327 us on a 32x64x64 batch against 595 for 8 and 1283 for 16, and
# 640 us against 685 for 16 on one 1024x1024 panel
# (a CPU whose compiler stops a work-item's loops early, llvmpipe, keeps 8 and 16: each work-item loops less)
PANEL_LOCAL = {"cpu": (1, 1), "limited": (8, 16), "other": (64, 256)}
# the same for the substitution kernel's group form (many right-hand sides): 8 took a third of 64's time on PoCL
TRSM_LOCAL = {"cpu": (8, 16), "limited": (8, 16), "other": (64, 256)}
# up to how many right-hand sides per matrix the substitution kernel takes a work-item per column (no barriers)
# rather than a work-group per slice of columns stepping through the rows together, on a CPU and elsewhere. On PoCL
# (2 cores) the serial form took 32 us against 102 on a 32x64x64 batch with one right-hand side and 0.26 ms against
# 1.2 on one 1024x1024; from 8 columns on, and at 64 on 64 rows, the group form was faster (113 us against 549)
SERIAL_COLUMNS = {"cpu": 4, "limited": 0, "other": 0}
MAX_SWEEPS = {D.float32: 20, D.float64: 30}  # Jacobi converges quadratically: ~6-10 sweeps in practice


def _trips(kind: str, dims, local: int) -> tuple[int, int]:
    """(loop trips of one work-item per sweep, trips of the V set-up and the final sort) of the Jacobi kernels."""
    m, n = (dims[0], dims[0]) if kind == "eigh" else dims
    pairs = (n + 1) // 2
    per_round = -(-pairs // local) * (m + 1 if kind == "svd" else 1) + 2 * -(-pairs * (m + n) // local) + 2
    return (2 * pairs - 1) * per_round, -(-n * n // local) + n * (n + m + 2)


def _launches(dev, kind: str, dims, local: int, max_sweeps: int):
    """(sweeps, stage) of each launch: one launch doing every sweep, or, on a device whose compiler stops a
    work-item's loops after a fixed count (llvmpipe, ``looplimit``), as many sweeps per launch as fit, the state
    (A, V) carried over in global memory; stage bit 0 sets V = I, bit 1 sorts and writes the results."""
    budget = looplimit.budget(dev)
    if budget is None:
        return [(max_sweeps, 3)]
    sweep, fixed = _trips(kind, dims, local)
    looplimit.check(dev, sweep + fixed, f"linalg.{'eigh' if kind == 'eigh' else 'svd'} of {dims[-1]}x{dims[-1]}")
    per = max(1, min(max_sweeps, (budget - fixed) // sweep))
    counts = [per] * (max_sweeps // per) + ([max_sweeps % per] if max_sweeps % per else [])
    return [(c, (1 if i == 0 else 0) | (2 if i == len(counts) - 1 else 0)) for i, c in enumerate(counts)]


class CLLinalg:
    PRIMITIVES = ("eigh", "svd_jacobi", "getrf_panel", "potrf_panel", "trsm", "panels_ok")

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
        args.scalar(D.int32.np, 0, 0)  # max_sweeps and stage, set per launch below
        local = min(LOCAL[n >= 128], dev.props.max_work_group_size)
        params = dict(kind=kind, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64, wg=local)
        kernel = programs.get_kernel(dev, "linalg", f"{kind}_jacobi_{dt.ctype}", tuple(args.types), params)
        values = list(args.values)
        for sweeps, stage in _launches(dev, kind, dims, local, MAX_SWEEPS[dt]):
            values[-2:] = [sweeps, stage]
            kernel(dev.queue, (batch * local,), (local,), *values)
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
        params = dict(kind=kind, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64, wg=local, vec=_kind(dev) == "cpu")
        kernel = programs.get_kernel(dev, "linalg", f"{kind}_panel_{dt.ctype}", tuple(args.types), params)
        kernel(dev.queue, (batch * local,), (local,), *args.values)

    def panels_ok(self, a) -> bool:
        """The panel kernels loop over a panel's columns and rows in each work-item, further than llvmpipe's loop
        limiter allows for large matrices: on such a device the callers keep their composed path (no wrong answer)."""
        return looplimit.loop_limit(self.rt.dev(a)) is None

    def trsm(self, a, b, upper: bool = False, unit: bool = False) -> None:
        """``b`` [B, n, k] <- X with A X = b for the triangle of ``a`` [B, n, n] (any strides); see interface."""
        batch, n, k = b.shape
        if b.numel() == 0:
            return
        dt, dev = b.dtype, self.rt.dev(b)
        if dt not in MAX_SWEEPS:
            raise NotImplementedError(f"linalg: clgrad's trsm kernel takes float32 and float64, not {dt}")
        self.rt.check_dtype(dev, dt)
        sb, sr, sc = a._strides
        big = max(b.numel(), a._offset + sum(abs(s) * (d - 1) for s, d in zip(a._strides, a.shape)) + 1) > INT32_MAX
        idx_np, idx_t = index_type(big)
        serial = k <= SERIAL_COLUMNS[_kind(dev)]
        if serial:  # a work-item per column, work-groups of up to 16 (a CPU's SIMD lanes)
            local = min(16, dev.props.max_work_group_size)
            split, size = batch, -(-batch * k // local) * local
        else:  # enough work-groups to fill the device (a few per compute unit), each a slice of the columns
            local = _local(dev, n, TRSM_LOCAL)
            blocks = max(1, min(-(-4 * dev.props.compute_units // batch), -(-k // 16)))
            split = -(-k // blocks)
            size = batch * -(-k // split) * local
        args = Args(idx_np)
        args.buf(a._storage.data, b._storage.data)
        args.idx(n, k, a._offset, sb if a.shape[0] > 1 else 0, sr, sc, split)
        args.scalar(D.int32.np, int(upper), int(unit))
        params = dict(kind="trsm", ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64, wg=local, serial=serial)
        kernel = programs.get_kernel(dev, "linalg", f"trsm_panel_{dt.ctype}", tuple(args.types), params)
        kernel(dev.queue, (size,), (local,), *args.values)

    def getrf_panel(self, a, piv, k: int, e: int) -> None:
        """LU with partial pivoting of columns k..e-1 of ``a`` [B, m, c] in place; see interface.Backend."""
        m, c = a.shape[1], a.shape[2]
        self._panel("getrf", a, [a._storage.data, piv._storage.data], (m, c, piv.shape[-1], k, e))

    def potrf_panel(self, a, k: int, e: int) -> None:
        """Lower Cholesky of the diagonal blocks ``a[:, k:e, k:e]`` of ``a`` [B, n, n]; see interface.Backend."""
        self._panel("potrf", a, [a._storage.data], (a.shape[-1], k, e))


def _kind(dev) -> str:
    """"cpu", "limited" (a CPU with llvmpipe's loop limit) or "other" (a GPU, an accelerator, a simulator)."""
    if "CPU" not in dev.props.type:
        return "other"
    return "cpu" if looplimit.loop_limit(dev) is None else "limited"


def _local(dev, rows: int, table: dict = None) -> int:
    """Work-items per matrix of a panel kernel: a power of two within the device's limit."""
    local = min((table or PANEL_LOCAL)[_kind(dev)][rows >= 128], dev.props.max_work_group_size)
    return 1 << (local.bit_length() - 1)
