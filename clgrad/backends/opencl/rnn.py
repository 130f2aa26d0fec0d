"""Fused LSTM time steps on OpenCL (an op family of OpenCLBackend): one launch per step forward, one backward.

An optional primitive: ``nn.LSTM``'s sequence node calls it when the backend has it and the dtype is float32 or
float64, and otherwise composes the same step from elementwise table ops. The kernels evaluate those ops'
own expressions in the same order, so both forms round alike (half would round between ops, so it composes).
"""
from __future__ import annotations

import numpy as np

from ...registry.elementwise import OPS
from ..common import INT32_MAX
from . import looplimit, programs
from .launch import Launcher

_STEP_OPS = ("rnn_pre", "lstm_c", "lstm_h", "add", "lstm_do", "lstm_dc", "lstm_di", "lstm_df", "lstm_dg", "lstm_dcprev")


# rows of the state one work-item of the sequence kernels computes (a 16-wide vector of each gate for each):
# [32, 128] x [128, 512] and the gates took 92, 44, 30 and 26 us with 1, 2, 4 and 8 rows on PoCL (AMD EPYC)
SEQ_ROWS = 8
_SEQ = (("rows", SEQ_ROWS),)  # the sequence kernels' render parameter
_NAMES = {"forward": "lstm_step", "backward": "lstm_step_backward", "seq_forward": "lstm_seq_forward",
          "seq_backward": "lstm_seq_backward"}


class CLRNN:
    PRIMITIVES = ("lstm_step", "lstm_step_backward", "lstm_seq_usable", "lstm_seq_step", "lstm_seq_step_backward")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher
        self._kernels = launcher.cache()  # the step kernels by device, direction, dtype, index width, bias, carries

    def lstm_step(self, gi, hw, bias, c_prev, pre, c, h) -> None:
        """``pre = gi + (hw + bias)`` (gates [N, 4H]), then the new cell ``c`` and hidden ``h`` [N, H] from
        ``c_prev``. Every tensor contiguous; ``bias`` [4H] or None."""
        tensors = [gi, hw] + ([bias] if bias is not None else []) + [c_prev, pre, c, h]
        self._launch("forward", tensors, c_prev, bias is not None, (pre, c, h))

    def lstm_step_backward(self, grad_h, dh_next, grad_c, dc_next, pre, c, c_prev, dpre, dc_prev) -> None:
        """The gates' gradients ``dpre`` [N, 4H] and ``dc_prev`` [N, H] of one step, from the step's incoming
        gradients (``grad_h + dh_next``, ``grad_c + dc_next``) and its saved gates, cell and previous cell."""
        if dh_next is None:  # a lone step (LSTMCell): no carries from a next step to add
            self._launch("backward", [grad_h, grad_c, pre, c, c_prev, dpre, dc_prev], c_prev, False, (dpre, dc_prev),
                         extra=(("carry", False),))
        else:
            self._launch("backward", [grad_h, dh_next, grad_c, dc_next, pre, c, c_prev, dpre, dc_prev], c_prev, False,
                         (dpre, dc_prev))

    def lstm_seq_usable(self, like, hidden: int) -> bool:
        """Whether ``lstm_seq_step`` serves a float32/64 sequence on ``like``'s device with ``hidden`` units: CPU
        devices (GPUs run the product's tiles better), a hidden size of whole 16-wide vectors, and a work-item's
        loop over 4 * hidden within what the device runs (llvmpipe's loop limit)."""
        dev = self.rt.dev(like)
        if dev.rank < 2 or hidden % 16 or like.dtype.ctype not in ("float", "double"):
            return False
        budget = looplimit.budget(dev)
        return budget is None or 4 * hidden + 64 <= budget

    def lstm_seq_step(self, gi, h, w_t, bias, c_prev, pre, c, h_new) -> None:
        """One step of a sequence with its recurrent product: ``pre = gi + (h @ w_t + bias)``, then ``c`` and
        ``h_new`` as ``lstm_step``. ``w_t`` is W_hh^T [H, 4H]; every tensor contiguous, ``bias`` [4H] or None."""
        tensors = [gi, h, w_t] + ([bias] if bias is not None else []) + [c_prev, pre, c, h_new]
        self._launch("seq_forward", tensors, c_prev, bias is not None, (pre, c, h_new), extra=_SEQ)

    def lstm_seq_step_backward(self, grad_h, dpre_next, w, grad_c, dc, pre, c, c_prev, dpre) -> None:
        """The gates' gradients ``dpre`` of one step with ``dh = grad_h + dpre_next @ w`` (``w`` = W_hh [4H, H];
        ``dpre_next`` None at the sequence's last step), and ``dc`` (dc_next in, dc_prev out, in place)."""
        has_next = dpre_next is not None
        tensors = [grad_h, dpre_next if has_next else dpre, w, grad_c, dc, pre, c, c_prev, dpre]
        self._launch("seq_backward", tensors, c_prev, False, (dc, dpre), extra=_SEQ, flag=(1, has_next))

    def _launch(self, mode: str, tensors: list, state, bias: bool, written: tuple, extra: tuple = (),
                flag: tuple | None = None) -> None:
        """One launch of rnn.cl.mako's ``mode`` kernel: each of ``tensors`` as a buffer and an offset (then, with
        ``flag`` = (slot, value), an int32 after tensor ``slot``), then H and the state's size (step kernels) or
        rows (sequence kernels); ``extra``: render parameters of this form; ``written``: the tensors it writes."""
        n = state.numel()
        if n == 0:
            return
        dev = self.rt.dev(state)
        ctype = state.dtype.ctype
        H = state.shape[-1]
        big = max(t._offset + t.numel() for t in tensors) > INT32_MAX
        key = (dev.index, mode, ctype, big, bias, extra)
        kernel = self._kernels.get(key)  # the lookup below hashes the ops' C text: ~10 us a step
        slot = None if flag is None else flag[0]
        if kernel is None:
            idx_np = np.int64 if big else np.int32
            ops = {name: OPS[name].c_expr(False) for name in _STEP_OPS}
            params = dict(mode=mode, ctype=ctype, fp64=ctype == "double", idx_t="long" if big else "int", bias=bias,
                          ops=tuple(sorted(ops.items())), **dict(extra))
            arg_dtypes = []
            for i in range(len(tensors)):
                arg_dtypes += [None, idx_np] + ([np.int32] if i == slot else [])
            kernel = self._kernels[key] = programs.get_kernel(
                dev, "rnn", f"{_NAMES[mode]}_{ctype}", tuple(arg_dtypes) + (idx_np, idx_np), params)
        args = []
        for i, t in enumerate(tensors):
            args += [t._storage.data, t._offset] + ([np.int32(flag[1])] if i == slot else [])
        if mode.startswith("seq"):  # SEQ_ROWS rows of 16-wide gate vectors per work-item
            kernel(dev.queue, (H // 16, -(-(n // H) // SEQ_ROWS)), (1, 1), *args, H, n // H)
        else:  # the exact grid: no tail to guard
            kernel(dev.queue, (H, n // H), None, *args, H, n)
        for t in written:
            t._storage.version += 1
