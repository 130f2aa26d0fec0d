"""Dense solvers and decompositions: linalg.solve (LU with partial pivoting), linalg.cholesky, linalg.qr,
linalg.eigh and linalg.svd, batched 64x64 and one 1024x1024 (solvers) or 512x512 (decompositions), fp32, time per
call against numpy/LAPACK and PyTorch-CPU.

    python bench/linalg.py [--device opencl:N] [--quick] [--smoke] [--json out.json] [--only "solve"]

LU and Cholesky are LAPACK's blocked right-looking algorithms: per 64-column panel one launch of the backend's panel
kernel (one work-group per matrix), one triangular solve (the ``trsm`` kernel) and one matmul for the trailing
update. QR is Householder composed from ops (blocked by 32 columns, ~10 launches per column, and Q applies each
reflector: ~5 per column); eigh and svd are one Jacobi kernel launch (one work-group per matrix) plus the setup, and
svd's U normalization. Targets: issue 17's first bar, >= 0.3x torch-CPU on the solvers.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, at_least, np, rand  # noqa: E402 - common's numpy: it sets the thread count before numpy loads

import clgrad  # noqa: E402


def _spd(batch: int, n: int) -> np.ndarray:
    m = rand((batch, n, n), seed=3)
    return (m @ m.transpose(0, 2, 1) / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def solve_case(b: Bench, batch: int, n: int, k: int = 1) -> None:
    name = f"solve {batch}x{n}x{n}, {k} rhs"
    if not b.wants(name):
        return
    a_np = rand((batch, n, n), seed=1) + n ** 0.5 * np.eye(n, dtype=np.float32)
    r_np = rand((batch, n, k), seed=2)
    a, r = clgrad.tensor(a_np, device=b.device), clgrad.tensor(r_np, device=b.device)
    got, want = clgrad.linalg.solve(a, r).cpu().numpy(), np.linalg.solve(a_np, r_np)
    err = abs(got - want).max() / max(abs(want).max(), 1e-30)
    if err > 1e-3:
        raise RuntimeError(f"{name}: clgrad's result is wrong (max relative error {err:.2e})")
    tfn = None
    if b.torch is not None:
        ta, tr = b.torch.from_numpy(a_np), b.torch.from_numpy(r_np)
        tfn = lambda: b.torch.linalg.solve(ta, tr)  # noqa: E731
    times = b.measure(clgrad=lambda: clgrad.linalg.solve(a, r), numpy=lambda: np.linalg.solve(a_np, r_np), torch=tfn)
    b.add(name, times, target=at_least(0.3, "torch"))  # issue 17's first bar for the heavy families


def cholesky_case(b: Bench, batch: int, n: int) -> None:
    name = f"cholesky {batch}x{n}x{n}"
    if not b.wants(name):
        return
    a_np = _spd(batch, n)
    a = clgrad.tensor(a_np, device=b.device)
    got, want = clgrad.linalg.cholesky(a).cpu().numpy(), np.linalg.cholesky(a_np)
    err = abs(got - want).max() / max(abs(want).max(), 1e-30)
    if err > 1e-3:
        raise RuntimeError(f"{name}: clgrad's result is wrong (max relative error {err:.2e})")
    tfn = None
    if b.torch is not None:
        ta = b.torch.from_numpy(a_np)
        tfn = lambda: b.torch.linalg.cholesky(ta)  # noqa: E731
    times = b.measure(clgrad=lambda: clgrad.linalg.cholesky(a), numpy=lambda: np.linalg.cholesky(a_np), torch=tfn)
    b.add(name, times, target=at_least(0.3, "torch"))


def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    err = abs(got - want).max() / max(abs(want).max(), 1e-30)
    if err > 1e-3:
        raise RuntimeError(f"{name}: clgrad's result is wrong (max relative error {err:.2e})")


# name -> (clgrad call, numpy call, torch call, what is compared: a function of the result)
DECOMPOSITIONS = {
    "qr": (lambda a: clgrad.linalg.qr(a), np.linalg.qr, lambda t, a: t.linalg.qr(a), lambda r: abs(np.asarray(r[1]))),
    "eigh": (lambda a: clgrad.linalg.eigh(a), np.linalg.eigh, lambda t, a: t.linalg.eigh(a), lambda r: np.asarray(r[0])),
    "svd": (lambda a: clgrad.linalg.svd(a, full_matrices=False), lambda a: np.linalg.svd(a, full_matrices=False),
            lambda t, a: t.linalg.svd(a, full_matrices=False), lambda r: np.asarray(r[1])),
}


def decomposition_case(b: Bench, op: str, batch: int, n: int) -> None:
    name = f"{op} {batch}x{n}x{n}"
    if not b.wants(name):
        return
    ours, ref, theirs, key = DECOMPOSITIONS[op]
    a_np = _spd(batch, n) if op == "eigh" else rand((batch, n, n), seed=4)
    a = clgrad.tensor(a_np, device=b.device)
    _check(name, key([t.cpu().numpy() for t in ours(a)]), key(ref(a_np)))
    tfn = None
    if b.torch is not None:
        ta = b.torch.from_numpy(a_np)
        tfn = lambda: theirs(b.torch, ta)  # noqa: E731
    b.add(name, b.measure(clgrad=lambda: ours(a), numpy=lambda: ref(a_np), torch=tfn))


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    # issue 17's sizes: batched 64x64 and one 1024x1024 for the solvers; the Jacobi decompositions at 512
    batch, small, big, solver = b.pick((4, 16, 64, 64), (32, 64, 256, 512), (32, 64, 512, 1024))
    solve_case(b, batch, small)
    cholesky_case(b, batch, small)
    solve_case(b, 1, solver)
    cholesky_case(b, 1, solver)
    for op in DECOMPOSITIONS:
        decomposition_case(b, op, batch, small)
        decomposition_case(b, op, 1, big)
    b.finish()
    return b


if __name__ == "__main__":
    main()
