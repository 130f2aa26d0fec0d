"""Helpers shared by the distributions (PyTorch's ``torch.distributions.utils``)."""
from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import numpy as np

from .. import dtypes as D
from ..nn import functional as F
from ..ops.creation import tensor
from ..ops.rearrange import broadcast_tensors
from ..random import normal_
from ..tensor import Tensor, is_tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def broadcast_all(*values):
    """Tensors and numbers broadcast to one shape; numbers become tensors of the first tensor's dtype and device
    (the default dtype when all are numbers): ``loc, scale = broadcast_all(loc, 1.0)``."""
    if not all(is_tensor(v) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(is_tensor(v) for v in values):
        like = next((v for v in values if is_tensor(v)), None)
        opts = dict(dtype=like.dtype, device=like.device) if like is not None else dict(dtype=D.get_default_dtype())
        values = [v if is_tensor(v) else tensor(v, **opts) for v in values]
    return broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return normal_(Tensor._empty(tuple(shape), dtype, device))


def _sum_rightmost(value, dim: int):
    """``value`` summed over its ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def finfo(dtype):
    """numpy's finfo of a clgrad float dtype (eps, tiny, min, max)."""
    return np.finfo(dtype.np)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: sigmoid for a binary variable, else softmax over the last dim."""
    if is_binary:
        return logits.sigmoid()
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities clamped to [eps, 1 - eps] of their dtype."""
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities (clamped first): log(p) - log1p(-p) binary, else log(p)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


class lazy_property:
    """A property computed once per instance on first access (then an instance attribute); under ``no_grad``
    when accessed through the class for ``arg_constraints`` checks, as PyTorch's."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: both, so introspection (``Distribution.__repr__``) works."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
