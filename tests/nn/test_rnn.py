"""Recurrent layers against PyTorch: same weights (moved through state_dict as numpy), same outputs, final
states and gradients; kernel reuse across time steps; gradcheck of a cell in float64."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.nn.modules import activation_mha as A
from clgrad.nn.modules import rnn as R
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")

# (constructor expression, input shape, state shapes or None); the same expression builds the torch module
CELLS = [
    ("RNNCell(3, 4)", (2, 3), [(2, 4)]),
    ("RNNCell(3, 4, nonlinearity='relu', bias=False)", (2, 3), None),
    ("RNNCell(3, 4)", (3,), [(4,)]),
    ("LSTMCell(3, 4)", (2, 3), [(2, 4), (2, 4)]),
    ("LSTMCell(3, 4, bias=False)", (3,), None),
    ("GRUCell(3, 4)", (2, 3), [(2, 4)]),
    ("GRUCell(3, 4)", (3,), None),
]

SEQS = [
    ("RNN(3, 4)", (5, 2, 3), [(1, 2, 4)]),
    ("RNN(3, 4, 2, nonlinearity='relu', batch_first=True)", (2, 5, 3), None),
    ("RNN(3, 4, bias=False, bidirectional=True)", (4, 3), [(2, 4)]),
    ("LSTM(3, 4)", (5, 2, 3), None),
    ("LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)", (2, 4, 3), [(4, 2, 4), (4, 2, 4)]),
    ("LSTM(3, 4, 2)", (4, 3), [(2, 4), (2, 4)]),
    ("GRU(3, 4)", (5, 2, 3), [(1, 2, 4)]),
    ("GRU(3, 4, num_layers=2, bidirectional=True)", (4, 2, 3), None),
    ("GRU(3, 4, bias=False, batch_first=True)", (1, 3, 3), None),
    # LSTM with projections: h (and the output) has proj_size features, c hidden_size
    ("LSTM(3, 5, proj_size=2)", (4, 2, 3), [(1, 2, 2), (1, 2, 5)]),
    ("LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=3, batch_first=True)", (2, 4, 3), None),
    ("LSTM(3, 5, 2, bias=False, bidirectional=True, proj_size=2)", (4, 3), [(4, 2), (4, 5)]),
    ("LSTM(3, 5, 2, proj_size=4)", (3, 2, 3), [(2, 2, 4), (2, 2, 5)]),
    # hidden sizes of whole 16-wide vectors: the sequence kernels with the recurrent product inside (CPU devices),
    # batches that are not a multiple of their 8 rows per work-item
    ("LSTM(3, 16)", (6, 5, 3), None),
    ("LSTM(3, 32, 2, bias=False, bidirectional=True, batch_first=True)", (5, 9, 3), [(4, 5, 32), (4, 5, 32)]),
    ("LSTM(3, 16)", (4, 3), [(1, 16), (1, 16)]),
]


def _flat(out) -> list:
    """Every tensor of a nested (output, (h, c)) result, in order."""
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


def _assert_grads_match(xs, txs, mod, tmod, rtol=1e-4, atol=1e-5, param_atol=1e-4) -> None:
    """The inputs' and the parameters' gradients of clgrad's ``mod`` against PyTorch's ``tmod``."""
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=rtol, atol=atol)
    tparams = dict(tmod.named_parameters())
    for name, p in mod.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), tparams[name].grad.numpy(), rtol=rtol, atol=param_atol,
                                   err_msg=name)


def _compare(device, expr, in_shape, state_shapes, rtol=1e-4, atol=1e-5):
    rng = np.random.default_rng(0)
    tmod = eval("torch.nn." + expr)
    mod = eval("R." + expr)
    assert list(mod.state_dict()) == list(tmod.state_dict())
    for (name, p), (tname, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        assert name == tname and tuple(p.shape) == tuple(tp.shape)
    mod.load_state_dict({k: v.numpy() for k, v in tmod.state_dict().items()})
    mod.to(device)
    arrays = [rng.standard_normal(in_shape).astype(np.float32)]
    arrays += [rng.standard_normal(s).astype(np.float32) for s in state_shapes or []]
    xs = [clgrad.tensor(a, device=device, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    args, targs = [xs[0]], [txs[0]]
    if state_shapes:  # one state tensor alone, two as an LSTM's (h, c) pair
        args.append(xs[1] if len(xs) == 2 else tuple(xs[1:]))
        targs.append(txs[1] if len(txs) == 2 else tuple(txs[1:]))
    outs, touts = _flat(mod(*args)), _flat(tmod(*targs))
    assert len(outs) == len(touts)
    loss, tloss = 0, 0
    for o, to in zip(outs, touts):
        assert tuple(o.shape) == tuple(to.shape)
        np.testing.assert_allclose(o.detach().cpu().numpy(), to.detach().numpy(), rtol=rtol, atol=atol)
        w = rng.standard_normal(tuple(to.shape)).astype(np.float32)
        loss = loss + (o * clgrad.tensor(w, device=device)).sum()
        tloss = tloss + (to * torch.tensor(w)).sum()
    loss.backward()
    tloss.backward()
    _assert_grads_match(xs, txs, mod, tmod, rtol, atol)


@pytest.mark.parametrize("expr,in_shape,state_shapes", CELLS, ids=[f"{e}-{s}" for e, s, _ in CELLS])
def test_cell_matches_torch(device, expr, in_shape, state_shapes):
    _compare(device, expr, in_shape, state_shapes)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("expr,in_shape,state_shapes", SEQS, ids=[f"{e}-{s}" for e, s, _ in SEQS])
def test_sequence_matches_torch(device, expr, in_shape, state_shapes):
    _compare(device, expr, in_shape, state_shapes)


@pytest.mark.parametrize("cls,chunks", [(R.RNNCell, 1), (R.LSTMCell, 4), (R.GRUCell, 3)])
def test_cell_shapes_and_init(cls, chunks):
    cell = cls(5, 16)
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert tuple(cell.weight_ih.shape) == (chunks * 16, 5) and tuple(cell.weight_hh.shape) == (chunks * 16, 16)
    bound = 1 / math.sqrt(16)
    for p in cell.parameters():
        a = p.detach().numpy()
        assert np.all(np.abs(a) <= bound) and a.std() > bound / 4


def test_repr_matches_torch():
    for expr in ["RNNCell(3, 4, nonlinearity='relu', bias=False)", "LSTMCell(3, 4)",
                 "LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True)", "GRU(2, 3)",
                 "RNN(3, 4, bias=False)", "LSTM(3, 4, 2, proj_size=2, bias=False)"]:
        assert repr(eval("R." + expr)) == repr(eval("torch.nn." + expr))


@pytest.mark.parametrize("expr", ["LSTM(5, 16, proj_size=4)", "LSTM(5, 16, 2, bias=False, bidirectional=True, "
                                  "proj_size=3)"])
def test_lstm_projection_parameters_and_init(expr):
    lstm, tlstm = eval("R." + expr), eval("torch.nn." + expr)
    assert [(n, tuple(p.shape)) for n, p in lstm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tlstm.named_parameters()]
    assert [[tuple(p.shape) for p in group] for group in lstm.all_weights] == \
        [[tuple(p.shape) for p in group] for group in tlstm.all_weights]
    bound = 1 / math.sqrt(16)  # every weight, weight_hr included, is uniform(+-1/sqrt(hidden_size))
    for name, p in lstm.named_parameters():
        a = p.detach().numpy()
        assert np.all(np.abs(a) <= bound) and a.std() > bound / 4, name


@pytest.mark.parametrize("mode,chunks", [("RNN_TANH", 1), ("RNN_RELU", 1), ("LSTM", 4), ("GRU", 3)])
def test_cell_step_gradcheck(device, mode, chunks):
    """In float64; on a device without cl_khr_fp64 in float32, with a wider step and tolerance (a gradient off by
    1% still fails), so that the device's backward kernels are checked there too."""
    rng = np.random.default_rng(1)
    shapes = [(2, 2), (2, 3), (chunks * 3, 2), (chunks * 3, 3), (chunks * 3,), (chunks * 3,)]
    dtype, tols = (np.float64, {}) if fp64_ok(device) else (np.float32, dict(eps=1e-3, atol=1e-3, rtol=1e-2))
    inputs = [clgrad.tensor(rng.standard_normal(s).astype(dtype), device=device, requires_grad=True) for s in shapes]

    def step(x, h, w_ih, w_hh, b_ih, b_hh):
        state = (h, h * 0.5) if mode == "LSTM" else h
        return R._step(mode, F.linear(x, w_ih, b_ih), state, w_hh, b_hh)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Input #", UserWarning)  # float32 inputs, on purpose
        assert gradcheck(step, inputs, **tols)


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM"])
@pytest.mark.parametrize("bias", [True, False])
def test_cell_module_is_one_node_and_twice_differentiable(device, mode, bias):
    """RNNCell/LSTMCell run as one fused autograd node (R._ElmanCellStep, R._LSTMCellStep): gradcheck through the
    module, and gradgradcheck (create_graph differentiates the composed step), as PyTorch's cells allow."""
    from clgrad.autograd import gradgradcheck

    rng = np.random.default_rng(2)
    dtype, tols = (np.float64, {}) if fp64_ok(device) else (np.float32, dict(eps=1e-3, atol=1e-3, rtol=1e-2))
    cell = (R.LSTMCell(3, 2, bias=bias) if mode == "LSTM" else
            R.RNNCell(3, 2, bias=bias, nonlinearity="tanh" if mode == "RNN_TANH" else "relu"))
    cell = cell.to(device=device, dtype=clgrad.float64 if dtype == np.float64 else clgrad.float32)
    x, h, c = (clgrad.tensor(rng.standard_normal((2, n)).astype(dtype), device=device, requires_grad=True)
               for n in (3, 2, 2))
    out = cell(x, (h, c)) if mode == "LSTM" else cell(x, h)
    first = out[0] if mode == "LSTM" else out
    assert "CellStep" in type(first.grad_fn).__name__

    def fn(x, h, c):
        o = cell(x, (h, c)) if mode == "LSTM" else cell(x, h)
        return o if mode == "LSTM" else (o + 0 * c,)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Input #", UserWarning)
        assert gradcheck(fn, (x, h, c), **tols)
        if dtype == np.float64:
            assert gradgradcheck(fn, (x, h, c))


@pytest.mark.parametrize("used", ["h", "c", "both"])
def test_lstm_cell_one_node_matches_torch_with_either_output_unused(device, used):
    """On a backend with fused LSTM kernels an LSTMCell step is one node over x, (h, c), both weights and both
    biases (_cell_nodes.py); an unused output's gradient is None there, and the gradients match PyTorch's."""
    rng = np.random.default_rng(5)
    tcell = torch.nn.LSTMCell(3, 4)
    cell = R.LSTMCell(3, 4)
    cell.load_state_dict({k: v.numpy() for k, v in tcell.state_dict().items()})
    cell.to(device)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (5, 4), (5, 4))]
    xs = [clgrad.tensor(a, device=device, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    h, c = cell(xs[0], (xs[1], xs[2]))
    th, tc = tcell(txs[0], (txs[1], txs[2]))
    if device.startswith("opencl"):
        assert type(h.grad_fn).__name__.startswith("_FusedLSTMCellStep")
    pick = {"h": lambda a, b: a, "c": lambda a, b: b, "both": lambda a, b: a * 2 + b}[used]
    (pick(h, c) ** 2).sum().backward()
    (pick(th, tc) ** 2).sum().backward()
    _assert_grads_match(xs, txs, cell, tcell, param_atol=1e-5)


def test_dropout_between_layers_only_in_training(device):
    gru = R.GRU(3, 8, num_layers=2, dropout=0.5).to(device)
    x = clgrad.tensor(np.random.default_rng(3).standard_normal((4, 2, 3)).astype(np.float32), device=device)
    gru.eval()
    a, b = gru(x)[0].cpu().numpy(), gru(x)[0].cpu().numpy()
    np.testing.assert_array_equal(a, b)
    gru.train()
    outs = [gru(x)[0].detach().cpu().numpy() for _ in range(3)]
    assert not all(np.array_equal(outs[0], o) for o in outs[1:])


def test_kernels_do_not_grow_with_sequence_length(device):
    if not device.startswith("opencl"):
        pytest.skip("counts OpenCL kernels")
    from clgrad.backends.opencl import runtime

    dev = runtime.get(int(device.split(":")[1]))
    rng = np.random.default_rng(4)
    for expr in ["LSTM(3, 4, num_layers=2, bidirectional=True)", "GRU(3, 4)", "RNN(3, 4)"]:
        mod = eval("R." + expr).to(device)

        def run(steps, mod=mod):
            x = clgrad.tensor(rng.standard_normal((steps, 2, 3)).astype(np.float32), device=device,
                              requires_grad=True)
            out = mod(x)[0]
            out.sum().backward()
            return out.cpu().numpy()

        # warm up with lengths 2..9: a composed step's weight gradients arrive once per step and are summed up to 8
        # at a time (autograd/_grad_sum.py), one kernel per count of 2..8, so the counts a sequence leaves over are
        # built by then; much longer sequences reach other reduction plans (sizes, not lengths: 17 and 33 add a
        # reduce_sum variant)
        for steps in range(2, 10):
            run(steps)
        before = len(dev.kernels)
        for steps in (3, 5, 9, 12, 16):
            run(steps)
        assert len(dev.kernels) == before, expr


def test_errors():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        R.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        R.LSTM(3, 4, dropout=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        R.GRU(3, 4, dropout=0.2)
    assert any("non-zero dropout expects num_layers greater than 1" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        R.GRU(3, 4)(clgrad.zeros(1, 1, 1, 3))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        R.GRU(3, 4)(clgrad.zeros(2, 1, 2))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 1, 4\), got \[1, 1, 4\]"):
        R.GRU(3, 4, 2)(clgrad.zeros(2, 1, 3), clgrad.zeros(1, 1, 4))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        R.RNN(3, 4)(clgrad.zeros(2, 1, 3), clgrad.zeros(1, 4))
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D instead"):
        R.LSTMCell(3, 4)(clgrad.zeros(1, 1, 3))


# (constructor, input shape, state shapes, error type, PyTorch's message): checked against torch too
ERRORS = [
    ("LSTM(3, 4, proj_size=4)", None, None, ValueError, "proj_size has to be smaller than hidden_size"),
    ("LSTM(3, 4, proj_size=-1)", None, None, ValueError,
     "proj_size should be a positive integer or zero to disable projections"),
    ("LSTM(3, 5, proj_size=2)", (2, 1, 3), [(1, 1, 5), (1, 1, 5)], RuntimeError,
     "Expected hidden[0] size (1, 1, 2), got [1, 1, 5]"),
    ("LSTM(3, 5, proj_size=2)", (2, 1, 3), [(1, 1, 2), (1, 1, 2)], RuntimeError,
     "Expected hidden[1] size (1, 1, 5), got [1, 1, 2]"),
    ("LSTM(3, 5, proj_size=2)", (2, 3), [(1, 3), (1, 5)], RuntimeError,
     "Expected hidden[0] size (1, 1, 2), got [1, 1, 3]"),
    ("LSTM(3, 4)", (2, 1, 3), [(1, 4), (1, 1, 4)], RuntimeError,
     "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 3-D) tensors"),
    ("GRU(3, 4, 2)", (2, 3), [(1, 4)], RuntimeError, "Expected hidden size (2, 1, 4), got [1, 1, 4]"),
    ("RNN(3, 4)", (1, 1, 1, 3), None, ValueError, "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    ("LSTM(3, 4)", (1, 1, 1, 3), None, ValueError, "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    # the cells' state checks (the fused LSTMCell kernels index the state by the input's batch)
    ("LSTMCell(3, 4)", (2, 3), [(2, 5), (2, 4)], RuntimeError, "hidden0 has inconsistent hidden_size: got 5, expected 4"),
    ("LSTMCell(3, 4)", (2, 3), [(2, 4), (2, 5)], RuntimeError, "hidden1 has inconsistent hidden_size: got 5, expected 4"),
    ("LSTMCell(3, 4)", (2, 3), [(3, 4), (3, 4)], RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 3"),
    ("LSTMCell(3, 4)", (2, 5), None, RuntimeError, "input has inconsistent input_size: got 5 expected 3"),
    ("RNNCell(3, 4)", (2, 3), [(1, 4)], RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 1"),
    ("GRUCell(3, 4)", (2, 3), [(2, 3)], RuntimeError, "hidden0 has inconsistent hidden_size: got 3, expected 4"),
]


@pytest.mark.parametrize("expr,in_shape,state_shapes,kind,message", ERRORS, ids=[e[-1][:40] for e in ERRORS])
def test_errors_match_torch(expr, in_shape, state_shapes, kind, message):
    for lib, mod in ((torch, torch.nn), (clgrad, R)):
        with pytest.raises(kind) as caught:
            layer = eval(expr, None, vars(mod))
            states = [lib.zeros(*s) for s in state_shapes or []]
            layer(lib.zeros(*in_shape), *([tuple(states)] if len(states) == 2 else states))
        assert str(caught.value) == message, lib.__name__


# ---- MultiheadAttention (clgrad/nn/modules/activation_mha.py) ----------------------------------------------

# (constructor, query/key/value shapes, forward kwargs built from numpy masks by _mha_masks)
MHA = [
    ("MultiheadAttention(8, 2)", [(3, 2, 8), (4, 2, 8), (4, 2, 8)], {}),
    ("MultiheadAttention(8, 2, batch_first=True)", [(2, 3, 8)] * 3, {"need_weights": False}),
    ("MultiheadAttention(8, 4, kdim=5, vdim=6, bias=False)", [(3, 2, 8), (4, 2, 5), (4, 2, 6)],
     {"average_attn_weights": False}),
    ("MultiheadAttention(8, 2)", [(3, 8), (4, 8), (4, 8)], {"key_padding_mask": "bool1"}),
    ("MultiheadAttention(8, 2, batch_first=True)", [(2, 3, 8), (2, 4, 8), (2, 4, 8)],
     {"key_padding_mask": "bool2", "attn_mask": "bool2d"}),
    ("MultiheadAttention(8, 2, dropout=0.3)", [(3, 2, 8), (4, 2, 8), (4, 2, 8)], {"attn_mask": "float2d"}),
    ("MultiheadAttention(8, 2)", [(3, 2, 8), (4, 2, 8), (4, 2, 8)], {"attn_mask": "bool3d"}),
    ("MultiheadAttention(8, 2, add_bias_kv=True)", [(3, 2, 8), (4, 2, 8), (4, 2, 8)],
     {"key_padding_mask": "bool2", "attn_mask": "bool2d"}),
    ("MultiheadAttention(8, 2, add_zero_attn=True, batch_first=True)", [(2, 3, 8), (2, 4, 8), (2, 4, 8)],
     {"key_padding_mask": "bool2", "attn_mask": "bool2d", "average_attn_weights": False}),
    ("MultiheadAttention(8, 4, add_bias_kv=True, add_zero_attn=True, batch_first=True)", [(2, 3, 8), (2, 4, 8),
     (2, 4, 8)], {"key_padding_mask": "bool2", "attn_mask": "bool3d_4h"}),
    ("MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, kdim=5, vdim=6)",
     [(3, 2, 8), (4, 2, 5), (4, 2, 6)], {"attn_mask": "bool3d"}),
    ("MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, bias=False)", [(3, 8), (4, 8), (4, 8)],
     {"attn_mask": "float2d"}),
    ("MultiheadAttention(8, 2, add_zero_attn=True)", [(3, 8), (4, 8), (4, 8)], {"key_padding_mask": "bool1"}),
]


def _mha_masks(kwargs, rng):
    """numpy arrays for the mask kwargs; no query row is fully masked (that gives NaN in both libraries)."""
    made = {}
    for key, kind in kwargs.items():
        if kind == "bool1":
            made[key] = np.array([False, True, False, True])
        elif kind == "bool2":
            made[key] = np.array([[False, False, True, True], [False, True, False, False]])
        elif kind == "bool2d":
            made[key] = np.array([[False, True, False, True], [False, False, True, False], [True, False, False, False]])
        elif kind == "float2d":
            made[key] = rng.standard_normal((3, 4)).astype(np.float32)
        elif kind in ("bool3d", "bool3d_4h"):  # (batch*heads, tgt, src) for batch 2 and 2 or 4 heads
            m = rng.random((4 if kind == "bool3d" else 8, 3, 4)) > 0.6
            m[:, :, 0] = False
            made[key] = m
        else:
            made[key] = kind
    return made


@pytest.mark.parametrize("expr,shapes,kwargs", MHA, ids=[f"{e}-{k}" for e, _, k in MHA])
def test_multihead_attention_matches_torch(device, expr, shapes, kwargs):
    rng = np.random.default_rng(5)
    tmod, mod = eval("torch.nn." + expr), eval("A." + expr)
    assert list(mod.state_dict()) == list(tmod.state_dict())
    assert repr(mod) == repr(tmod)
    sd = tmod.state_dict()
    for k in sd:
        if k.endswith("bias"):  # torch initialises the biases to zero; make them count
            sd[k] = torch.tensor(rng.standard_normal(tuple(sd[k].shape)).astype(np.float32))
    tmod.load_state_dict(sd)
    mod.load_state_dict({k: v.numpy() for k, v in sd.items()})
    mod.to(device).eval()  # eval: no attention dropout
    tmod.eval()
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    xs = [clgrad.tensor(a, device=device, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    masks = _mha_masks(kwargs, rng)
    kw = {k: clgrad.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    (out, w), (tout, tw) = mod(*xs, **kw), tmod(*txs, **tkw)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert (w is None) == (tw is None)
    if w is not None:
        np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rng.standard_normal(tuple(tout.shape)).astype(np.float32)
    (out * clgrad.tensor(g, device=device)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    _assert_grads_match(xs, txs, mod, tmod)


def test_multihead_attention_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        A.MultiheadAttention(6, 4)
    mha = A.MultiheadAttention(4, 2)
    x = clgrad.zeros(3, 1, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*, but should be \(3, 3\)."):
        mha(x, x, x, attn_mask=clgrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint."):
        mha(x, x, x, is_causal=True)


def test_multihead_attention_bias_kv_init():
    mha = A.MultiheadAttention(64, 4, add_bias_kv=True)
    assert list(mha.state_dict()) == list(torch.nn.MultiheadAttention(64, 4, add_bias_kv=True).state_dict())
    for p in (mha.bias_k, mha.bias_v):
        assert tuple(p.shape) == (1, 1, 64) and p.requires_grad
        assert 0.08 < float(p.std()) < 0.17  # xavier_normal_: std = sqrt(2 / (64 + 64)) = 0.125
    assert A.MultiheadAttention(8, 2).bias_k is None


def test_multihead_attention_dropout_only_in_training(device):
    mha = A.MultiheadAttention(8, 2, dropout=0.5).to(device)
    x = clgrad.tensor(np.random.default_rng(6).standard_normal((5, 2, 8)).astype(np.float32), device=device)
    outs = [mha(x, x, x)[1].detach().cpu().numpy() for _ in range(3)]
    assert not all(np.array_equal(outs[0], o) for o in outs[1:])
    mha.eval()
    a, b = (mha(x, x, x)[1].detach().cpu().numpy() for _ in range(2))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a.sum(-1), np.ones((2, 5)), rtol=1e-5)


def _sequence_precision(device):
    """(dtype, gradient rtol, atol, gradcheck kwargs) of the fused-sequence tests: float64, or float32 on a device
    without cl_khr_fp64 (the outputs still match the composed cell to 1e-12: both round alike)."""
    if fp64_ok(device):
        return np.float64, 1e-10, 1e-12, {}
    return np.float32, 1e-5, 1e-6, dict(eps=1e-3, atol=1e-3, rtol=1e-2)


def _gradcheck32(fn, inputs, **tols):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Input #", UserWarning)  # float32 inputs on a device without fp64
        return gradcheck(fn, inputs, **tols)


@pytest.mark.parametrize("act,reverse,bias", [("tanh", False, True), ("relu", False, True), ("tanh", True, False),
                                              ("relu", True, False)])
def test_elman_sequence_matches_the_composed_cell(device, act, reverse, bias):
    """nn.RNN's fused sequence node against the per-step composed cell it replaces: outputs, every gradient
    (gates, initial state, weight, bias), and gradcheck in float64 (float32 without cl_khr_fp64)."""
    dtype, grtol, gatol, tols = _sequence_precision(device)
    rng = np.random.default_rng(7)
    shapes = [(5, 2, 3), (2, 3), (3, 3)] + ([(3,)] if bias else [])
    make_inputs = lambda: [clgrad.tensor((rng.standard_normal(s) * 0.7).astype(dtype), device=device,  # noqa: E731
                                         requires_grad=True) for s in shapes]
    inputs = make_inputs()
    gi, h0, w_hh = inputs[:3]
    b_hh = inputs[3] if bias else None
    fused = R._ElmanSequence.apply(gi, h0, w_hh, b_hh, act, reverse)
    twins = [x.detach().clone().requires_grad_() for x in inputs]
    h, outs = twins[1], [None] * 5
    for t in (range(4, -1, -1) if reverse else range(5)):
        h = outs[t] = R._step(f"RNN_{act.upper()}", twins[0][t], h, twins[2], twins[3] if bias else None)
    composed = clgrad.stack(outs)
    np.testing.assert_allclose(fused.detach().cpu().numpy(), composed.detach().cpu().numpy(), rtol=1e-12, atol=1e-12)
    weights = clgrad.tensor(rng.standard_normal((5, 2, 3)).astype(dtype), device=device)
    (fused * weights).sum().backward()
    (composed * weights).sum().backward()
    for x, twin in zip(inputs, twins):
        np.testing.assert_allclose(x.grad.cpu().numpy(), twin.grad.cpu().numpy(), rtol=grtol, atol=gatol)
    assert _gradcheck32(lambda *xs: R._ElmanSequence.apply(xs[0], xs[1], xs[2], xs[3] if bias else None, act,
                                                           reverse), make_inputs(), **tols)


@pytest.mark.parametrize("hidden", [3, 16])
@pytest.mark.parametrize("reverse,bias", [(False, True), (True, False)])
def test_lstm_sequence_matches_the_composed_cell(device, reverse, bias, hidden):
    """nn.LSTM's fused sequence node against the composed cell: outputs, final c, every gradient, gradcheck (float32
    without cl_khr_fp64). 16 hidden units take the sequence kernels with the recurrent product inside on CPU
    devices (lstm_seq_step)."""
    dtype, grtol, gatol, tols = _sequence_precision(device)
    rng = np.random.default_rng(8)
    shapes = [(4, 2, 4 * hidden), (2, hidden), (2, hidden), (4 * hidden, hidden)] + ([(4 * hidden,)] if bias else [])
    make_inputs = lambda: [clgrad.tensor((rng.standard_normal(s) * 0.7).astype(dtype), device=device,  # noqa: E731
                                         requires_grad=True) for s in shapes]
    inputs = make_inputs()
    hs, cs = R._LSTMSequence.apply(*inputs[:4], inputs[4] if bias else None, reverse)
    twins = [x.detach().clone().requires_grad_() for x in inputs]
    state, houts, couts = (twins[1], twins[2]), [None] * 4, [None] * 4
    for t in (range(3, -1, -1) if reverse else range(4)):
        state = R._step("LSTM", twins[0][t], state, twins[3], twins[4] if bias else None)
        houts[t], couts[t] = state
    h_ref, c_ref = clgrad.stack(houts), clgrad.stack(couts)
    for a, b in ((hs, h_ref), (cs, c_ref)):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-12, atol=1e-12)
    wh, wc = (clgrad.tensor(rng.standard_normal((4, 2, hidden)).astype(dtype), device=device) for _ in range(2))
    ((hs * wh).sum() + (cs[0 if reverse else -1] * wc[0]).sum()).backward()
    ((h_ref * wh).sum() + (c_ref[0 if reverse else -1] * wc[0]).sum()).backward()
    for x, twin in zip(inputs, twins):
        np.testing.assert_allclose(x.grad.cpu().numpy(), twin.grad.cpu().numpy(), rtol=grtol, atol=gatol)
    if hidden > 3:  # gradcheck in all ~1,700 inputs took minutes on llvmpipe: the gates and states only
        w, b = inputs[3].detach(), inputs[4].detach() if bias else None
        small = [x.detach()[:2, :1].clone().requires_grad_() if k == 0 else x.detach()[:1].clone().requires_grad_()
                 for k, x in enumerate(inputs[:3])]  # two steps of one row: 160 inputs
        assert _gradcheck32(lambda gi, h, c: sum(o.sum(0) for o in R._LSTMSequence.apply(gi, h, c, w, b, reverse)),
                            small, **tols)
        return
    assert _gradcheck32(lambda *xs: R._LSTMSequence.apply(*xs[:4], xs[4] if bias else None, reverse)[0].sum(0)
                        + R._LSTMSequence.apply(*xs[:4], xs[4] if bias else None, reverse)[1].sum(0), make_inputs(),
                        **tols)


@pytest.mark.oclgrind
def test_lstm_kernels_oclgrind(device, capfd):
    """The fused LSTM step kernels (rnn.cl.mako) forward and backward, with and without the next step's carries:
    an LSTMCell step (one node), a two-step LSTM sequence and one of 16 hidden units (the sequence kernels with the
    recurrent product inside, 9 rows: a partial block of 8), against PyTorch; no memory error or data race."""
    from tests.ops.test_conv import _assert_simulator_clean

    rng = np.random.default_rng(6)
    for expr, in_shape in (("LSTMCell(3, 5)", (2, 3)), ("LSTM(3, 5)", (2, 2, 3)), ("LSTM(3, 16)", (3, 9, 3))):
        tmod, mod = eval("torch.nn." + expr), eval("R." + expr)
        mod.load_state_dict({k: v.numpy() for k, v in tmod.state_dict().items()})
        mod.to(device)
        a = rng.standard_normal(in_shape).astype(np.float32)
        x, tx = clgrad.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, tout = _flat(mod(x)), _flat(tmod(tx))
        sum((o * o).sum() for o in out).backward()
        sum((o * o).sum() for o in tout).backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    _assert_simulator_clean(device, capfd)


def test_lstm_sequence_kernels_run_on_cpu_devices(device):
    """On a CPU OpenCL device a sequence of 16k hidden units runs one launch per step each way (the recurrent product
    inside: lstm_seq_forward/backward), with the same results as the product-then-step form."""
    if not device.startswith("opencl"):
        pytest.skip("counts OpenCL launches")
    from clgrad.backends.opencl import runtime
    from clgrad.profiler import profile

    if runtime.get(int(device.split(":")[1])).rank < 2:
        pytest.skip("GPUs keep the product and the step kernel")
    lstm = R.LSTM(4, 16).to(device)
    x = clgrad.tensor(np.random.default_rng(9).standard_normal((5, 3, 4)).astype(np.float32), device=device,
                      requires_grad=True)
    with profile() as prof:
        out, _ = lstm(x)
        out.sum().backward()
        clgrad.opencl.synchronize()
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts.get("lstm_seq_forward_float") == 5 and counts.get("lstm_seq_backward_float") == 5, counts
    assert "lstm_step_float" not in counts, counts
