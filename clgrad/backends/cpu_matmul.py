"""cpu implementation of the ``matmul`` primitive (an op family of CPUBackend)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from .common import cast, compute_np, expand, view_of


class CPUMatmul:
    PRIMITIVES = ("matmul",)

    def __init__(self, backend):
        self.be = backend

    def matmul(self, out, a, b, bias=None) -> None:
        """out[i] = a[i] @ b[i] (+ bias [N]) for a [B, M, K], b [B, K, N] of any strides and out contiguous [B, M, N].

        Same arithmetic as the OpenCL kernel: float16 accumulates in float32; integers wrap around in
        their own width (summed in uint64, whose wrap-around numpy defines, then truncated).
        """
        if out.numel() == 0:
            return
        dt = out.dtype
        if dt is D.bool:
            raise NotImplementedError(f"'matmul' is not implemented for dtype bool on device {out.device}")
        work = compute_np(dt) if dt.kind == "f" else np.dtype(np.uint64)
        x, y = view_of(a).astype(work, copy=False), view_of(b).astype(work, copy=False)
        with np.errstate(all="ignore"):
            result = np.matmul(x, y)
        np.copyto(view_of(out), cast(result, dt), casting="unsafe")
        if bias is not None:  # rounded to the output dtype first, then added, as the kernel's store does
            self.be.elementwise("add", out, [out, expand(bias, out.shape)], dt)
