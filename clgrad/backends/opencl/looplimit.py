"""The loop limit of Mesa's llvmpipe: a bound on the loop iterations of one work-item that no OpenCL query reports.

llvmpipe (rusticl, Mesa 22.x) compiles kernels with gallivm's loop limiter, meant for graphics shaders: once a
work-item (its SIMD batch of work-items) has run 65535 loop iterations, counting every loop of the kernel together,
every loop exits at its next test. Nothing fails: a longer loop returns a wrong answer (a sort of 5000 elements in
one work-item, a 200k-element row of layer_norm, a matmul with K = 70k all came back wrong). ``loop_limit`` measures
the limit once per device; the launchers whose kernels loop over a row, a window or the K of a product per
work-item keep each work-item's loop count within ``budget`` on such a device (a finer split of the same work, or a
path that already splits it), and ``check`` raises where no split exists instead of returning a wrong answer.

Other devices have no such limit: ``loop_limit`` is None for them without building anything (only llvmpipe is
probed, one tiny kernel, on first use).
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

PROBE_ITERATIONS = 1 << 20  # a loop this long must run to its end on a device without a limit
_PROBE = """
__kernel void clgrad_loop_probe(__global const int *ones, int mask, int n, __global int *out)
{
    int count = 0;
    for (int i = 0; i < n; ++i) count += ones[i & mask];  /* a load the compiler cannot fold the loop away from */
    out[0] = count;
}
"""
_limits: dict = {}  # device index -> limit or None (tests set entries to force a limit on any device)


def loop_limit(dev) -> int | None:
    """Most loop iterations one work-item of ``dev`` (a runtime.CLDevice) runs before its loops stop early, or
    None when its loops run to the end (every device but llvmpipe)."""
    if dev.index not in _limits:
        _limits[dev.index] = _probe(dev) if "llvmpipe" in dev.props.name.lower() else None
    return _limits[dev.index]


def budget(dev) -> int | None:
    """The loop iterations a launcher plans per work-item on ``dev`` (half the limit: the plans count loop trips
    approximately), or None when there is no limit."""
    limit = loop_limit(dev)
    return None if limit is None else max(limit // 2, 1)


def check(dev, iterations: int, what: str) -> None:
    """Raise where one work-item of ``dev`` would loop more than its limit allows (its result would be wrong)."""
    b = budget(dev)
    if b is not None and iterations > b:
        raise RuntimeError(
            f"{what} would loop about {iterations} times in one work-item, beyond what {dev.describe()} runs "
            f"reliably: its compiler stops all the loops of a work-item after {loop_limit(dev)} iterations in all "
            "(llvmpipe's loop limiter), which would give a wrong result. Use smaller sizes or another device."
        )


def _probe(dev) -> int | None:
    program = cl.Program(dev.context, _PROBE).build()
    kernel = cl.Kernel(program, "clgrad_loop_probe")
    mf = cl.mem_flags
    ones = cl.Buffer(dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ones(8, np.int32))
    out = cl.Buffer(dev.context, mf.WRITE_ONLY, 4)
    kernel(dev.queue, (1,), None, ones, np.int32(7), np.int32(PROBE_ITERATIONS), out)
    count = np.empty(1, np.int32)
    cl.enqueue_copy(dev.queue, count, out, is_blocking=True)
    return None if int(count[0]) >= PROBE_ITERATIONS else int(count[0])
