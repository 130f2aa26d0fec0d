"""The rest of ``nn.functional``'s activations: shrinks and threshold (registry records), softsign, tanhshrink,
glu, prelu, rrelu and the alpha dropouts (compositions of clgrad ops, so autograd gives their gradients).

>>> F.softshrink(clgrad.tensor([-1.0, 0.2, 2.0]), 0.5)  # tensor([-0.5000, 0.0000, 1.5000])
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..random import bernoulli_, uniform_
from ..tensor import Tensor
from . import math as M
from . import nnops as N
from . import pointwise as P
from .guard import tensor_first
from .views import wrap_dim

# names PyTorch has at top level (clgrad.X)
__all__ = ["prelu", "rrelu", "rrelu_", "hardshrink", "threshold", "threshold_", "alpha_dropout", "alpha_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_"]
# names that belong in clgrad.nn.functional (F.X)
FUNCTIONAL = ["glu", "prelu", "rrelu", "rrelu_", "softsign", "softshrink", "hardshrink", "tanhshrink", "threshold",
              "threshold_", "alpha_dropout", "feature_alpha_dropout"]
_ALPHA = 1.7580993408473766  # SELU's alpha * scale: the value alpha dropout drops to is -_ALPHA


def _activate(op: str, input, *params, out=None):
    """Registry op ``op`` computed in ``input``'s dtype (its float type for float-valued ops): the scalar
    parameters take no part in promotion, as in PyTorch."""
    P.check_operands(op, (input,))
    compute = P.compute_dtype(op, [input], input.device)
    return P.apply(op, input, *params, out=out, compute=compute)


def softsign(input):
    """``x / (1 + |x|)``: ``F.softsign(x)``."""
    return _activate("softsign", input)


def tanhshrink(input):
    """``x - tanh(x)``: ``F.tanhshrink(x)``."""
    return _activate("tanhshrink", input)


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0: ``F.hardshrink(x, 0.5)``."""
    return _activate("hardshrink", input, lambd)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0: ``F.softshrink(x, 0.5)``."""
    P.check_operands("softshrink", (input,))
    dt = P.compute_dtype("softshrink", [input], input.device)
    top = float(np.finfo(dt.np).max)
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {dt.scalar_name}, but found {lambd}")
    return P.apply("softshrink", input, lambd, compute=dt)


def _threshold(input, th, value, inplace: bool):
    if input.dtype is D.bool:
        raise P.unsupported("threshold", input.dtype, input.device)
    return _activate("threshold", input, th, value, out=input if inplace else None)


def threshold(input, threshold, value, inplace=False):
    """``value`` where ``x <= threshold``, else ``x``: ``F.threshold(x, 0.1, 20.0)``."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    """In-place ``threshold``: ``F.threshold_(x, 0.0, 0.0)``."""
    return _threshold(input, threshold, value, True)


def glu(input, dim=-1):
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second: ``F.glu(x, dim=1)``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.dim())
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    return input.narrow(d, 0, n // 2) * input.narrow(d, n // 2, n // 2).sigmoid()


def prelu(input, weight):
    """``x`` for x > 0, else ``weight * x``, one learnt slope per channel (dim 1) or one for all:
    ``F.prelu(x, w)``."""
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype.scalar_name} and "
                           f"{weight.dtype.scalar_name}")
    if input.dtype.kind != "f":
        raise P.unsupported("prelu", input.dtype, input.device)
    n = weight.numel()
    if n == 1:
        slope = weight.reshape(())
    else:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                               f"and channel size = {channels}.")
        slope = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    # at 0 the gradient takes the negative branch (weight * grad), as PyTorch's prelu backward does
    return M.where(input > 0, input, slope * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, *, generator=None):
    """Randomized leaky ReLU: in training each ``x <= 0`` gets a slope drawn uniformly from [lower, upper]
    (clgrad's Philox generator; the gradient uses the same slopes), in eval the mean slope."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return M.leaky_relu(input, (lower + upper) / 2, inplace)
    if input.dtype.kind != "f":
        raise P.unsupported("rrelu_with_noise", input.dtype, input.device)
    noise = uniform_(Tensor._empty(tuple(input.shape), input.dtype, input.device), lower, upper, generator=generator)
    noise = noise.masked_fill_(input > 0, 1.0)
    return input.mul_(noise) if inplace else input * noise


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, *, generator=None):
    """In-place ``rrelu``: ``F.rrelu_(x, training=True)``."""
    return rrelu(input, lower, upper, training, True, generator=generator)


def _alpha_dropout(input, p, train: bool, inplace: bool, feature: bool):
    """PyTorch's _dropout_impl with alpha: kept values are ``a * x + a * alpha * p``, dropped ones
    ``-a * alpha * (1 - p)``, with ``a`` keeping the mean 0 and variance 1 of a SELU network."""
    N._check_p(p)
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = N._channels(input, True) if feature else tuple(input.shape)
    keep = bernoulli_(Tensor._empty(shape, input.dtype, input.device), 1 - p)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    shift = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    keep = keep * a
    out = input.mul_(keep) if inplace else input * keep
    return out.add_(shift)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps a SELU network's self-normalization (mean 0, variance 1): ``F.alpha_dropout(x, 0.1,
    training=True)``."""
    return _alpha_dropout(input, p, training, inplace, False)


def alpha_dropout_(input, p, train):
    return _alpha_dropout(input, p, train, True, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` of whole channels of an (N, C, ...) input: ``F.feature_alpha_dropout(x, 0.2, True)``."""
    return _alpha_dropout(input, p, training, inplace, True)


def feature_alpha_dropout_(input, p, train):
    return _alpha_dropout(input, p, train, True, True)


def install(T) -> None:
    """Attach this module's Tensor methods (``x.prelu(w)``, ``x.hardshrink(0.5)``)."""
    T.prelu = prelu
    T.hardshrink = hardshrink


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + FUNCTIONAL)
