"""Recurrent layers: RNNCell, LSTMCell, GRUCell and the multi-layer RNN, LSTM, GRU.

Parameter names, shapes, gate order and initialisation follow PyTorch, so weights move by ``state_dict``.
A sequence runs as one ``linear`` over all time steps for the input part of every gate, then one cell
step per time step built from the same ops on same-shaped views, so the kernels built at the first step
are reused at every later one (the number of kernels does not grow with sequence length).
"""
from __future__ import annotations

import math
import numbers
import warnings

from ... import backends
from ... import dtypes as D
from ...autograd import grad_mode
from ...autograd.engine import grad as autograd_grad
from ...autograd.function import Function, once_differentiable
from ...ops import creation
from ...ops import pointwise as P
from ...ops.joins import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._cell_nodes import _FusedElmanCellStep, _FusedLSTMCellStep, elman_cell_ok, fused_cell
from .module import Module

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "RNNBase", "RNN", "LSTM", "GRU"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


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


def _check_nonlinearity(nonlinearity: str) -> str:
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


# ---- cells ---------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Holds weight_ih (G*hidden, input), weight_hh (G*hidden, hidden), bias_ih, bias_hh (G*hidden)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(creation.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(creation.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx):
        """(batched input, batched state or None, whether the input was batched), checked as PyTorch does."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for h in (hx if isinstance(hx, tuple) else (hx,)):
                if h.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            if hx is not None:
                hx = tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(0)
        return input, hx, batched

    def _check_shapes(self, input, hx) -> None:
        """PyTorch's cell checks (RuntimeError): the fused kernels index the state by the input's batch."""
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        for label, h in enumerate(() if hx is None else hx if isinstance(hx, tuple) else (hx,)):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size "
                                   f"{h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {h.shape[1]}, expected "
                                   f"{self.hidden_size}")

    def _zeros(self, input):
        return creation.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)

    def _run(self, mode: str, input, hx):
        input, hx, batched = self._prepare(input, hx)
        self._check_shapes(input, hx)
        if hx is None:
            hx = (self._zeros(input), self._zeros(input)) if mode == "LSTM" else self._zeros(input)
        if mode == "LSTM":
            fused = fused_cell(input, hx[0], hx[1], self.weight_ih, self.bias_hh)
            if fused is not None:  # the whole step as one node (see _cell_nodes.py)
                out = _FusedLSTMCellStep.apply(input, hx[0], hx[1], self.weight_ih, self.weight_hh, self.bias_ih,
                                      self.bias_hh, fused)
                return out if batched else tuple(o.squeeze(0) for o in out)
        elif mode != "GRU" and elman_cell_ok(input, hx, self.weight_ih):  # the whole step as one node
            out = _FusedElmanCellStep.apply(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                                            mode[4:].lower())
            return out if batched else out.squeeze(0)
        gi = F.linear(input, self.weight_ih, self.bias_ih)
        if mode == "LSTM" and gi.dtype.is_floating_point:
            out = _LSTMCellStep.apply(gi, hx[0], hx[1], self.weight_hh, self.bias_hh)
        elif mode != "GRU" and gi.dtype.is_floating_point:
            out = _ElmanCellStep.apply(gi, hx, self.weight_hh, self.bias_hh, mode[4:].lower())
        else:
            out = _step(mode, gi, hx, self.weight_hh, self.bias_hh)
        if batched:
            return out
        return tuple(o.squeeze(0) for o in out) if mode == "LSTM" else out.squeeze(0)


class RNNCell(RNNCellBase):
    """``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        self._mode = _check_nonlinearity(nonlinearity)
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._run(self._mode, input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``; gates i, f, g, o."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        return self._run("LSTM", input, hx)


class GRUCell(RNNCellBase):
    """One GRU step; gates r, z, n."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._run("GRU", input, hx)


# ---- multi-layer sequences -----------------------------------------------------------------------------

class RNNBase(Module):
    """Parameters ``weight_ih_l{k}{_reverse}``, ``weight_hh_l{k}{_reverse}``, ``bias_ih_l{k}{_reverse}``,
    ``bias_hh_l{k}{_reverse}`` (and, for an LSTM with ``proj_size > 0``, ``weight_hr_l{k}{_reverse}`` of shape
    (proj_size, hidden_size), which projects h) registered in PyTorch's order (layer, then direction)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        _check_sizes(input_size, hidden_size, num_layers, dropout, proj_size)
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        gate_size, real_hidden = _GATES[mode] * hidden_size, proj_size or hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        for layer in range(num_layers):
            for suffix in self._suffixes():
                layer_in = input_size if layer == 0 else real_hidden * len(self._suffixes())
                shapes = {"weight_ih": (gate_size, layer_in), "weight_hh": (gate_size, real_hidden)}
                if bias:
                    shapes.update({"bias_ih": (gate_size,), "bias_hh": (gate_size,)})
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(creation.empty(shape, **kw)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def _suffixes(self) -> tuple:
        return ("", "_reverse") if self.bidirectional else ("",)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op: there is no cuDNN weight buffer to compact."""

    @property
    def all_weights(self) -> list:
        per = (4 if self.bias else 2) + (self.proj_size > 0)
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    def _weights(self, layer: int, suffix: str) -> tuple:
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("bias_ih"), get("weight_hh"), get("bias_hh"), get("weight_hr")

    def _direction(self, x, state, layer: int, suffix: str):
        """Run one direction of one layer over x (L, N, in); returns (outputs (L, N, H), final state)."""
        w_ih, b_ih, w_hh, b_hh, w_hr = self._weights(layer, suffix)
        gi = F.linear(x, w_ih, b_ih)  # every time step's input gates in one matmul
        if self.mode in ("RNN_TANH", "RNN_RELU") and gi.dtype.is_floating_point:
            out = _ElmanSequence.apply(gi, state, w_hh, b_hh, self.mode[4:].lower(), bool(suffix))
            return out, out[0 if suffix else -1]
        if self.mode == "LSTM" and w_hr is None and gi.dtype.is_floating_point:
            hs, cs = _LSTMSequence.apply(gi, state[0], state[1], w_hh, b_hh, bool(suffix))
            last = 0 if suffix else -1
            return hs, (hs[last], cs[last])
        steps = range(x.shape[0] - 1, -1, -1) if suffix else range(x.shape[0])
        outputs = [None] * x.shape[0]
        for t in steps:
            state = _step(self.mode, gi[t], state, w_hh, b_hh, w_hr)
            outputs[t] = state[0] if self.mode == "LSTM" else state
        return stack(outputs, 0), state

    def _run(self, x, hx):
        """x (L, N, in) time-major and batched; hx (layers*dirs, N, H) or for LSTM the pair (h, c) (h has
        proj_size features when projecting)."""
        ndir = len(self._suffixes())
        finals = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for d, suffix in enumerate(self._suffixes()):
                k = layer * ndir + d
                state = (hx[0][k], hx[1][k]) if self.mode == "LSTM" else hx[k]
                out, state = self._direction(x, state, layer, suffix)
                outs.append(out)
                finals.append(state)
            x = outs[0] if ndir == 1 else cat(outs, 2)
        if self.mode == "LSTM":
            return x, (stack([f[0] for f in finals], 0), stack([f[1] for f in finals], 0))
        return x, stack(finals, 0)

    def _check_input(self, input) -> bool:
        if input.dim() not in (2, 3):
            name = self.mode.split("_")[0]  # PyTorch names the class, and only RNN's message says "tensor"
            tail = " tensor" if name == "RNN" else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail} instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        return input.dim() == 3

    def _check_hidden(self, hx, batched: bool, shapes: tuple) -> tuple:
        """The given states, batched, after PyTorch's checks (the sizes are checked on the batched shapes)."""
        pair = self.mode == "LSTM"
        states = tuple(hx) if pair else (hx,)
        want = 3 if batched else 2
        if any(h.dim() != want for h in states):
            kind = f"{'batched 3-D' if batched else 'unbatched 2-D'} input"
            if pair:
                dims = ", ".join(f"{h.dim()}-D" for h in states)
                raise RuntimeError(f"For {kind}, hx and cx should also be {want}-D but got ({dims}) tensors")
            raise RuntimeError(f"For {kind}, hx should also be {want}-D but got {hx.dim()}-D tensor")
        if not batched:
            states = tuple(h.unsqueeze(1) for h in states)
        names = ("hidden[0]", "hidden[1]") if pair else ("hidden",)
        for h, shape, name in zip(states, shapes, names):
            if tuple(h.shape) != shape:
                raise RuntimeError(f"Expected {name} size {shape}, got {list(h.shape)}")
        return states

    def forward(self, input, hx=None):
        batched = self._check_input(input)
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        layers, n = self.num_layers * len(self._suffixes()), x.shape[1]
        # h has proj_size features when an LSTM projects, c always hidden_size
        shapes = ((layers, n, self.proj_size or self.hidden_size), (layers, n, self.hidden_size))
        pair = self.mode == "LSTM"
        if hx is None:
            states = tuple(creation.zeros(s, dtype=input.dtype, device=input.device) for s in shapes)
        else:
            states = self._check_hidden(hx, batched, shapes)
        out, hn = self._run(x, states if pair else states[0])
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            hn = tuple(h.squeeze(1) for h in hn) if pair else hn.squeeze(1)
        return out, hn


def _check_sizes(input_size, hidden_size, num_layers, dropout, proj_size) -> None:
    if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1):
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                         "element being zeroed")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` (or relu), returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        mode = _check_nonlinearity(nonlinearity)
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Multi-layer LSTM; returns ``(output, (h_n, c_n))``. With ``proj_size > 0`` each step's h is projected by
    ``weight_hr_l{k}`` to proj_size features (h_0, h_n and the output have proj_size features, c hidden_size)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Multi-layer GRU; returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
