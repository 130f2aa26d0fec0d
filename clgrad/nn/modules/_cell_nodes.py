"""Cell steps as one autograd node over all their inputs: x, the state, both weights and both biases.

LSTMCell (with the fused LSTM kernels, ``backends.get(device).fused_rnn``): ``gi = x W_ih^T + b_ih`` (linear's
fused-bias product), ``h W_hh^T`` and one kernel forward, and one kernel, four products and one bias sum backward:
the bias gradient is the gates' gradient summed over the batch, the same for b_ih and b_hh, so it is summed once.
As two nodes (a linear, then the recurrent step) the backward also zero-filled the next step's carries, copied h
and summed the bias gradient twice: 10 launches a step instead of 6 (PyTorch's time_sequence_prediction example
makes 200 such steps per training step). RNNCell (any backend, float32/64): the same with the registry's fused
``rnn_tanh``/``rnn_relu`` ops, 6 launches backward instead of 9. Values and their rounding are those of the
two-node forms.
"""
from __future__ import annotations

from ... import _amp_state
from ... import dtypes as D
from ...autograd import grad_mode
from ...autograd.function import Function
from ...ops import creation
from ...ops import pointwise as P
from ...ops.linalg import _mm_fast, matmul_bias
from ...tensor import Tensor
from .. import functional as F
from ._rnn_nodes import _composed_cell_backward, _fused_lstm, _lstm_step, _rnn_step, relu, tanh


def fused_cell(x, h, c, w_ih, b_hh):
    """The backend's fused LSTM steps when this cell step can be one ``_FusedLSTMCellStep`` node: the conditions of
    ``elman_cell_ok`` for x, h and c, and of the sequence node (``_fused_lstm``); else None (the linear + step form)."""
    if not elman_cell_ok(x, h, w_ih) or c.dtype is not w_ih.dtype:
        return None
    return _fused_lstm(x, b_hh)


def _t(w):
    """The transpose of 2-D ``w``, as a view (no autograd: the node's forward and backward run untracked)."""
    return w._view((w._shape[1], w._shape[0]), (w._strides[1], w._strides[0]))


def _mm(a, b):
    """The untracked product of 2-D a and b: linalg's fast path straight to the backend (~10 us less than
    ``a.matmul(b)`` of Python per product), else the checked one."""
    out = _mm_fast(a, b)
    return out if out is not None else a.matmul(b)


class _FusedLSTMCellStep(Function):
    """``(h', c')`` of one LSTMCell step; backward is not differentiable again except through the composed step
    (under ``create_graph`` the composed cell is differentiated, as for the sequence nodes)."""

    @staticmethod
    def forward(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh, fused):
        if b_ih is None:
            gi = _mm(x, _t(w_ih))
        elif (b_ih.dtype is w_ih.dtype and b_ih._shape == (w_ih._shape[0],) and w_ih._shape[1] == x._shape[-1]
              and b_ih.device == w_ih.device == x.device):
            gi = matmul_bias(x, _t(w_ih), b_ih)  # linear's product with the bias in its store, no checks again
        else:
            gi = F.linear(x, w_ih, b_ih)  # its checks and errors
        dt, dev = gi.dtype, gi.device
        pre, c_new, h_new = Tensor._empty(gi._shape, dt, dev), Tensor._empty(c._shape, dt, dev), Tensor._empty(
            h._shape, dt, dev)
        ctx.inputs = (x, h, c, w_ih, w_hh, b_ih, b_hh)
        c = c.contiguous()
        fused.lstm_step(gi.contiguous(), _mm(h, _t(w_hh)), b_hh, c, pre, c_new, h_new)
        ctx.save_for_backward(x, h, c, w_ih, w_hh, pre, c_new)
        ctx.fused = fused
        return h_new, c_new

    @staticmethod
    def backward(ctx, gh, gc):
        if grad_mode.is_grad_enabled():
            def step(x, h, c, w_ih, w_hh, b_ih, b_hh):
                return _lstm_step(F.linear(x, w_ih, b_ih), (h, c), w_hh, b_hh)

            return (*_composed_cell_backward(ctx.inputs, step, (gh, gc)), None)
        x, h, c, w_ih, w_hh, pre, c_new = ctx.saved_tensors
        zeros = lambda t: creation.zeros(t.shape, dtype=t.dtype, device=t.device)  # noqa: E731
        gh = zeros(h) if gh is None else gh.contiguous()
        gc = zeros(c) if gc is None else gc.contiguous()
        dpre, dc = Tensor._empty(pre._shape, pre.dtype, pre.device), Tensor._empty(c._shape, c.dtype, c.device)
        ctx.fused.lstm_step_backward(gh, None, gc, None, pre, c_new, c, dpre, dc)
        need = ctx.needs_input_grad
        dx = _mm(dpre, w_ih) if need[0] else None
        dh = _mm(dpre, w_hh) if need[1] else None
        dpre_t = _t(dpre)
        dw_ih = _mm(dpre_t, x) if need[3] else None
        dw_hh = _mm(dpre_t, h) if need[4] else None
        db = dpre.sum(0) if need[5] or need[6] else None
        return dx, dh, dc if need[2] else None, dw_ih, dw_hh, db if need[5] else None, db if need[6] else None, None


def elman_cell_ok(x, h, w_ih) -> bool:
    """Whether an RNNCell step can be one ``_FusedElmanCellStep`` node: float32/64 operands of one dtype, no autocast
    region open (else the linear + ``_ElmanCellStep`` form)."""
    dt = w_ih.dtype
    return dt in (D.float32, D.float64) and _amp_state.active() is None and x.dtype is dt and h.dtype is dt


class _FusedElmanCellStep(Function):
    """``h'`` of one RNNCell step, ``act(x W_ih^T + b_ih + (h W_hh^T + b_hh))``; differentiable again only through
    the composed step (under ``create_graph``)."""

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih, b_hh, act):
        gi = F.linear(x, w_ih, b_ih)
        out = Tensor._empty(gi._shape, gi.dtype, gi.device)
        P.apply(f"rnn_{act}", gi, _mm(h, _t(w_hh)), 0.0 if b_hh is None else b_hh, out=out)
        ctx.save_for_backward(x, h, w_ih, w_hh, out)
        ctx.act, ctx.inputs = act, (x, h, w_ih, w_hh, b_ih, b_hh)
        return out

    @staticmethod
    def backward(ctx, g):
        if grad_mode.is_grad_enabled():
            act = tanh if ctx.act == "tanh" else relu

            def step(x, h, w_ih, w_hh, b_ih, b_hh):
                return _rnn_step(act, F.linear(x, w_ih, b_ih), h, w_hh, b_hh)

            return (*_composed_cell_backward(ctx.inputs, step, (g,)), None)
        x, h, w_ih, w_hh, out = ctx.saved_tensors
        dz = Tensor._empty(out._shape, out.dtype, out.device)
        P.apply(f"rnn_{ctx.act}_backward", g, 0.0, out, out=dz)  # no carry from a next step
        need = ctx.needs_input_grad
        dz_t = _t(dz)
        db = dz.sum(0) if need[4] or need[5] else None
        return (_mm(dz, w_ih) if need[0] else None, _mm(dz, w_hh) if need[1] else None,
                _mm(dz_t, x) if need[2] else None, _mm(dz_t, h) if need[3] else None,
                db if need[4] else None, db if need[5] else None, None)
