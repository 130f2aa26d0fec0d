"""MultiheadAttention with PyTorch's parameters (in_proj_weight or q/k/v_proj_weight, in_proj_bias, out_proj),
initialisation and forward (batch_first, unbatched inputs, key_padding_mask, attn_mask, need_weights,
average_attn_weights, add_bias_kv, add_zero_attn)."""
from __future__ import annotations

import math

from ...ops import creation
from ...ops.joins import cat
from ...ops.linalg import bmm
from ...ops.rearrange import triu
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


def _float_mask(mask, name: str, dtype):
    """A bool mask becomes an additive one (-inf where True); a float mask is added as it is."""
    if mask is None:
        return None
    if mask.dtype.kind == "b":
        return creation.zeros_like(mask, dtype=dtype).masked_fill(mask, float("-inf"))
    if mask.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


class MultiheadAttention(Module):
    """``MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O`` with ``head_i = softmax(Q W_i^Q (K W_i^K)^T /
    sqrt(d)) V W_i^V``; returns ``(attn_output, attn_weights or None)``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.empty((3 * embed_dim, embed_dim), **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(creation.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(creation.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(creation.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:  # one learned extra key and value, appended to every sequence of the batch
            self.bias_k = Parameter(creation.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(creation.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query, key, value):
        """q, k, v = the input projections, each (seq, batch, embed)."""
        if self._qkv_same_embed_dim:
            weights = self.in_proj_weight.chunk(3, 0)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        biases = self.in_proj_bias.chunk(3, 0) if self.in_proj_bias is not None else (None,) * 3
        return [F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases)]

    def _extended_heads(self, q, k, v, n: int):
        """(batch*heads, seq, head_dim) q, k, v, with the bias_k/bias_v key and the zero key appended."""
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(1, n, self.embed_dim)])
            v = cat([v, self.bias_v.expand(1, n, self.embed_dim)])
        q, k, v = (self._heads(x, n) for x in (q, k, v))
        if self.add_zero_attn:
            zeros = creation.zeros((n * self.num_heads, 1, self.head_dim), dtype=k.dtype, device=k.device)
            k, v = cat([k, zeros], 1), cat([v, zeros], 1)
        return q, k, v

    def _merged_mask(self, attn_mask, key_padding_mask, n: int, tgt: int, src: int, extra: int, dtype):
        """One additive mask broadcastable to (batch*heads, tgt, src + extra), or None; the ``extra``
        appended keys (bias_k, zero attention) are never masked."""
        attn_mask = _float_mask(attn_mask, "attn_mask", dtype)
        key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask", dtype)
        if attn_mask is not None:
            if attn_mask.dim() == 2:
                if tuple(attn_mask.shape) != (tgt, src):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                       f"{(tgt, src)}.")
                attn_mask = attn_mask.unsqueeze(0)
            elif attn_mask.dim() == 3:
                if tuple(attn_mask.shape) != (n * self.num_heads, tgt, src):
                    raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                       f"{(n * self.num_heads, tgt, src)}.")
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (n, src):
            raise AssertionError(f"expecting key_padding_mask shape of {(n, src)}, but got {key_padding_mask.shape}")
        if extra:
            attn_mask = F.pad(attn_mask, (0, extra)) if attn_mask is not None else None
            key_padding_mask = F.pad(key_padding_mask, (0, extra)) if key_padding_mask is not None else None
            src += extra
        if key_padding_mask is not None:
            kpm = key_padding_mask.reshape(n, 1, 1, src).expand(n, self.num_heads, 1, src)
            kpm = kpm.reshape(n * self.num_heads, 1, src)
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        return attn_mask

    def _heads(self, x, n: int):
        """(seq, batch, embed) -> (batch*heads, seq, head_dim)."""
        return x.reshape(x.shape[0], n * self.num_heads, self.head_dim).transpose(0, 1)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                               "method `generate_square_subsequent_mask` to create this mask.")
        batched = query.dim() == 3
        if batched and self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        if not batched:
            query, key, value = (x.unsqueeze(1) for x in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        tgt, n, src = query.shape[0], query.shape[1], key.shape[0]
        if is_causal and key_padding_mask is None and not need_weights:
            # PyTorch then trusts the hint over the mask given (scaled_dot_product_attention's is_causal)
            attn_mask = triu(creation.full((tgt, src), float("-inf"), dtype=query.dtype, device=query.device), 1)
        q, k, v = self._extended_heads(*self._project(query, key, value), n)
        mask = self._merged_mask(attn_mask, key_padding_mask, n, tgt, src, k.shape[1] - src, q.dtype)
        scores = bmm(q * (1.0 / math.sqrt(self.head_dim)), k.transpose(1, 2))
        if mask is not None:
            scores = scores + mask
        attn = F.softmax(scores, dim=-1)
        if self.dropout > 0.0 and self.training:
            attn = F.dropout(attn, self.dropout, True)
        out = bmm(attn, v).transpose(0, 1).reshape(tgt * n, self.embed_dim)
        out = self.out_proj(out).reshape(tgt, n, self.embed_dim)
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        weights = None
        if need_weights:
            weights = attn.reshape(n, self.num_heads, tgt, k.shape[1])
            if average_attn_weights:
                weights = weights.mean(dim=1)
        if not batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0) if weights is not None else None
        return out, weights
