"""The recurrent layers' autograd nodes and step functions (``rnn.py`` holds the modules).

A cell step composed from tracked ops (``_step``: what half/bfloat16, GRU and ``create_graph`` use), and the fused
nodes: a whole RNN or LSTM sequence (one layer, one direction) as one node, and the one-step cell nodes built on
them (``_ElmanCellStep``, ``_LSTMCellStep``; ``_cell_nodes.py`` has the whole-cell nodes that also take x and W_ih).
Values round like the composed ops; the fused backwards are not differentiable again (as cuDNN's in PyTorch).
"""
from __future__ import annotations

from ... import backends
from ... import dtypes as D
from ...autograd import grad_mode
from ...autograd.engine import grad as autograd_grad
from ...autograd.function import Function, once_differentiable
from ...ops import creation
from ...ops import pointwise as P
from ...ops.joins import cat
from .. import functional as F


# the Tensor methods carry autograd (the plain table functions of ops.math do not)
def sigmoid(x):
    return x.sigmoid()


def tanh(x):
    return x.tanh()


def relu(x):
    return x.relu()


# ---- one time step: gi = x @ W_ih^T + b_ih (precomputed), h/c the previous state ----------------------

def _rnn_step(act, gi, h, w_hh, b_hh):
    return act(gi + F.linear(h, w_hh, b_hh))


def _lstm_step(gi, state, w_hh, b_hh, w_hr=None):
    h, c = state
    i, f, g, o = (gi + F.linear(h, w_hh, b_hh)).chunk(4, 1)  # PyTorch's gate order
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c  # proj_size > 0: h is projected to proj_size


def _gru_step(gi, h, w_hh, b_hh):
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = tanh(i_n + r * h_n)  # the hidden bias of n sits inside r * (W_hn h + b_hn), as in PyTorch
    return n + z * (h - n)


def _step(mode: str, gi, state, w_hh, b_hh, w_hr=None):
    if mode == "LSTM":
        return _lstm_step(gi, state, w_hh, b_hh, w_hr)
    if mode == "GRU":
        return _gru_step(gi, state, w_hh, b_hh)
    return _rnn_step(tanh if mode == "RNN_TANH" else relu, gi, state, w_hh, b_hh)


def _transposed(w_hh, steps: int):
    """W_hh^T for ``steps`` recurrent products: a contiguous copy when there are several, so that the matmul kernel
    copies its tiles along their unit stride (h @ W^T of [32, 128] x [128, 512] took 60 us with the transposed view
    on PoCL and 35 us with the copy); the same kernel and summation order, so the same bits."""
    return w_hh.t().contiguous() if steps > 1 else w_hh.t()


def _at(x, t: int):
    """``x[t]`` for 0 <= t < len(x) as a plain view: the sequence Functions run untracked, and indexing's checks cost
    ~3 us each (a 50-step LSTM layer indexed ~650 times per training step)."""
    return x._view(x._shape[1:], x._strides[1:], x._offset + t * x._strides[0])


class _ElmanSequence(Function):
    """A whole sequence of an Elman RNN (tanh or relu) in one autograd node: per time step one matmul and one
    fused ``act(gi + (h @ W_hh^T + b_hh))`` kernel, and in backward one fused kernel and one matmul, with the
    weight and bias gradients of all steps as one matmul and one sum at the end. The composed cell took ~10
    tracked ops per step and direction. Its values round like the composed ops; its backward is not
    differentiable again (as cuDNN's RNN in PyTorch)."""

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh, act: str, reverse: bool):
        steps = range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])
        out = creation.empty(gi.shape, dtype=gi.dtype, device=gi.device)
        w_t, h = _transposed(w_hh, gi.shape[0]), h0
        for t in steps:
            P.apply(f"rnn_{act}", _at(gi, t), h.matmul(w_t), 0.0 if b_hh is None else b_hh, out=_at(out, t))
            h = _at(out, t)
        ctx.save_for_backward(h0, w_hh, out)
        ctx.act, ctx.reverse, ctx.has_bias = act, reverse, b_hh is not None
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        h0, w_hh, out = ctx.saved_tensors
        L = out.shape[0]
        steps = range(L) if ctx.reverse else range(L - 1, -1, -1)  # backwards in time
        dz = creation.empty(out.shape, dtype=out.dtype, device=out.device)
        dh = creation.zeros(h0.shape, dtype=out.dtype, device=out.device)
        for t in steps:
            P.apply(f"rnn_{ctx.act}_backward", _at(grad_out, t), dh, _at(out, t), out=_at(dz, t))
            dh = _at(dz, t).matmul(w_hh)
        # h_{t-1} of every step, in time order: h0 first (forward) or last (reverse)
        prev = cat([out[1:], h0.unsqueeze(0)]) if ctx.reverse else cat([h0.unsqueeze(0), out[:-1]])
        flat = dz.reshape(-1, dz.shape[-1])
        grad_w = flat.t().matmul(prev.reshape(-1, prev.shape[-1])) if ctx.needs_input_grad[2] else None
        grad_b = flat.sum(0) if ctx.has_bias and ctx.needs_input_grad[3] else None
        return dz, dh, grad_w, grad_b, None, None


class _LSTMSequence(Function):
    """A whole LSTM sequence (one layer, one direction, no projection) in one autograd node. Per time step:
    one matmul, then fused kernels for the gate pre-activations, c' = sig(f) c + sig(i) tanh(g) and
    h' = sig(o) tanh(c'), rounding like the composed cell; backward: the gates' gradients in fused kernels and
    one matmul per step, the weight and bias gradients of all steps as one matmul and one sum at the end. Its
    backward is not differentiable again (as cuDNN's LSTM in PyTorch)."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh, reverse: bool):
        L, hidden = gi.shape[0], h0.shape[-1]
        steps = range(L - 1, -1, -1) if reverse else range(L)
        new = lambda shape: creation.empty(shape, dtype=gi.dtype, device=gi.device)  # noqa: E731
        pre, hs, cs = new(gi.shape), new((L,) + tuple(h0.shape)), new((L,) + tuple(c0.shape))
        w_t, h, c = _transposed(w_hh, L), h0, c0
        fused = _fused_lstm(gi, b_hh)
        if fused is not None:
            gi, c = gi.contiguous(), c0.contiguous()
        ctx.seq = fused is not None and L > 1 and fused.lstm_seq_usable(gi, hidden)
        if ctx.seq:  # CPU devices: each step's recurrent product in the step's own launch (w_t is a contiguous copy)
            h = h0.contiguous()
            for t in steps:
                fused.lstm_seq_step(_at(gi, t), h, w_t, b_hh, c, _at(pre, t), _at(cs, t), _at(hs, t))
                h, c = _at(hs, t), _at(cs, t)
            steps = ()
        for t in steps:
            if fused is not None:
                fused.lstm_step(_at(gi, t), h.matmul(w_t), b_hh, c, _at(pre, t), _at(cs, t), _at(hs, t))
                h, c = _at(hs, t), _at(cs, t)
                continue
            P.apply("rnn_pre", _at(gi, t), h.matmul(w_t), 0.0 if b_hh is None else b_hh, out=_at(pre, t))
            i, f, g, o = (_at(pre, t).narrow(1, k * hidden, hidden) for k in range(4))
            P.apply("lstm_c", i, f, g, c, out=_at(cs, t))
            P.apply("lstm_h", o, _at(cs, t), out=_at(hs, t))
            h, c = _at(hs, t), _at(cs, t)
        ctx.save_for_backward(h0, c0, w_hh, pre, hs, cs)
        ctx.reverse, ctx.has_bias = reverse, b_hh is not None
        return hs, cs

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_h, grad_c):
        h0, c0, w_hh, pre, hs, cs = ctx.saved_tensors
        L, hidden = hs.shape[0], hs.shape[-1]
        zeros = lambda shape: creation.zeros(shape, dtype=hs.dtype, device=hs.device)  # noqa: E731
        grad_h = zeros(hs.shape) if grad_h is None else grad_h
        grad_c = zeros(cs.shape) if grad_c is None else grad_c
        dpre = creation.empty(pre.shape, dtype=pre.dtype, device=pre.device)
        dh, dc_next = zeros(h0.shape), zeros(c0.shape)
        first = L - 1 if ctx.reverse else 0
        fused = _fused_lstm(hs, None)
        if fused is not None:
            grad_h, grad_c, c0 = grad_h.contiguous(), grad_c.contiguous(), c0.contiguous()
        order = range(L) if ctx.reverse else range(L - 1, -1, -1)
        if getattr(ctx, "seq", False):  # dh = grad_h + dpre_next @ W_hh inside each step's launch
            w, nxt = w_hh.contiguous(), None
            for t in order:
                c_prev = c0 if t == first else _at(cs, t + 1 if ctx.reverse else t - 1)
                fused.lstm_seq_step_backward(_at(grad_h, t), nxt, w, _at(grad_c, t), dc_next, _at(pre, t), _at(cs, t), c_prev, _at(dpre, t))
                nxt = _at(dpre, t)
            dh, order = nxt.matmul(w_hh), ()
        for t in order:
            c_prev = c0 if t == first else _at(cs, t + 1 if ctx.reverse else t - 1)
            if fused is not None:  # dc_next is read and then overwritten with dc_prev, element by element
                fused.lstm_step_backward(_at(grad_h, t), dh, _at(grad_c, t), dc_next, _at(pre, t), _at(cs, t), c_prev, _at(dpre, t), dc_next)
                dh = _at(dpre, t).matmul(w_hh)
                continue
            i, f, g, o = (_at(pre, t).narrow(1, k * hidden, hidden) for k in range(4))
            di, df, dg, do = (_at(dpre, t).narrow(1, k * hidden, hidden) for k in range(4))
            dh = _at(grad_h, t) + dh
            P.apply("lstm_do", dh, _at(cs, t), o, out=do)
            dc = P.apply("lstm_dc", _at(grad_c, t) + dc_next, dh, o, _at(cs, t))
            P.apply("lstm_di", dc, g, i, out=di)
            P.apply("lstm_df", dc, c_prev, f, out=df)
            P.apply("lstm_dg", dc, i, g, out=dg)
            dc_next = P.apply("lstm_dcprev", dc, f)
            dh = _at(dpre, t).matmul(w_hh)
        prev = cat([hs[1:], h0.unsqueeze(0)]) if ctx.reverse else cat([h0.unsqueeze(0), hs[:-1]])
        flat = dpre.reshape(-1, dpre.shape[-1])
        grad_w = flat.t().matmul(prev.reshape(-1, prev.shape[-1])) if ctx.needs_input_grad[3] else None
        grad_b = flat.sum(0) if ctx.has_bias and ctx.needs_input_grad[4] else None
        return dpre, dh, dc_next, grad_w, grad_b, None


def _composed_cell_backward(inputs, step, grads):
    """The gradients of ``step(*inputs)`` (the composed, recorded cell step) for ``grads``, with a graph: a fused
    cell's backward under ``create_graph`` (PyTorch's cells are twice differentiable; the fused kernels are not)."""
    with grad_mode.enable_grad():
        outs = step(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
    wrt = [t for t in inputs if t is not None and t.requires_grad]
    got = iter(autograd_grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True, allow_unused=True))
    return tuple(next(got) if t is not None and t.requires_grad else None for t in inputs)


class _LSTMCellStep(Function):
    """One LSTMCell step as one autograd node: the one-step case of _LSTMSequence (forward a matmul and one fused
    kernel, backward one fused kernel and the matmuls) where the composed cell recorded ~10 tracked ops forward and
    ~25 launches backward; under ``create_graph`` the composed step is differentiated instead."""

    @staticmethod
    def forward(ctx, gi, h, c, w_hh, b_hh):
        hs, cs = _LSTMSequence.forward(ctx, gi.unsqueeze(0), h, c, w_hh, b_hh, False)
        ctx.inputs = (gi, h, c, w_hh, b_hh)
        return hs[0], cs[0]

    @staticmethod
    def backward(ctx, gh, gc):
        if grad_mode.is_grad_enabled():
            step = lambda gi, h, c, w, b: _lstm_step(gi, (h, c), w, b)  # noqa: E731
            return _composed_cell_backward(ctx.inputs, step, (gh, gc))
        unsqueeze = lambda g: None if g is None else g.unsqueeze(0)  # noqa: E731
        dpre, dh, dc, gw, gb, _ = _LSTMSequence.backward(ctx, unsqueeze(gh), unsqueeze(gc))
        return dpre[0], dh, dc, gw, gb


class _ElmanCellStep(Function):
    """One RNNCell step as one autograd node: the one-step case of _ElmanSequence, as _LSTMCellStep."""

    @staticmethod
    def forward(ctx, gi, h, w_hh, b_hh, act: str):
        out = _ElmanSequence.forward(ctx, gi.unsqueeze(0), h, w_hh, b_hh, act, False)
        ctx.inputs = (gi, h, w_hh, b_hh)
        return out[0]

    @staticmethod
    def backward(ctx, g):
        if grad_mode.is_grad_enabled():
            step = lambda gi, h, w, b: _rnn_step(tanh if ctx.act == "tanh" else relu, gi, h, w, b)  # noqa: E731
            return (*_composed_cell_backward(ctx.inputs, step, (g,)), None)
        dz, dh, gw, gb, _, _ = _ElmanSequence.backward(ctx, g.unsqueeze(0))
        return dz[0], dh, gw, gb, None


def _fused_lstm(like, bias):
    """The backend's fused LSTM steps (``fused_rnn``) when it has them for these tensors' device and dtype, else None."""
    fused = backends.get(like.device).fused_rnn
    if fused is None or like.dtype not in (D.float32, D.float64):
        return None
    return fused if bias is None or bias.is_contiguous() else None
