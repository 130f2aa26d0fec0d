"""Normalization: ``batch_norm``, ``layer_norm``, ``group_norm`` (one Function family, ``NativeBatchNorm``, with
PyTorch's node names) and ``normalize``.

The moments are one fused kernel (Welford; float32 for float16); the affine step and the backward formulas
compose clgrad ops, so they are differentiable themselves.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import dtypes as D
from ..amp.policy import autocast_float32_gpu
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..autograd.graph import needs_graph
from . import pointwise as P
from .guard import tensor_first
from .nnops import _backend, _empty

# names PyTorch has at top level (clgrad.X); each also takes PyTorch's top-level signature (see the functions)
__all__ = ["batch_norm", "layer_norm", "group_norm"]
# names that belong in clgrad.nn.functional (F.X)
FUNCTIONAL = ["batch_norm", "layer_norm", "group_norm", "normalize"]


# ---- normalization ------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormSpec:
    """How a normalization sees its input x: statistics over ``dims`` of x reshaped to ``shape`` (None: as
    is); weight and bias reshaped to ``affine``, their gradients summed over ``affine_dims``.
    ``batch_stats`` is False when the statistics are constants (batch norm's running stats in eval)."""

    dims: tuple
    shape: tuple | None
    affine: tuple
    affine_dims: tuple
    eps: float
    batch_stats: bool = True

    def view(self, t):
        return t if self.shape is None else t.reshape(self.shape)


def _moments(x, spec: NormSpec):
    """Mean and biased variance over the spec's dims, one fused read of x (float32 for float16)."""
    xs = spec.view(x)
    kept = tuple(1 if d in spec.dims else n for d, n in enumerate(xs.shape))
    acc = D.float32 if x.dtype in D.HALF_FLOATS else x.dtype
    mean, var = _empty(kept, acc, x.device), _empty(kept, acc, x.device)
    _backend(x).moments(mean, var, xs, spec.dims)
    return mean, var


def _stats(x, spec: NormSpec):
    """Mean and 1/sqrt(var + eps) over the spec's dims."""
    mean, var = _moments(x, spec)
    return mean, (var + spec.eps).rsqrt()


def _sum_over(t, dims):
    return t.sum(dims) if dims else t


def _affine(x, mean, rstd, weight, bias, spec: NormSpec):
    y = P.apply("sub", spec.view(x), mean)
    if spec.shape is None and weight is not None and bias is not None:
        # statistics and affine in one layout (batch norm): bias + (x - mean) * (rstd w), two passes instead of four
        scale = P.apply("mul", rstd, weight.reshape(spec.affine))
        return P.apply("addcmul", bias.reshape(spec.affine), y, scale, 1).to(x.dtype)
    P.apply("mul", y, rstd, out=y)
    y = y.reshape(x.shape)
    if weight is not None:
        P.apply("mul", y, weight.reshape(spec.affine), out=y)
    if bias is not None:
        P.apply("add", y, bias.reshape(spec.affine), out=y)
    return y.to(x.dtype)


def _batch_norm_grads(grad, x, weight, mean, rstd, spec: NormSpec, need, acc):
    """Batch norm's backward (statistics and affine over the same dims) in two reductions: with d = x - mean,
    S1 = sum g and S2 = sum g d over the n elements of each channel, gb = S1, gw = S2 rstd and
    gx = w rstd (g - S1 / n - d rstd^2 S2 / n) = g A + d B + C for per-channel A = w rstd, B = -A rstd^2 S2 / n and
    C = -A S1 / n: 7 passes over the activations where the composed formula made 13."""
    g = grad.to(acc)
    d = P.apply("sub", x, mean)
    s1 = g.sum(spec.dims, keepdim=True)
    s2 = (g * d).sum(spec.dims, keepdim=True)
    gx = None
    if need[0]:
        n = math.prod(x.shape[k] for k in spec.dims)
        a = rstd if weight is None else rstd * weight.reshape(spec.affine).to(acc)
        gx = g * a
        gx.addcmul_(d, a * rstd * rstd * s2 * (-1.0 / n))
        gx.add_(a * s1 * (-1.0 / n))
        gx = gx.to(x.dtype)
    gw = s2 * rstd if weight is not None and need[1] else None
    return gx, gw, s1 if need[2] else None


def _norm_grads(grad, x, weight, mean, rstd, spec: NormSpec, need):
    acc = D.float32 if x.dtype in D.HALF_FLOATS else x.dtype
    if spec.batch_stats and spec.shape is None and spec.affine_dims == spec.dims and not needs_graph(grad, x, weight):
        return _batch_norm_grads(grad, x, weight, mean, rstd, spec, need, acc)
    xs = spec.view(x)
    if spec.batch_stats and needs_graph(grad, x, weight):
        # this gradient is being differentiated: rebuild the statistics in clgrad ops so they depend on x
        xa = xs.to(acc)
        mean = xa.mean(spec.dims, keepdim=True)
        rstd = ((xa - mean).square().mean(spec.dims, keepdim=True) + spec.eps).rsqrt()
    g = grad.to(acc)
    xhat = (xs - mean) * rstd
    gxhat = spec.view(g if weight is None else g * weight.reshape(spec.affine))
    gx = None
    if need[0]:
        if spec.batch_stats:
            dims = spec.dims
            gx = (gxhat - gxhat.mean(dims, keepdim=True) - xhat * (gxhat * xhat).mean(dims, keepdim=True)) * rstd
        else:
            gx = gxhat * rstd
        gx = gx.reshape(x.shape).to(x.dtype)
    gw = _sum_over(g * xhat.reshape(x.shape), spec.affine_dims) if weight is not None and need[1] else None
    gb = _sum_over(g, spec.affine_dims) if need[2] else None
    return gx, gw, gb


class NativeBatchNorm(Function):
    node_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, spec, mean, rstd):
        ctx.spec = spec
        ctx.params = [(t.shape, t.dtype) if t is not None else None for t in (weight, bias)]
        ctx.save_for_backward(x, weight, mean, rstd)
        return _affine(x, mean, rstd, weight, bias, spec)

    @staticmethod
    def backward(ctx, grad):
        x, weight, mean, rstd = ctx.saved_tensors
        gx, gw, gb = _norm_grads(grad, x, weight, mean, rstd, ctx.spec, ctx.needs_input_grad)
        gw, gb = (g if g is None else g.reshape(p[0]).to(p[1]) for g, p in zip((gw, gb), ctx.params))
        return gx, gw, gb, None, None, None


class NativeLayerNorm(NativeBatchNorm):
    node_name = "NativeLayerNormBackward0"


class NativeGroupNorm(NativeBatchNorm):
    node_name = "NativeGroupNormBackward0"


def _normalized(fn, x, weight, bias, spec, mean, rstd):
    if needs_graph(x, weight, bias):
        return fn.apply(x, weight, bias, spec, mean, rstd)
    return _affine(x, mean, rstd, weight, bias, spec)


def _verify_batch_size(size) -> None:
    if size[0] * math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


_BN_F = ("running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
_BN_TORCH = ("weight", "bias", "running_mean", "running_var", "training", "momentum", "eps", "cudnn_enabled")


def batch_norm(input, *args, **kwargs):
    """``F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
    eps=1e-5)``: per-channel (dim 1) normalization with batch statistics in training (updating the running
    ones, with the unbiased variance) and running statistics in eval. Called with ``cudnn_enabled`` (nine
    arguments) it is ``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
    cudnn_enabled)``, whose tensors come in another order."""
    names = _BN_TORCH if len(args) == 8 or "cudnn_enabled" in kwargs else _BN_F
    if len(args) > len(names):
        raise TypeError(f"batch_norm() takes at most {len(names) + 1} arguments ({len(args) + 1} given)")
    a = dict(running_mean=None, running_var=None, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5)
    a.update(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in names[: len(args)]:
            raise TypeError(f"batch_norm() got an unexpected keyword argument '{key}'")
        a[key] = value
    a.pop("cudnn_enabled", None)
    return _batch_norm(input, **a)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    C = input.shape[1] if input.dim() > 1 else input.shape[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
        if t is None and not training and name.startswith("running"):
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    if input.numel() == 0:
        return _empty_batch_norm(input, weight, bias)
    nd = input.dim()
    affine = (1, C) + (1,) * (nd - 2)
    dims = (0,) + tuple(range(2, nd))
    spec = NormSpec(dims, None, affine, dims, eps, bool(training))
    if training:
        mean, var = _moments(input, spec)
        _update_running(running_mean, running_var, mean, var, input.numel() // C, momentum)
        rstd = (var + eps).rsqrt()
    else:
        mean = running_mean.detach().reshape(affine)
        rstd = (running_var.detach() + eps).rsqrt().reshape(affine)
    return _normalized(NativeBatchNorm, input, weight, bias, spec, mean, rstd)


def _empty_batch_norm(input, weight, bias):
    """torch's answer for an empty batch: a copy of it (still connected to weight and bias, whose gradients are
    then 0), the running statistics untouched."""
    out = input.clone()
    if weight is not None:  # (an empty weight raises torch's IndexError)
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _update_running(running_mean, running_var, mean, var, n: int, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, with the unbiased batch variance."""
    with no_grad():
        if running_mean is not None:
            P.apply("mul", running_mean, 1 - momentum, out=running_mean)
            P.apply("add", running_mean, (mean.reshape(-1) * momentum).to(running_mean.dtype), out=running_mean)
        if running_var is not None:
            unbiased = var.reshape(-1) * (momentum * n / (n - 1))
            P.apply("mul", running_var, 1 - momentum, out=running_var)
            P.apply("add", running_var, unbiased.to(running_var.dtype), out=running_var)


@autocast_float32_gpu
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Normalize over the trailing ``normalized_shape`` dims, then ``* weight + bias`` (each of that shape)."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k, nd = len(ns), input.dim()
    if not ns:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {list(ns)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    if nd < k or tuple(input.shape[nd - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    spec = NormSpec(tuple(range(nd - k, nd)), None, ns, tuple(range(nd - k)), eps)
    return _normalized(NativeLayerNorm, input, weight, bias, spec, *_stats(input, spec))


@autocast_float32_gpu
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Normalize each of ``num_groups`` groups of channels per sample, then per-channel ``* weight + bias``."""
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {nd}")
    N, C = input.shape[:2]
    _verify_batch_size([N * C // num_groups, num_groups] + list(input.shape[2:]))
    if C % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    per_group = input.numel() // max(N * num_groups, 1)
    spec = NormSpec((2,), (N, num_groups, per_group), (1, C) + (1,) * (nd - 2), (0,) + tuple(range(2, nd)), eps)
    return _normalized(NativeGroupNorm, input, weight, bias, spec, *_stats(input, spec))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``, for every p (0, negative, inf included), as torch
    computes it: ``x / x.norm(p, dim, keepdim=True).clamp_min(eps)``. A zero vector's norm gets gradient 0.

    >>> F.normalize(clgrad.tensor([[3.0, 4.0]]))  # tensor([[0.6000, 0.8000]])
    """
    result = input / input.norm(p, dim, keepdim=True).clamp_min(eps)
    return result if out is None else out.copy_(result)


def install(T) -> None:
    """PyTorch has none of these as Tensor methods."""


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + FUNCTIONAL)
