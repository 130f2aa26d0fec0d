"""Samplers beyond the Philox primitives of ``random.py``: Gamma (the ``random_gamma`` primitive: Marsaglia-Tsang in
one kernel, each element looping over its rejection rounds until accepted) and Dirichlet built on it.

``clgrad._standard_gamma(alpha)`` is differentiable in ``alpha`` by implicit reparameterization, as PyTorch's
(its backward is ``grad * _standard_gamma_grad(alpha, sample)``); Gamma, Beta and Dirichlet ``rsample`` build on it.
A call of n elements advances the generator by n counters, like every sampler (``random.py``): each element's
rejection rounds use the fourth Philox counter word, so they never touch another element's counters.
"""
from __future__ import annotations

from . import backends
from . import dtypes as D
from .autograd.function import Function
from .autograd.graph import needs_graph
from .ops import pointwise as P
from .random import _generator, _not_implemented
from .tensor import Tensor, is_tensor

__all__: list = []  # private names, exported as clgrad._standard_gamma, clgrad._sample_dirichlet


def _gamma_raw(alpha, generator):
    if not is_tensor(alpha):
        raise TypeError(f"_standard_gamma(): argument 'self' (position 1) must be Tensor, not {type(alpha).__name__}")
    if alpha.dtype.kind != "f":
        raise _not_implemented("standard_gamma_cpu", alpha.dtype)
    dt = alpha.dtype if alpha.dtype not in D.HALF_FLOATS else D.float32
    src = alpha.detach().to(dtype=dt).contiguous()
    out = Tensor._empty(alpha.shape, dt, alpha.device)
    seed, offset = _generator(generator)._take(out.numel())
    backends.get(out.device).random_gamma(out, src, seed, offset)
    return out if dt is alpha.dtype else out.to(dtype=alpha.dtype)


class StandardGamma(Function):
    """``_standard_gamma`` under autograd: d sample / d alpha = -(dCDF/dalpha) / pdf at the sample."""

    node_name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx, alpha, generator):
        out = _gamma_raw(alpha, generator)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        alpha, out = ctx.saved_tensors
        return grad * P.apply("standard_gamma_grad", alpha, out), None


def _standard_gamma(self, generator=None):
    """Samples of Gamma(concentration=self, rate=1), one per element: ``clgrad._standard_gamma(alpha)``."""
    if needs_graph(self):
        return StandardGamma.apply(self, generator)
    return _gamma_raw(self, generator)


def _sample_dirichlet(self, generator=None):
    """Dirichlet samples over the last dim of the concentration ``self``: Gamma draws normalized to sum to 1
    (not differentiable, as PyTorch's; ``Dirichlet.rsample`` differentiates through ``_standard_gamma``)."""
    g = _gamma_raw(self, generator)
    return g / g.sum(-1, keepdim=True)
