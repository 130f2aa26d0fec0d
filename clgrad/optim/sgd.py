"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from ..graphs import refuse
from .optimizer import Optimizer, check, fused_backend


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False)``."""

    _graph_safe = True  # no host-computed per-step value (fused Adam refreshes its own: graphs.py)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None) -> None:
        check(lr >= 0.0, f"Invalid learning rate: {lr}")
        check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        check(not nesterov or (momentum > 0 and dampening == 0),
              "Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def _update(self, group: dict) -> None:
        lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
        for p, grad, state in self._params_with_grad(group, negate=False):
            buf = state.get("momentum_buffer")
            first = momentum != 0 and buf is None
            if first:
                refuse("its first step creates the momentum buffers (warm up eagerly before capturing)")
            backend = fused_backend(p, grad, buf)
            if backend is not None:
                if first:
                    buf = state["momentum_buffer"] = p._empty_like()  # the kernel fills it from the gradient
                backend.sgd_step(p, grad, buf if momentum != 0 else None, lr=lr, momentum=momentum,
                                 dampening=group["dampening"], weight_decay=wd, nesterov=group["nesterov"],
                                 maximize=group["maximize"], first=first)
                continue
            if group["maximize"]:
                grad = -grad
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            if momentum != 0:
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = grad.clone().detach()
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
                grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
            p.add_(grad, alpha=-lr)
