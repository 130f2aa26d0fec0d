"""GEMM: square sizes, transposed operands and the skinny shapes of the examples, in GFLOP/s against numpy/OpenBLAS.

    python bench/gemm.py [--device opencl:N] [--quick] [--smoke] [--json out.json] [--only "mm 1024"]

Shapes are MxKxN: (M, K) @ (K, N). "A.T" means A is stored (K, M) and used through a transposed view, the way
``Linear``'s backward uses its weight.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, at_least, rand  # noqa: E402

import clgrad  # noqa: E402


def gemm_case(b: Bench, name: str, m: int, k: int, n: int, ta: bool = False, tb: bool = False, target=None) -> None:
    if not b.wants(name):
        return
    a_np = rand((k, m) if ta else (m, k), seed=1)
    b_np = rand((n, k) if tb else (k, n), seed=2)
    na, nb = (a_np.T if ta else a_np), (b_np.T if tb else b_np)
    ca, cb = clgrad.tensor(a_np, device=b.device), clgrad.tensor(b_np, device=b.device)
    ca, cb = (ca.t() if ta else ca), (cb.t() if tb else cb)
    got, want = (ca @ cb).cpu().numpy(), na @ nb
    err = abs(got - want).max() / max(abs(want).max(), 1e-30)
    if err > 1e-4:
        raise RuntimeError(f"{name}: clgrad's result is wrong (max relative error {err:.2e})")
    tfn = None
    if b.torch is not None:
        ta_, tb_ = b.torch.from_numpy(a_np), b.torch.from_numpy(b_np)
        ta_, tb_ = (ta_.t() if ta else ta_), (tb_.t() if tb else tb_)
        tfn = lambda: ta_ @ tb_  # noqa: E731
    times = b.measure(clgrad=lambda: ca @ cb, numpy=lambda: na @ nb, torch=tfn)
    b.add(name, times, work=2.0 * m * k * n, unit="GFLOP/s", target=target)


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    half, third = at_least(0.5, "numpy"), at_least(1 / 3, "numpy")
    for s in b.pick((32,), (256, 512, 1024), (256, 512, 1024, 2048)):
        gemm_case(b, f"mm {s}x{s}x{s}", s, s, s, target=third if s < 512 else half)
    s = b.pick(32, 512, 1024)
    for ta, tb in ((True, False), (False, True), (True, True)):
        label = f"{'A.T' if ta else 'A'}@{'B.T' if tb else 'B'}"
        gemm_case(b, f"mm {s}x{s}x{s} {label}", s, s, s, ta, tb, target=third)
    # the examples' shapes: MNIST fc1/fc2 forward (x @ W.T) and backward (dW = g.T @ x, dx = g @ W),
    # the two-layer net, and the RNN's hidden-state product
    skinny = [("MNIST fc1 x@W.T", 64, 320, 50, False, True), ("MNIST fc2 x@W.T", 64, 50, 10, False, True),
              ("MNIST fc1 dW=g.T@x", 50, 64, 320, True, False), ("MNIST fc1 dx=g@W", 64, 50, 320, False, False),
              ("two-layer x@W1.T", 64, 1000, 100, False, True), ("RNN h@Whh.T", 32, 128, 128, False, True),
              ("example net fc1 x@W.T", 64, 9216, 128, False, True)]
    for label, m, k, n, ta, tb in skinny[: b.pick(2, len(skinny), len(skinny))]:
        gemm_case(b, f"mm {m}x{k}x{n} ({label})", m, k, n, ta, tb, target=half)
    b.finish()
    return b


if __name__ == "__main__":
    main()
