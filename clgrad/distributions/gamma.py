"""The Gamma distribution (shape ``concentration``, ``rate``)."""
from __future__ import annotations

from numbers import Number

from ..special_random import _standard_gamma
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, finfo

__all__ = ["Gamma"]


class Gamma(Distribution):
    """Gamma(concentration, rate), density rate^a x^(a-1) e^(-rate x) / Gamma(a). ``rsample`` is differentiable in
    both parameters (implicit reparameterization of the standard gamma draw)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        batch_shape = Size() if scalar else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ('concentration', 'rate'))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=float(finfo(value.dtype).tiny))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value if not isinstance(value, Number) else self.rate.new_tensor(value)
        return (self.concentration.xlogy(self.rate) + (self.concentration - 1).xlogy(value) - self.rate * value
                - self.concentration.lgamma())

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()
