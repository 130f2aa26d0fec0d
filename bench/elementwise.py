"""Elementwise ``a*b+c`` on 16M fp32: contiguous, strided (a transposed input) and broadcast, in GB/s.

    python bench/elementwise.py [--device opencl:N] [--quick] [--smoke] [--json out.json]

GB/s counts 16 bytes per output element (three float reads and one write) for every variant, so the rates compare
with the reference: a raw pyopencl kernel with one work-item per element on the contiguous arrays, the launch
geometry the issue found fastest on PoCL. ``a*b+c`` runs as two kernels in clgrad, numpy and torch alike;
``addcmul`` is the same math in one kernel, and so is ``clgrad.compile``'s fused ``a*b+c`` (its rows leave torch
out: torch.compile needs a C++ toolchain on CPU).

The ``x ** c`` rows (512x500 fp32, the issue's shape) time pow with a constant exponent against the op it equals,
run by clgrad as the "ref": ``x * x``, ``sqrt``, ``reciprocal``..., and the general pow against ``exp``.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, RawCL, at_least, at_most_times, count, rand  # noqa: E402

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
    pow_cases(b)
    b.finish()
    return b


def pow_cases(b: Bench) -> None:
    """``x ** c`` against the equivalent clgrad op (the "ref" column): the issue's <=1.5x for the special
    exponents and <=3x of exp's time for the general pow."""
    shape = b.pick((64, 50), (512, 500), (512, 500))
    x = abs(rand(shape, 6)) + 0.5  # positive: the general pow's result is a number
    cx, T = clgrad.tensor(x, device=b.device), b.torch
    tx = T.from_numpy(x) if T else None
    cases = [(2.0, "x * x", lambda: cx * cx, 1.5), (3.0, "x * x * x", lambda: cx * cx * cx, 1.5),
             (4, "(x * x).square()", lambda: (cx * cx).square(), 1.5), (0.5, "sqrt", lambda: cx.sqrt(), 1.5),
             (-0.5, "rsqrt", lambda: cx.rsqrt(), 1.5), (-1, "reciprocal", lambda: cx.reciprocal(), 1.5),
             (2.5, "exp", lambda: cx.exp(), 3.0)]
    for c, equiv, ref, factor in cases:
        name = f"x ** {c} vs {equiv} ({shape[0]}x{shape[1]})"
        if b.wants(name):
            times = b.measure(clgrad=lambda c=c: cx ** c, numpy=lambda c=c: x ** c, torch=T and (lambda c=c: tx ** c),
                              ref=ref, ref_sync=b.sync)
            b.add(name, times, target=at_most_times(factor, "ref"), ref_name=f"clgrad's {equiv}")


if __name__ == "__main__":
    main()
