"""RMSprop (optionally centered, with momentum)."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .optimizer import Optimizer, check


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False)``."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False) -> None:
        check(0.0 <= lr, f"Invalid learning rate: {lr}")
        check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = 0.0
                state["square_avg"] = zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = zeros_like(p)
            state["step"] += 1
            if group["weight_decay"] != 0:
                grad = grad.add(p, alpha=group["weight_decay"])
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(grad, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(grad, avg, value=-lr)
