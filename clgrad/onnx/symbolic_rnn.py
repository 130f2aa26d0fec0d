"""Module-level symbolics of ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU``: one ONNX RNN/LSTM/GRU node per layer; and of
the cells (``RNNCell``, ``LSTMCell``, ``GRUCell``): one such node over a sequence of one step.

A module call is recorded as one node (its inner ops are not traced), so the sequence length and the batch
stay free in the exported graph and no step is unrolled. The weights are re-laid out once, as constants: ONNX
orders LSTM gates (i, o, f, c) where PyTorch has (i, f, g, o), and GRU gates (z, r, h) where PyTorch has
(r, z, n); GRU runs with ``linear_before_reset=1``, which is PyTorch's formula. An LSTM with ``proj_size > 0``
has no ONNX counterpart: it is traced op by op instead.
"""
from __future__ import annotations

import numpy as np

from ..nn.modules.rnn import LSTMCell, RNNBase, RNNCell, RNNCellBase
from .symbolic_helper import register_module

_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _gates(w, mode: str, hidden: int) -> np.ndarray:
    """Rows of a [gates * hidden, ...] weight (or bias) put in ONNX's gate order."""
    return np.concatenate([w[k * hidden:(k + 1) * hidden] for k in _ORDER[mode]])


def _layer_weights(m, layer: int, dt):
    """W [dirs, G*H, in], R [dirs, G*H, H], B [dirs, 2*G*H] of one layer, in ONNX's layout."""
    ws, rs, bs = [], [], []
    for suffix in m._suffixes():
        w_ih, b_ih, w_hh, b_hh, _ = m._weights(layer, suffix)
        host = lambda t: t.detach()._host().astype(dt.np)  # noqa: E731
        ws.append(_gates(host(w_ih), m.mode, m.hidden_size))
        rs.append(_gates(host(w_hh), m.mode, m.hidden_size))
        if b_ih is not None:
            bs.append(np.concatenate([_gates(host(b_ih), m.mode, m.hidden_size),
                                      _gates(host(b_hh), m.mode, m.hidden_size)]))
    return np.stack(ws), np.stack(rs), (np.stack(bs) if bs else None)


def _states(g, c, hx, batched: bool):
    """The initial state tensors (h, or h and c) as values shaped [layers*dirs, batch, H], or Nones."""
    if hx is None:
        return None, None
    pair = isinstance(hx, (tuple, list))
    alt_hx = _hx(c.alt) if c.alt is not None else None
    names = []
    for k, t in enumerate(hx if pair else (hx,)):
        other = (alt_hx[k] if pair else alt_hx) if alt_hx is not None else None
        v = g.value(t, other, c.name, c.node.keys.get(id(t)))
        names.append(v if batched else g.unsqueeze(v, [1]))
    return (names[0], names[1]) if pair else (names[0], None)


def _hx(node):
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("hx")


@register_module(RNNBase, accepts=lambda m: not m.proj_size)
def _rnn(g, c):
    m = c.node.fn
    x_t = c.node.args[0]
    dt, batched = x_t.dtype, x_t.dim() == 3
    x = g.value(x_t, c.alt.args[0] if c.alt is not None else None, c.name, c.node.keys.get(id(x_t)))
    if not batched:
        x = g.unsqueeze(x, [1])
    elif m.batch_first:
        x = g.op("Transpose", x, perm=[1, 0, 2])
    h0, c0 = _states(g, c, _hx(c.node), batched)
    ndir = len(m._suffixes())
    attrs = {"hidden_size": m.hidden_size, "direction": "bidirectional" if ndir == 2 else "forward"}
    if m.mode == "GRU":
        attrs["linear_before_reset"] = 1
    elif m.mode == "RNN_RELU":
        attrs["activations"] = ["Relu"] * ndir
    finals_h, finals_c = [], []
    for layer in range(m.num_layers):
        w, r, b = _layer_weights(m, layer, dt)
        rows = [layer * ndir, (layer + 1) * ndir]
        init_h = g.slice(h0, rows[:1], rows[1:], [0]) if h0 is not None else None
        init_c = g.slice(c0, rows[:1], rows[1:], [0]) if c0 is not None else None
        ins = [x, g.const(w), g.const(r), None if b is None else g.const(b), None, init_h]
        if m.mode == "LSTM":
            ins.append(init_c)
        outs = g.op(_OP[m.mode], *ins, outputs=3 if m.mode == "LSTM" else 2, **attrs)
        y = g.op("Transpose", outs[0], perm=[0, 2, 1, 3])  # [seq, dirs, batch, H] -> [seq, batch, dirs, H]
        x = g.op("Reshape", y, g.ints([0, 0, -1]))
        finals_h.append(outs[1])
        if m.mode == "LSTM":
            finals_c.append(outs[2])
    out = x
    if not batched:
        out = g.squeeze(out, [1])
    elif m.batch_first:
        out = g.op("Transpose", out, perm=[1, 0, 2])
    results = [out]
    for finals in (finals_h, finals_c) if m.mode == "LSTM" else (finals_h,):
        h = finals[0] if len(finals) == 1 else g.op("Concat", *finals, axis=0)
        results.append(h if batched else g.squeeze(h, [1]))
    return results


def _cell_mode(m) -> str:
    if isinstance(m, LSTMCell):
        return "LSTM"
    return m._mode if isinstance(m, RNNCell) else "GRU"


@register_module(RNNCellBase)
def _cell(g, c):
    """A cell step as its layer's ONNX node over one time step: x [N, in] -> [1, N, in], the states [N, H] ->
    [1, N, H] (an unbatched cell's [in] and [H] get a batch of one too), then Y_h (and Y_c) back to [N, H]."""
    m, mode = c.node.fn, _cell_mode(c.node.fn)
    x_t = c.node.args[0]
    dt, batched = x_t.dtype, x_t.dim() == 2
    x = g.value(x_t, c.alt.args[0] if c.alt is not None else None, c.name, c.node.keys.get(id(x_t)))
    x = g.unsqueeze(x, [0] if batched else [0, 1])
    hx = _hx(c.node)
    states = [None, None]
    if hx is not None:
        pair = isinstance(hx, (tuple, list))
        alt_hx = _hx(c.alt) if c.alt is not None else None
        for k, t in enumerate(hx if pair else (hx,)):
            other = (alt_hx[k] if pair else alt_hx) if alt_hx is not None else None
            v = g.value(t, other, c.name, c.node.keys.get(id(t)))
            states[k] = g.unsqueeze(v, [0] if batched else [0, 1])
    host = lambda t: t.detach()._host().astype(dt.np)  # noqa: E731
    w = _gates(host(m.weight_ih), mode, m.hidden_size)[None]
    r = _gates(host(m.weight_hh), mode, m.hidden_size)[None]
    b = None if m.bias_ih is None else np.concatenate([_gates(host(m.bias_ih), mode, m.hidden_size),
                                                        _gates(host(m.bias_hh), mode, m.hidden_size)])[None]
    attrs = {"hidden_size": m.hidden_size, "direction": "forward"}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1
    elif mode == "RNN_RELU":
        attrs["activations"] = ["Relu"]
    ins = [x, g.const(w), g.const(r), None if b is None else g.const(b), None, states[0]]
    if mode == "LSTM":
        ins.append(states[1])
    outs = g.op(_OP[mode], *ins, outputs=3 if mode == "LSTM" else 2, **attrs)
    drop = [0] if batched else [0, 1]
    if mode == "LSTM":
        return [g.squeeze(outs[1], drop), g.squeeze(outs[2], drop)]
    return [g.squeeze(outs[1], drop)]
