"""Elementwise ``a*b+c`` on 16M fp32: contiguous, strided (a transposed input) and broadcast, in GB/s.

    python bench/elementwise.py [--device opencl:N] [--quick] [--smoke] [--json out.json]

GB/s counts 16 bytes per output element (three float reads and one write) for every variant, so the rates compare
with the reference: a raw pyopencl kernel with one work-item per element on the contiguous arrays, the launch
geometry the issue found fastest on PoCL. ``a*b+c`` runs as two kernels in clgrad, numpy and torch alike;
``addcmul`` is the same math in one kernel, and so is ``clgrad.compile``'s fused ``a*b+c`` (its rows leave torch
out: torch.compile needs a C++ toolchain on CPU).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, RawCL, at_least, count, rand  # noqa: E402

import clgrad  # noqa: E402

RAW_FMA = """
__kernel void fma_raw(__global float *out, __global const float *a, __global const float *b,
                      __global const float *c) {
    size_t i = get_global_id(0);
    out[i] = a[i] * b[i] + c[i];
}
"""


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    m = b.pick(64, 2048, 4096)
    n = m * m
    a, bb, c = rand((m, m), 1), rand((m, m), 2), rand((m, m), 3)
    row, col = rand(m, 4), rand((m, 1), 5)
    d = b.device
    ca, cb, cc = (clgrad.tensor(x, device=d) for x in (a, bb, c))
    crow, ccol = clgrad.tensor(row, device=d), clgrad.tensor(col, device=d)
    T = b.torch
    ta, tb, tc, trow, tcol = (T.from_numpy(x) for x in (a, bb, c, row, col)) if T else (None,) * 5

    ref, ref_sync = None, None
    if b.on_cl:
        raw = RawCL(d)
        kernel = raw.kernel(RAW_FMA, "fma_raw")
        bufs = [raw.empty(4 * n)] + [raw.buffer(x) for x in (a, bb, c)]

        def ref():
            kernel(raw.queue, (n,), None, *bufs)

        ref_sync = raw.sync
    work = 16.0 * n
    target = at_least(0.9, "ref")
    fma = clgrad.compile(lambda x, y, z: x * y + z)
    cases = [
        ("a*b+c contiguous", lambda: ca * cb + cc, lambda: a * bb + c, T and (lambda: ta * tb + tc), target),
        ("addcmul(c, a, b) contiguous", lambda: clgrad.addcmul(cc, ca, cb), None,
         T and (lambda: T.addcmul(tc, ta, tb)), target),
        ("a.T*b+c strided", lambda: ca.t() * cb + cc, lambda: a.T * bb + c, T and (lambda: ta.t() * tb + tc),
         at_least(0.5, "ref")),
        ("a*row+col broadcast", lambda: ca * crow + ccol, lambda: a * row + col, T and (lambda: ta * trow + tcol),
         at_least(0.5, "ref")),
        ("compile(a*b+c) contiguous", lambda: fma(ca, cb, cc), None, None, target),
        ("compile(a*b+c) a.T strided", lambda: fma(ca.t(), cb, cc), None, None, at_least(0.5, "ref")),
        ("compile(a*b+c) row, col broadcast", lambda: fma(ca, crow, ccol), None, None, at_least(0.5, "ref")),
    ]
    for name, cfn, nfn, tfn, tgt in cases:
        name = f"{name} ({count(n)})"
        if b.wants(name):
            times = b.measure(clgrad=cfn, numpy=nfn, torch=tfn or None, ref=ref, ref_sync=ref_sync)
            b.add(name, times, work=work, unit="GB/s", target=tgt, ref_name="raw one-work-item kernel, contiguous")
    b.finish()
    return b


if __name__ == "__main__":
    main()
