"""Adagrad: per-coordinate steps scaled by the root of the summed squared gradients."""
from __future__ import annotations

from ..ops.creation import full_like
from .optimizer import Optimizer, check


class Adagrad(Optimizer):
    """``Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10)``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None) -> None:
        check(0.0 <= lr, f"Invalid learning rate: {lr}")
        check(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check(0.0 <= initial_accumulator_value,
              f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # like PyTorch, the accumulators exist from the start (so state_dict lists every parameter)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = 0.0
                self.state[p]["sum"] = full_like(p, group["initial_accumulator_value"])

    def _update(self, group: dict) -> None:
        for p, grad, state in self._params_with_grad(group):
            state["step"] += 1
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
            state["sum"].addcmul_(grad, grad, value=1)
            std = state["sum"].sqrt().add_(group["eps"])
            p.addcdiv_(grad, std, value=-clr)
