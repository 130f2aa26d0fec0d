"""Core op benchmarks: dispatch, elementwise bandwidth, reductions, GEMM. Ratios >1 mean clgrad is faster.

    python bench/ops.py [--device opencl:N] [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import default_device, report, timeit, torch_or_none  # noqa: E402

import clgrad  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=default_device())
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = ap.parse_args()
    d = args.device
    torch = torch_or_none()
    print(f"device: {d} ({clgrad.opencl.get_device_name(d) if d.startswith('opencl') else 'numpy'}); "
          f"torch: {torch.__version__ if torch else 'not installed'}")
    rows = []
    small = np.ones(16, np.float32)
    a, b = clgrad.tensor(small, device=d), clgrad.tensor(small, device=d)
    rows.append(("dispatch a+b (16 elems)", timeit(lambda: a + b, device=d), timeit(lambda: small + small),
                 timeit(lambda: ta + tb) if torch and (ta := torch.ones(16)) is not None and (tb := torch.ones(16)) is not None else None))

    n = (1 << 20) if args.quick else (1 << 24)
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    cx, cy = clgrad.tensor(x, device=d), clgrad.tensor(y, device=d)
    tx, ty = (torch.from_numpy(x), torch.from_numpy(y)) if torch else (None, None)
    rows.append((f"a*b contiguous ({n >> 20}M)", timeit(lambda: cx * cy, device=d), timeit(lambda: x * y),
                 timeit(lambda: tx * ty) if torch else None))
    m = int(np.sqrt(n))
    x2, y2 = x[: m * m].reshape(m, m), y[: m * m].reshape(m, m)
    cx2, cy2 = cx[: m * m].view(m, m), cy[: m * m].view(m, m)
    rows.append((f"a.T+b strided ({m}x{m})", timeit(lambda: cx2.t() + cy2, device=d), timeit(lambda: x2.T + y2),
                 timeit(lambda: tx[: m * m].view(m, m).t() + ty[: m * m].view(m, m)) if torch else None))
    rows.append((f"sum ({n >> 20}M)", timeit(lambda: cx.sum(), device=d), timeit(lambda: x.sum()),
                 timeit(lambda: tx.sum()) if torch else None))
    rows.append((f"row max ({m}x{m}, dim=1)", timeit(lambda: cx2.amax(1), device=d), timeit(lambda: x2.max(1)),
                 timeit(lambda: tx[: m * m].view(m, m).amax(1)) if torch else None))
    for size in ((256, 512) if args.quick else (512, 1024)):
        p = np.random.rand(size, size).astype(np.float32)
        q = np.random.rand(size, size).astype(np.float32)
        cp, cq = clgrad.tensor(p, device=d), clgrad.tensor(q, device=d)
        tp, tq = (torch.from_numpy(p), torch.from_numpy(q)) if torch else (None, None)
        tc = timeit(lambda cp=cp, cq=cq: cp @ cq, device=d)
        rows.append((f"matmul {size}^2 ({2 * size**3 / tc / 1e9:.1f} GFLOP/s)", tc, timeit(lambda p=p, q=q: p @ q),
                     timeit(lambda tp=tp, tq=tq: tp @ tq) if torch else None))
    report(rows)


if __name__ == "__main__":
    main()
