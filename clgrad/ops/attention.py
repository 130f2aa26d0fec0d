"""Attention: ``scaled_dot_product_attention`` (PyTorch's math backend), ``multi_head_attention_forward`` (the
functional form of ``nn.MultiheadAttention``) and ``_safe_softmax``.

Everything is composed from clgrad ops (bmm, softmax, masked_fill, dropout), so autograd comes for free.
"""
from __future__ import annotations

import math

from .. import dtypes as D
from . import creation
from .joins import cat
from .linalg import bmm, linear, matmul
from .nnops import dropout, softmax
from .padding import pad

__all__ = ["_safe_softmax"]
FUNCTIONAL = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _safe_softmax(input, dim, dtype=None):
    """softmax over ``dim`` whose rows that are all -inf give 0 instead of NaN (PyTorch's ``aten._safe_softmax``)."""
    dead = (input == float("-inf")).all(dim, keepdim=True)
    out = softmax(input.masked_fill(dead, 0.0), dim, dtype=dtype)  # no NaN in the forward, nor the gradient
    return out.masked_fill(dead, 0.0)


def _sdpa_bias(attn_mask, is_causal: bool, L: int, S: int, query):
    """The additive attention bias (or None): -inf where a bool mask is False or above the causal diagonal."""
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        keep = creation.ones((L, S), dtype=D.bool, device=query.device).tril()
        return creation.zeros((L, S), dtype=query.dtype, device=query.device).masked_fill(keep.logical_not(),
                                                                                          float("-inf"))
    if attn_mask is None:
        return None
    if attn_mask.dtype.kind == "b":
        zeros = creation.zeros(tuple(attn_mask.shape), dtype=query.dtype, device=query.device)
        return zeros.masked_fill(attn_mask.logical_not(), float("-inf"))
    if attn_mask.dtype != query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    return attn_mask


def _gqa(query, key, value, enable_gqa: bool):
    """key and value with their heads repeated to the query's (grouped-query attention)."""
    if query.dim() < 3 or key.shape[-3] == query.shape[-3]:
        return key, value
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if not enable_gqa or hq % hk or hq % hv:
        raise RuntimeError(f"The size of tensor a ({hq}) must match the size of tensor b ({hk}) at non-singleton "
                           f"dimension {query.dim() - 3}")
    return key.repeat_interleave(hq // hk, -3), value.repeat_interleave(hq // hv, -3)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, _safe=True):
    """``softmax(Q K^T * scale + bias) V`` over the last two dims, as PyTorch's math backend computes it
    (q and k each scaled by sqrt(scale); a row whose keys are all masked gives 0, as ``_safe_softmax``).

    >>> out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    """
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must be at least 2-D")
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    scale_factor = 1.0 / math.sqrt(E) if scale is None else float(scale)
    bias = _sdpa_bias(attn_mask, is_causal, L, S, query)
    key, value = _gqa(query, key, value, enable_gqa)
    root = math.sqrt(scale_factor)
    scores = matmul(query * root, (key * root).transpose(-2, -1))
    if bias is not None:
        scores = scores + bias
    attn = _safe_softmax(scores, -1) if _safe else softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return matmul(attn, value)


def _canonical_mask(mask, name: str, dtype):
    """A bool mask becomes an additive one (-inf where True); a float mask is used as it is."""
    if mask is None:
        return None
    if mask.dtype.kind == "b":
        return creation.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if mask.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, separate):
    """q, k, v = the three input projections (packed in in_proj_weight, or separate weights)."""
    weights = in_proj_weight.chunk(3, 0) if not separate else separate
    biases = in_proj_bias.chunk(3, 0) if in_proj_bias is not None else (None,) * 3
    return [linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases)]


def _check_attn_mask(attn_mask, tgt: int, src: int, heads: int):
    if attn_mask is None:
        return None
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt, src):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {(tgt, src)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (heads, tgt, src):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                               f"{(heads, tgt, src)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _heads(x, static, bsz: int, num_heads: int, head_dim: int, name: str):
    """(seq, batch, embed) -> (batch*heads, seq, head_dim), or the given static (already split) tensor."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads or static.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads} and static_{name}.size(2) of "
                             f"{head_dim}, but got {static.shape[0]} and {static.shape[2]}")
    return static


def _attend(q, k, v, attn_mask, dropout_p, need_weights, average, is_causal, shape):
    """The attention of split heads; returns (output (tgt*bsz, embed), weights or None)."""
    tgt, bsz, embed, heads = shape
    src = k.shape[1]
    if need_weights:
        scores = bmm(q * math.sqrt(1.0 / q.shape[-1]), k.transpose(-2, -1))
        attn = softmax(scores if attn_mask is None else scores + attn_mask, -1)
        if dropout_p > 0.0:
            attn = dropout(attn, dropout_p, True)
        out = bmm(attn, v).transpose(0, 1).reshape(tgt * bsz, embed)
        weights = attn.reshape(bsz, heads, tgt, src)
        return out, weights.mean(dim=1) if average else weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1:  # one (tgt, src) mask for every batch and head
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, heads, -1, src)
    q, k, v = (t.reshape(bsz, heads, t.shape[1], t.shape[2]) for t in (q, k, v))
    # the plain softmax (a fully masked row gives NaN, as MultiheadAttention always did here): the dead-row mask
    # of _safe_softmax is a bool computed from the inputs, which clgrad.onnx.export cannot trace
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, _safe=False)
    return out.permute(2, 0, 1, 3).reshape(bsz * tgt, embed), None


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The forward of ``nn.MultiheadAttention`` on (L, N, E) (or unbatched (L, E)) inputs; returns
    ``(attn_output, attn_weights or None)``."""
    batched = query.dim() == 3
    if not batched:
        query, key, value = (x.unsqueeze(1) for x in (query, key, value))
        key_padding_mask = key_padding_mask.unsqueeze(0) if key_padding_mask is not None else None
    tgt, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # PyTorch then trusts the hint and passes is_causal to scaled_dot_product_attention
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        is_causal = is_causal and key_padding_mask is None
    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    q, k, v = _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, separate)
    attn_mask = _check_attn_mask(attn_mask, tgt, key.shape[0], bsz * num_heads)
    if bias_k is not None and bias_v is not None:
        k, v = cat([k, bias_k.repeat(1, bsz, 1)]), cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    q = _heads(q, None, bsz, num_heads, head_dim, "q")
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        zeros = creation.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = cat([k, zeros], 1), cat([v, zeros], 1)
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    src = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src)}, but got "
                                 f"{key_padding_mask.shape}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src).expand(bsz, num_heads, 1, src).reshape(bsz * num_heads, 1,
                                                                                               src)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    p = dropout_p if training else 0.0
    out, weights = _attend(q, k, v, attn_mask, p, need_weights, average_attn_weights, is_causal,
                           (tgt, bsz, embed_dim, num_heads))
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
        weights = weights.squeeze(0) if weights is not None else None
    return out, weights
