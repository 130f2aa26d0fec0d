"""Probability distributions with PyTorch's ``torch.distributions`` API: ``from clgrad.distributions import
Categorical, Normal, kl_divergence``.

Parameters may live on any device; sampling draws from clgrad's Philox generators (``clgrad.manual_seed``), the
Gamma family through the ``random_gamma`` kernel. ``rsample`` is differentiable where PyTorch's is (Normal,
Uniform, Exponential, Laplace, MultivariateNormal by reparameterization; Gamma, Beta, Dirichlet by implicit
reparameterization), and so are ``log_prob``, ``entropy`` and ``kl_divergence`` in the parameters.
"""
from __future__ import annotations

from . import constraints
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential", "Gamma", "Independent", "Laplace",
    "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "Uniform", "constraints", "kl_divergence",
    "register_kl",
]
