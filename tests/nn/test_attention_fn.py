"""scaled_dot_product_attention, multi_head_attention_forward and _safe_softmax against torch (forward and
gradients), on every device."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from tests.nn.torch_ref import check, float_name, gradcheck

RNG = np.random.default_rng(17)


def _qkv(hq=2, hk=2, L=3, S=4, E=5):
    return [RNG.standard_normal(s) for s in ((2, hq, L, E), (2, hk, S, E), (2, hk, S, E))]


MASKS = {
    "none": lambda: {},
    "causal": lambda: {"is_causal": True},
    "bool": lambda: {"attn_mask": RNG.random((3, 4)) > 0.4},
    "bool_row_dead": lambda: {"attn_mask": np.array([[False] * 4, [True, False, True, True], [True] * 4])},
    "float": lambda: {"attn_mask": RNG.standard_normal((2, 1, 3, 4))},
    "scale": lambda: {"scale": 0.3},
}


@pytest.mark.parametrize("case", sorted(MASKS))
def test_sdpa_matches_torch(device, case):
    kw = MASKS[case]()
    mask = kw.pop("attn_mask", None)
    arrays = _qkv() + ([mask] if mask is not None else [])

    def run(fn):
        return lambda q, k, v, *m: fn(q, k, v, *m, **kw)

    check(device, run(F.scaled_dot_product_attention),
          run(__import__("torch").nn.functional.scaled_dot_product_attention) if _torch() else None,
          arrays, grad=(0, 1, 2) + ((3,) if mask is not None and mask.dtype.kind == "f" else ()))


def _torch():
    return pytest.importorskip("torch")


def test_sdpa_gqa_and_errors(device):
    torch = _torch()
    check(device, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
          lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
          _qkv(hq=4, hk=2), grad=(0, 1, 2))
    q, k, v = (clgrad.tensor(a, device=device, dtype=float_name(device)) for a in _qkv(hq=4, hk=2))
    with pytest.raises(RuntimeError, match="must match the size"):
        F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=clgrad.ones(3, 4, dtype=clgrad.bool), is_causal=True,
                                       enable_gqa=True)


def test_sdpa_dropout_keeps_shape_and_zeros(device):
    q, k, v = (clgrad.tensor(a, device=device, dtype=float_name(device)) for a in _qkv(L=8, S=8))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert tuple(out.shape) == (2, 2, 8, 5) and float(out.abs().sum()) == 0.0


def test_sdpa_gradcheck(device):
    gradcheck(device, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
              _qkv(L=3, S=3, E=2))


def test_safe_softmax(device):
    torch = _torch()
    x = RNG.standard_normal((3, 4))
    x[1] = -np.inf
    check(device, lambda t: clgrad._safe_softmax(t, -1), lambda t: torch.ops.aten._safe_softmax(t, -1), [x],
          grad=())


def _mha_arrays(E=4, L=3, S=5, N=2, kdim=None):
    kdim = kdim or E
    return dict(q=RNG.standard_normal((L, N, E)), k=RNG.standard_normal((S, N, kdim)),
                v=RNG.standard_normal((S, N, kdim)), w=RNG.standard_normal((3 * E, E)) * 0.5,
                b=RNG.standard_normal(3 * E), ow=RNG.standard_normal((E, E)) * 0.5, ob=RNG.standard_normal(E),
                bk=RNG.standard_normal((1, 1, E)), bv=RNG.standard_normal((1, 1, E)))


MHA_CASES = {
    "weights": dict(need_weights=True),
    "no_weights": dict(need_weights=False),
    "mask_no_weights": dict(need_weights=False, mask=True),
    "per_head_weights": dict(need_weights=True, average_attn_weights=False),
    "kpm": dict(need_weights=False, kpm=True),
    "mask_kpm": dict(need_weights=True, kpm=True, mask=True),
    "bias_kv_zero_attn": dict(need_weights=True, bias_kv=True, zero_attn=True, mask=True, kpm=True),
    "causal": dict(need_weights=False, mask=True, is_causal=True),
}


@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_multi_head_attention_forward(device, case):
    torch = _torch()
    opts = dict(MHA_CASES[case])
    a = _mha_arrays()
    kpm = np.array([[False] * 4 + [True], [False] * 5]) if opts.pop("kpm", False) else None
    mask = np.triu(np.ones((3, 5), bool), 1) if opts.pop("mask", False) else None
    bias_kv, zero_attn = opts.pop("bias_kv", False), opts.pop("zero_attn", False)
    arrays = [a["q"], a["k"], a["v"], a["w"], a["b"], a["ow"], a["ob"], a["bk"], a["bv"], kpm, mask]

    def run(fn, lib):
        def call(q, k, v, w, b, ow, ob, bk, bv, kp, m):
            return fn(q, k, v, 4, 2, w, b, bk if bias_kv else None, bv if bias_kv else None, zero_attn, 0.0, ow,
                      ob, key_padding_mask=kp, attn_mask=m, **opts)
        return call

    check(device, run(F.multi_head_attention_forward, clgrad),
          run(torch.nn.functional.multi_head_attention_forward, torch), arrays, grad=(0, 1, 2, 3, 4, 5, 6, 7, 8))


def test_mha_unbatched_and_separate_weights(device):
    torch = _torch()
    E = 4
    arrays = [RNG.standard_normal((3, E)), RNG.standard_normal((5, 6)), RNG.standard_normal((5, 6)),
              RNG.standard_normal((E, E)), RNG.standard_normal((E, 6)), RNG.standard_normal((E, 6)),
              RNG.standard_normal((E, E)), RNG.standard_normal(E)]

    def run(fn):
        def call(q, k, v, qw, kw, vw, ow, ob):
            return fn(q, k, v, E, 2, None, None, None, None, False, 0.0, ow, ob, use_separate_proj_weight=True,
                      q_proj_weight=qw, k_proj_weight=kw, v_proj_weight=vw)
        return call

    check(device, run(F.multi_head_attention_forward), run(torch.nn.functional.multi_head_attention_forward),
          arrays, grad=tuple(range(8)))


def test_module_agrees_with_torch_module(device):
    torch = _torch()
    dt = float_name(device)
    ref = torch.nn.MultiheadAttention(4, 2, batch_first=True, add_bias_kv=True, dtype=getattr(torch, dt))
    mod = clgrad.nn.MultiheadAttention(4, 2, batch_first=True, add_bias_kv=True, device=device,
                                       dtype=getattr(clgrad, dt))
    mod.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = RNG.standard_normal((2, 3, 4)).astype(dt)
    out, w = mod(*(clgrad.tensor(x, device=device),) * 3)
    rout, rw = ref(*(torch.tensor(x),) * 3)
    tol = dict(rtol=1e-6, atol=1e-6) if dt == "float64" else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.detach().cpu().numpy(), rout.detach().numpy(), **tol)
    np.testing.assert_allclose(w.detach().cpu().numpy(), rw.detach().numpy(), **tol)
