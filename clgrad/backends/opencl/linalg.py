"""OpenCL implementation of the ``linalg`` primitives (an op family of OpenCLBackend): ``eigh`` and ``svd_jacobi``,
launches of ``kernels/linalg.cl.mako`` (parallel-order Jacobi, one work-group per matrix). See
``cpu_linalg.CPULinalg`` for the reference semantics."""
from __future__ import annotations

from ... import dtypes as D
from ..common import INT32_MAX
from . import looplimit, programs
from .launch import Args, Launcher, index_type

LOCAL = (64, 256)  # work-items per matrix, below and from n = 128: a round updates n/2 column pairs of n rows
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
    PRIMITIVES = ("eigh", "svd_jacobi")

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
        params = dict(kind=kind, ctype=dt.ctype, idx_t=idx_t, fp64=dt is D.float64)
        kernel = programs.get_kernel(dev, "linalg", f"{kind}_jacobi_{dt.ctype}", tuple(args.types), params)
        local = min(LOCAL[n >= 128], dev.props.max_work_group_size)
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
