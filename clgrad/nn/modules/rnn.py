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

from ...ops import creation
from ...ops.joins import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._cell_nodes import _FusedElmanCellStep, _FusedLSTMCellStep, elman_cell_ok, fused_cell
from ._rnn_nodes import _ElmanCellStep, _ElmanSequence, _LSTMCellStep, _LSTMSequence, _step  # noqa: F401 (tests)
from .module import Module

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "RNNBase", "RNN", "LSTM", "GRU"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


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
