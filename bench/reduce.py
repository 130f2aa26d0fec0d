"""Reductions over 16M fp32 (full sum; per-row sum and max, per-column sum of 4096x4096), in GB/s read.

    python bench/reduce.py [--device opencl:N] [--quick] [--smoke] [--json out.json]

The reference is the device's memory bandwidth as a raw one-work-item-per-element copy kernel reaches it
(bytes read plus written); the issue's target is 70% of that for the bytes a reduction reads.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, RawCL, at_least, count, rand  # noqa: E402

import clgrad  # noqa: E402

RAW_COPY = """
__kernel void copy_raw(__global float *out, __global const float *a) {
    size_t i = get_global_id(0);
    out[i] = a[i];
}
"""


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    m = b.pick(64, 2048, 4096)
    n = m * m
    x = rand((m, m), 1)
    cx = clgrad.tensor(x, device=b.device)
    tx = b.torch.from_numpy(x) if b.torch else None
    ref, ref_sync = None, None
    if b.on_cl:
        raw = RawCL(b.device)
        kernel = raw.kernel(RAW_COPY, "copy_raw")
        bufs = [raw.empty(4 * n), raw.buffer(x)]

        def ref():
            kernel(raw.queue, (n,), None, *bufs)

        ref_sync = raw.sync
    cases = [
        (f"sum, all {count(n)}", lambda: cx.sum(), lambda: x.sum(), tx is not None and (lambda: tx.sum())),
        (f"sum(dim=1) {m}x{m}", lambda: cx.sum(1), lambda: x.sum(1), tx is not None and (lambda: tx.sum(1))),
        (f"amax(dim=1) {m}x{m}", lambda: cx.amax(1), lambda: x.max(1), tx is not None and (lambda: tx.amax(1))),
        (f"sum(dim=0) {m}x{m}", lambda: cx.sum(0), lambda: x.sum(0), tx is not None and (lambda: tx.sum(0))),
        (f"mean, all {count(n)}", lambda: cx.mean(), lambda: x.mean(), tx is not None and (lambda: tx.mean())),
    ]
    for name, cfn, nfn, tfn in cases:
        if b.wants(name):
            times = b.measure(clgrad=cfn, numpy=nfn, torch=tfn or None, ref=ref, ref_sync=ref_sync)
            b.add(name, times, work=4.0 * n, unit="GB/s", work_of={"ref": 8.0 * n}, target=at_least(0.7, "ref"),
                  ref_name="raw copy kernel (memory bandwidth)")
    b.finish()
    return b


if __name__ == "__main__":
    main()
