"""NAdam: Adam with Nesterov momentum and a momentum schedule."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .adam import check_betas
from .optimizer import Optimizer, adam_moments, check


class NAdam(Optimizer):
    """``NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False)``. ``mu_product`` is kept as a Python float (PyTorch: a float32 cpu tensor)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False) -> None:
        check_betas(lr, eps, betas, weight_decay)
        check(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        lr, (beta1, beta2), decay = group["lr"], group["betas"], group["momentum_decay"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = 0.0
                state["mu_product"] = 1.0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            step, grad, exp_avg, exp_avg_sq = adam_moments(p, grad, state, group)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
            state["mu_product"] *= mu
            mu_product = state["mu_product"]
            denom = exp_avg_sq.div(1 - beta2 ** step).sqrt().add_(group["eps"])
            p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
            p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
