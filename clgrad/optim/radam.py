"""RAdam: Adam with its adaptive step rectified while the variance estimate is unreliable."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .adam import check_betas
from .optimizer import Optimizer, adam_moments


class RAdam(Optimizer):
    """``RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False)``:
    plain momentum steps until the variance estimate is trustworthy (rho_t > 5), then rectified Adam steps."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False) -> None:
        check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        lr, (beta1, beta2) = group["lr"], group["betas"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = 0.0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            step, grad, exp_avg, exp_avg_sq = adam_moments(p, grad, state, group)
            bias_correction2 = 1 - beta2 ** step
            update = exp_avg / (1 - beta1 ** step) * lr
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(group["eps"])
                update = update * adaptive * rect
            p.add_(update, alpha=-1.0)
