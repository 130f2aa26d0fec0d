"""nn.Transformer and its encoder/decoder (layers): torch's weights loaded through numpy, outputs and gradients
compared with torch's in eval mode (dropout off), with bool and float masks, batch_first and norm_first."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
from clgrad.nn.modules import transformer as T
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")

D, H, S, TGT, N = 8, 2, 5, 4, 2  # d_model, heads, source and target lengths, batch


def _layer_kwargs(lib, norm_first: bool, batch_first: bool) -> dict:
    """norm_first also switches the activation (gelu as a string), eps and bias, to cover them in few cases."""
    kw = dict(dim_feedforward=16, dropout=0.1, batch_first=batch_first, norm_first=norm_first)
    if norm_first:
        kw.update(activation="gelu", layer_norm_eps=1e-3, bias=False)
    return kw


def _build(lib, kind: str, norm_first: bool, batch_first: bool):
    kw = _layer_kwargs(lib, norm_first, batch_first)
    if kind == "encoder":
        return lib.TransformerEncoder(lib.TransformerEncoderLayer(D, H, **kw), 2, lib.LayerNorm(D),
                                      enable_nested_tensor=False)
    if kind == "decoder":
        return lib.TransformerDecoder(lib.TransformerDecoderLayer(D, H, **kw), 2, lib.LayerNorm(D))
    return lib.Transformer(D, H, 2, 1, **kw)


def _masks(kind: str, use_bool: bool, rng) -> dict:
    """Causal target masks, padding masks that never hide a whole row, as numpy arrays."""
    causal = np.triu(np.ones((TGT, TGT), bool), 1)
    pad_src = np.zeros((N, S), bool)
    pad_src[1, -2:] = True
    pad_tgt = np.zeros((N, TGT), bool)
    pad_tgt[0, -1] = True
    src_mask = rng.random((S, S)) < 0.3
    np.fill_diagonal(src_mask, False)
    mem_mask = np.zeros((TGT, S), bool)
    mem_mask[:, 1] = True

    def kind_of(m):
        return m if use_bool else np.where(m, -np.inf, 0.0)

    if kind == "encoder":
        return dict(mask=kind_of(src_mask), src_key_padding_mask=kind_of(pad_src))
    out = dict(tgt_mask=kind_of(causal), tgt_key_padding_mask=kind_of(pad_tgt), memory_mask=kind_of(mem_mask),
               memory_key_padding_mask=kind_of(pad_src))
    if kind == "full":
        out.update(src_mask=kind_of(src_mask), src_key_padding_mask=kind_of(pad_src))
    return out


def _inputs(kind: str, batch_first: bool, rng) -> list[np.ndarray]:
    def seq(n):
        return rng.standard_normal((N, n, D) if batch_first else (n, N, D))

    return {"encoder": [seq(S)], "decoder": [seq(TGT), seq(S)], "full": [seq(S), seq(TGT)]}[kind]


def _pair(kind, norm_first, batch_first, device, dtype):
    torch.manual_seed(0)
    tmod = _build(torch.nn, kind, norm_first, batch_first).double().eval()
    mod = _build(nn, kind, norm_first, batch_first)
    result = mod.load_state_dict({k: v.numpy() for k, v in tmod.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    return mod.to(device, getattr(clgrad, dtype)).eval(), tmod


def _compare(mod, tmod, inputs, masks, device, dtype, tol):
    """Output, input gradients and parameter gradients of ``sum(out * g)`` against torch's (float64)."""
    xs = [clgrad.tensor(a, dtype=getattr(clgrad, dtype), device=device, requires_grad=True) for a in inputs]
    txs = [torch.tensor(a, requires_grad=True) for a in inputs]
    kw = {k: clgrad.tensor(v, device=device, dtype=getattr(clgrad, dtype) if v.dtype.kind == "f" else None)
          for k, v in masks.items()}
    out, tout = mod(*xs, **kw), tmod(*txs, **{k: torch.tensor(v) for k, v in masks.items()})
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **tol)
    g = np.random.default_rng(1).standard_normal(tuple(tout.shape))
    (out * clgrad.tensor(g, dtype=out.dtype, device=device)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), **tol)
    tparams = dict(tmod.named_parameters())
    assert [n for n, _ in mod.named_parameters()] == list(tparams)
    for name, p in mod.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), tparams[name].grad.numpy(), **tol, err_msg=name)


def _precision(device):
    if fp64_ok(device):
        return "float64", dict(rtol=1e-9, atol=1e-10)
    return "float32", dict(rtol=2e-4, atol=2e-4)


def _check_case(device, kind, batch_first, norm_first):
    rng = np.random.default_rng(0)
    dtype, tol = _precision(device)
    mod, tmod = _pair(kind, norm_first, batch_first, device, dtype)
    _compare(mod, tmod, _inputs(kind, batch_first, rng), _masks(kind, norm_first != batch_first, rng), device,
             dtype, tol)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("kind", ["encoder", "decoder", "full"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_torch(kind, batch_first, norm_first):
    """Every combination on cpu (the composition is the same on every device)."""
    _check_case("cpu", kind, batch_first, norm_first)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("kind,batch_first,norm_first",
                         [("encoder", False, True), ("decoder", True, False), ("full", True, True)])
def test_matches_torch_on_device(device, kind, batch_first, norm_first):
    """A few combinations on every device: its kernels (attention products, softmax, layer norm) in context."""
    _check_case(device, kind, batch_first, norm_first)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_state_dict_and_repr_match_torch():
    torch.manual_seed(0)
    tmod = torch.nn.Transformer(D, H, 1, 1, dim_feedforward=16, bias=False)
    mod = nn.Transformer(D, H, 1, 1, dim_feedforward=16, bias=False)
    assert {k: tuple(v.shape) for k, v in mod.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tmod.state_dict().items()}
    assert list(mod.state_dict()) == list(tmod.state_dict())
    assert repr(mod) == repr(tmod)
    # xavier_uniform_ on every matrix: bound sqrt(6 / (fan_in + fan_out))
    w = mod.encoder.layers[0].linear1.weight.numpy()
    assert np.abs(w).max() <= np.sqrt(6 / (D + 16)) and w.std() > 0.5 * np.sqrt(2 / (D + 16))


def test_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=16)
    enc = nn.TransformerEncoder(layer, 3)
    weights = [m.linear1.weight for m in enc.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.linear1.weight for w in weights)
    assert enc.num_layers == 3 and enc.norm is None and enc.enable_nested_tensor and not enc.use_nested_tensor


def test_activation_choices():
    for act, flag in (("relu", 1), ("gelu", 2), (nn.functional.relu, 1), (nn.GELU(), 2), (nn.functional.silu, 0)):
        layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=16, activation=act)
        assert layer.activation_relu_or_gelu == flag
    assert isinstance(dict(nn.TransformerEncoderLayer(D, H, activation=nn.GELU()).named_children())["activation"],
                      nn.GELU)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(D, H, activation="tanh")


def test_callable_activation_and_unbatched_input_match_torch():
    dtype, tol = "float64", dict(rtol=1e-9, atol=1e-10)
    torch.manual_seed(0)
    tmod = torch.nn.TransformerEncoderLayer(D, H, 16, activation=torch.nn.functional.silu).double().eval()
    mod = nn.TransformerEncoderLayer(D, H, 16, activation=nn.functional.silu)
    mod.load_state_dict({k: v.numpy() for k, v in tmod.state_dict().items()})
    mod.double().eval()
    src = np.random.default_rng(0).standard_normal((S, D))
    pad = np.array([False] * (S - 1) + [True])
    _compare(mod, tmod, [src], {"src_key_padding_mask": pad}, "cpu", dtype, tol)


def test_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    t = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == clgrad.float32
    np.testing.assert_array_equal(m.numpy(), t.numpy())
    m64 = nn.Transformer.generate_square_subsequent_mask(3, dtype=clgrad.float64)
    assert m64.dtype == clgrad.float64 and np.isneginf(m64.numpy()[0, 1]) and m64.numpy()[1, 0] == 0


def test_is_causal():
    causal = nn.Transformer.generate_square_subsequent_mask(S)
    assert T._detect_is_causal_mask(causal) and T._detect_is_causal_mask(causal, size=S)
    assert not T._detect_is_causal_mask(causal, size=S + 1)
    assert not T._detect_is_causal_mask(causal * 0)
    assert T._detect_is_causal_mask(None, True) and not T._detect_is_causal_mask(causal, False)
    torch.manual_seed(0)
    tlayer = torch.nn.TransformerEncoderLayer(D, H, 16, dropout=0.0).double()
    layer = nn.TransformerEncoderLayer(D, H, 16, dropout=0.0).double()
    layer.load_state_dict({k: v.numpy() for k, v in tlayer.state_dict().items()})
    src = np.random.default_rng(0).standard_normal((S, N, D))
    enc, tenc = nn.TransformerEncoder(layer, 1), torch.nn.TransformerEncoder(tlayer, 1, enable_nested_tensor=False)
    x, tx = clgrad.tensor(src), torch.tensor(src)
    # the hint with a non-causal mask: PyTorch's attention trusts the hint
    ones = np.zeros((S, S))
    ones[0, 1] = -np.inf
    got = enc(x, mask=clgrad.tensor(ones), is_causal=True)
    want = tenc(tx, mask=torch.tensor(ones), is_causal=True)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)
    plain = enc(x, mask=causal.double())
    np.testing.assert_allclose(plain.detach().numpy(), enc(x, mask=causal.double(), is_causal=True).detach().numpy())
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        enc(x, is_causal=True)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        tenc(tx, is_causal=True)


def test_errors_and_mask_warnings():
    model = nn.Transformer(D, H, 1, 1, dim_feedforward=16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(clgrad.zeros(S, 2, D), clgrad.zeros(TGT, 3, D))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(clgrad.zeros(S, 2, D), clgrad.zeros(TGT, 2, D + 1))
    layer = nn.TransformerEncoderLayer(D, H, 16)
    x = clgrad.zeros(S, 2, D)
    with pytest.raises(AssertionError, match="only bool and floating types of src_mask are supported"):
        layer(x, src_mask=clgrad.zeros(S, S, dtype=clgrad.int64))
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and src_mask is deprecated"):
        layer(x, src_mask=clgrad.zeros(S, S), src_key_padding_mask=clgrad.zeros(2, S, dtype=clgrad.bool))


def test_dropout_only_in_training():
    torch_free = nn.TransformerEncoderLayer(D, H, 16, dropout=0.5)
    x = clgrad.randn(S, 2, D)
    a, b = torch_free(x), torch_free(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    torch_free.eval()
    np.testing.assert_array_equal(torch_free(x).detach().numpy(), torch_free(x).detach().numpy())
