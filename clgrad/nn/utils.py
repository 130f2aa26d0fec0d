"""``clgrad.nn.utils``: gradient clipping and flattening parameters into one vector."""
from __future__ import annotations

import math

from ..autograd.grad_mode import no_grad
from ..ops.creation import tensor
from ..ops.joins import cat, stack
from ..tensor import is_tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters) -> list:
    return [parameters] if is_tensor(parameters) else list(parameters)


def _norm(t, p: float):
    a = t.abs()
    if p == math.inf:
        return a.max()
    if p == -math.inf:
        return a.min()
    return a.pow(p).sum().pow(1.0 / p)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Scale the gradients so their joint ``norm_type``-norm is at most ``max_norm``; returns the norm
    before clipping (a 0-d tensor, computed on the gradients' device without a host round trip)."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        total = _norm(stack([_norm(g, norm_type) for g in grads]), norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
                "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`")
        coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Point each parameter's data at its slice of ``vec`` (the inverse of ``parameters_to_vector``)."""
    if not is_tensor(vec):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view(p.shape).data
        pointer += n
