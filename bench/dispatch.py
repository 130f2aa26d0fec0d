"""Eager dispatch overhead: microseconds per op on 16-element tensors, with no synchronize inside the loop.

    python bench/dispatch.py [--device opencl:N] [--quick] [--smoke] [--json out.json] [--breakdown]

Each sample queues thousands of ops and stops the clock before the synchronize that follows, so the time per op
is the host's: clgrad's Python path plus the OpenCL enqueue. The "drained" row keeps the synchronize inside the
sample, showing how fast the device retires tiny kernels. The reference is a raw pyopencl kernel call with one
work-item per element on preallocated buffers: the floor for any OpenCL framework.

``--breakdown`` (OpenCL devices) then prints where the microseconds of ``a + b`` go: the same op with its cached
launch stubbed out (clgrad's Python alone), recorded for autograd with and without the launch, and the raw and
pre-bound enqueues, best-of and median over alternating samples of 500 ops (each sample synchronized).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyopencl as cl  # noqa: E402
from common import Bench, RawCL, at_most  # noqa: E402

import clgrad  # noqa: E402
from clgrad.ops import pointwise  # noqa: E402

RAW_ADD = """
__kernel void add_raw(__global float *out, __global const float *a, __global const float *b) {
    size_t i = get_global_id(0);
    out[i] = a[i] + b[i];
}
"""


def breakdown(b: Bench, raw: RawCL, kernel, bufs, ca, cb, cg) -> None:
    """Alternating best-of/median timings of ``a + b``'s layers (the Python path with its launch stubbed out)."""
    ca + cb
    key = pointwise._plan_key("add", (ca, cb), None, None)
    plan = pointwise._PLANS[key]
    stub = plan[:-1] + (lambda out, inputs: None,)  # the plan's last item is its launch
    bound = cl.Kernel(kernel.program, kernel.function_name)
    bound.set_args(*bufs)
    rows = [("raw pyopencl kernel call", lambda: kernel(raw.queue, (16,), None, *bufs), None),
            ("pre-bound enqueue (args set once)", lambda: cl.enqueue_nd_range_kernel(raw.queue, bound, (16,), None), None),
            ("a + b", lambda: ca + cb, plan), ("a + b, launch stubbed out", lambda: ca + cb, stub),
            ("a + b tracked", lambda: cg + cb, plan), ("a + b tracked, launch stubbed out", lambda: cg + cb, stub),
            ("plan key", lambda: pointwise._plan_key("add", (ca, cb), None, None), None)]
    times: dict = {name: [] for name, _, _ in rows}
    for _ in range(b.pick(1, 7, 15)):
        for name, fn, use in rows:
            if use is not None:
                pointwise._PLANS[key] = use
            start = time.perf_counter()
            for _ in range(500):
                fn()
            times[name].append((time.perf_counter() - start) / 500 * 1e6)
            raw.sync()
            b.sync()
    pointwise._PLANS[key] = plan
    print("\n| layer (16-element a + b) | best us | median us |\n|---|---|---|")
    for name, got in times.items():
        got.sort()
        print(f"| {name} | {got[0]:.2f} | {got[len(got) // 2]:.2f} |")


def main(argv=None) -> Bench:
    b = Bench(__doc__, __file__, argv, add_args=lambda ap: ap.add_argument(
        "--breakdown", action="store_true", help="also print where the microseconds of a + b go (OpenCL)"))
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
    if b.args.breakdown and b.on_cl:
        breakdown(b, raw, kernel, bufs, ca, cb, cg)
    return b


if __name__ == "__main__":
    main()
