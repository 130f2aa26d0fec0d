"""The Dirichlet distribution over the probability simplex."""
from __future__ import annotations

from ..special_random import _standard_gamma
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import finfo

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """Dirichlet(concentration) over the last dim: ``Dirichlet(clgrad.ones(3)).sample()`` sums to 1.

    ``rsample`` normalizes standard gamma draws and differentiates through them (each gamma by implicit
    reparameterization). PyTorch differentiates the normalized sample directly (``_dirichlet_grad``); the two give
    the same expected gradient but not the same per-sample gradient."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = _standard_gamma(self.concentration.expand(shape))
        return (g / g.sum(-1, keepdim=True)).clamp(min=float(finfo(g.dtype).tiny))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (c - 1.0).xlogy(value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, keepdim=True)
        mask = (self.concentration < 1).all(dim=-1)
        one_hot = (self.concentration.argmax(-1, keepdim=True) == _arange_like(self.concentration))
        return mode.where(~mask.unsqueeze(-1), one_hot.to(dtype=mode.dtype))

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        c = self.concentration
        return (c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((c - 1.0) * c.digamma()).sum(-1))


def _arange_like(t):
    return t.new_tensor(list(range(t.shape[-1])))
