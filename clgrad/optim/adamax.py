"""Adamax: Adam with the infinity norm in place of the second moment."""
from __future__ import annotations

from ..ops.creation import zeros_like
from ..ops.math import FUNCS
from .adam import check_betas
from .optimizer import Optimizer


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False)``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False) -> None:
        check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        beta1, beta2 = group["betas"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = 0.0
                state["exp_avg"] = zeros_like(p)
                state["exp_inf"] = zeros_like(p)
            state["step"] += 1
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            exp_avg.lerp_(grad, 1 - beta1)
            FUNCS["maximum"](exp_inf.mul_(beta2), grad.abs().add_(group["eps"]), out=exp_inf)
            clr = group["lr"] / (1 - beta1 ** state["step"])
            p.addcdiv_(exp_avg, exp_inf, value=-clr)
