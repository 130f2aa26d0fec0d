"""Eager dispatch overhead: microseconds per op on 16-element tensors, with no synchronize inside the loop.

    python bench/dispatch.py [--device opencl:N] [--quick] [--smoke] [--json out.json]

Each sample queues thousands of ops and stops the clock before the synchronize that follows, so the time per op
is the host's: clgrad's Python path plus the OpenCL enqueue. The "drained" row keeps the synchronize inside the
sample, showing how fast the device retires tiny kernels. The reference is a raw pyopencl kernel call with one
work-item per element on preallocated buffers: the floor for any OpenCL framework.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, RawCL, at_most  # noqa: E402

import clgrad  # noqa: E402

RAW_ADD = """
__kernel void add_raw(__global float *out, __global const float *a, __global const float *b) {
    size_t i = get_global_id(0);
    out[i] = a[i] + b[i];
}
"""


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv)
    d, T = b.device, b.torch
    x = np.arange(16, dtype=np.float32)
    ca, cb = clgrad.tensor(x, device=d), clgrad.tensor(x + 1, device=d)
    cg = clgrad.tensor(x, device=d, requires_grad=True)
    m = np.ones((16, 16), np.float32)
    cm = clgrad.tensor(m, device=d)
    na, nb = x.copy(), x + 1
    ta, tb, tg, tm = (T.from_numpy(x.copy()), T.from_numpy(x + 1), T.tensor(x, requires_grad=True),
                      T.from_numpy(m)) if T else (None,) * 4
    ref, ref_sync = None, None
    if b.on_cl:
        raw = RawCL(d)
        kernel = raw.kernel(RAW_ADD, "add_raw")
        bufs = [raw.empty(64), raw.buffer(x), raw.buffer(x + 1)]

        def ref():
            kernel(raw.queue, (16,), None, *bufs)

        ref_sync = raw.sync
    limit = at_most(10e-6)

    def inplace():
        ca.add_(cb)

    def np_inplace():
        np.add(na, nb, out=na)

    cases = [
        ("a + b (16 elems)", lambda: ca + cb, lambda: na + nb, T and (lambda: ta + tb), ref, limit),
        ("a.add_(b) in place", inplace, np_inplace, T and (lambda: ta.add_(tb)), ref, limit),
        ("a * 2.0 (python scalar)", lambda: ca * 2.0, lambda: na * 2.0, T and (lambda: ta * 2.0), ref, limit),
        ("a + b, a.requires_grad (tracked)", lambda: cg + cb, None, T and (lambda: tg + tb), ref, None),
        ("relu(a)", lambda: clgrad.relu(ca), lambda: np.maximum(na, 0), T and (lambda: T.relu(ta)), ref, None),
        ("a.sum() (16 elems)", lambda: ca.sum(), lambda: na.sum(), T and (lambda: ta.sum()), None, None),
        ("m @ m (16x16)", lambda: cm @ cm, lambda: m @ m, T and (lambda: tm @ tm), None, None),
    ]
    for name, cfn, nfn, tfn, rfn, target in cases:
        if b.wants(name):
            times = b.measure(clgrad=cfn, numpy=nfn, torch=tfn or None, ref=rfn, ref_sync=ref_sync, warmup=3,
                              host_only=True)
            b.add(name, times, target=target, ref_name="raw pyopencl add kernel call")
    name = "a + b (16 elems), drained"
    if b.wants(name):
        times = b.measure(clgrad=cases[0][1], numpy=cases[0][2], torch=cases[0][3] or None, ref=ref,
                          ref_sync=ref_sync, warmup=3)
        b.add(name, times, ref_name="raw pyopencl add kernel call")
    b.finish()
    return b


if __name__ == "__main__":
    main()
