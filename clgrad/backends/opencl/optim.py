"""Fused optimizer steps on OpenCL (an op family of OpenCLBackend): one launch per parameter.

An optional primitive: optimizers call it through ``fused_step`` when the backend has it and every tensor
qualifies (contiguous, the parameter's float dtype, on one device), and otherwise compose the same update
from elementwise ops. Both forms round after the same operations, in the same order.

The kernels take the calling thread's error buffer (pending.py) and skip the update while a deferred device-side
check of that thread has failed and not been reported yet: a step after a bad batch changes no parameter or state
buffer, with no host sync (the host-side step count still advances).
"""
from __future__ import annotations

import numpy as np

from ..common import INT32_MAX
from . import capture, pending, programs
from .launch import Launcher, launch_size

# the template's switches: every render gets all of them (Mako runs with strict_undefined)
_FLAGS = dict(amsgrad=False, decay="none", momentum=False, first=False, nesterov=False, weight_decay=False,
              maximize=False)
_NP = {"float": np.float32, "double": np.float64}


def _next_step(first: int, lr, beta1, beta2, step, np_type):
    """A replayed Adam step's changing arguments (positions ``first``, ``first + 1``): each call is one step on."""
    count = [step]

    def args() -> dict:
        count[0] += 1
        s = count[0]
        return {first: np_type(-lr / (1 - beta1 ** s)), first + 1: np_type((1 - beta2 ** s) ** 0.5)}
    return args


class CLOptim:
    PRIMITIVES = ("adam_step", "sgd_step")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    def adam_step(self, p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, lr, beta1, beta2, eps, weight_decay,
                  decoupled, maximize, step) -> None:
        """One Adam/AdamW step of ``p`` in place (PyTorch's single-tensor algorithm)."""
        decay = "none" if weight_decay == 0 else "decoupled" if decoupled else "l2"
        flags = dict(amsgrad=max_exp_avg_sq is not None, maximize=bool(maximize), decay=decay)
        tensors = [p, grad, exp_avg, exp_avg_sq] + ([max_exp_avg_sq] if max_exp_avg_sq is not None else [])
        scalars = [lr, 1 - beta1, beta2, 1 - beta2, eps, weight_decay, 1 - lr * weight_decay,
                   -lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5]
        rec = capture.current()
        if rec is not None and p.numel():  # a graph replay is the next step: bias corrections as eager
            rec.dynamic(_next_step(2 * len(tensors) + 7, lr, beta1, beta2, step, _NP[p.dtype.ctype]))
        self._fused("adam", flags, tensors, scalars)

    def sgd_step(self, p, grad, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize, first) -> None:
        """One SGD step of ``p`` in place; ``buf`` (the momentum buffer, or None) is set from the gradient
        when ``first``."""
        flags = dict(momentum=buf is not None, first=bool(first), nesterov=bool(nesterov),
                     maximize=bool(maximize), weight_decay=weight_decay != 0)
        tensors = [p, grad] + ([buf] if buf is not None else [])
        self._fused("sgd", flags, tensors, [-lr, weight_decay, momentum, 1 - dampening])

    def _fused(self, kind: str, flags: dict, tensors: list, scalars: list) -> None:
        p = tensors[0]
        n = p.numel()
        if n == 0:
            return
        dev = self.rt.dev(p)
        ctype = p.dtype.ctype
        big = max(t._offset + n for t in tensors) > INT32_MAX
        idx_np = np.int64 if big else np.int32
        scalar_np = _NP[ctype]
        arg_dtypes = (None, idx_np) * len(tensors) + (scalar_np,) * len(scalars) + (idx_np, None)
        params = dict(_FLAGS, kind=kind, ctype=ctype, fp64=ctype == "double", idx_t="long" if big else "int", **flags)
        name = f"{kind}_step_{ctype}"
        kernel = programs.get_kernel(dev, "optim", name, arg_dtypes, params)
        args = []
        for t in tensors:
            args += [t._storage.data, t._offset]
        gsize, lsize = launch_size(dev, n)
        kernel(dev.queue, gsize, lsize, *args, *scalars, n, pending.error_buffer(dev))
        for t in tensors:
            if t is not tensors[1]:
                t._storage.version += 1
