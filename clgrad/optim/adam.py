"""Adam and AdamW (decoupled weight decay), with AMSGrad."""
from __future__ import annotations

from ..graphs import is_current_stream_capturing, on_replay, refuse
from ..ops.creation import zeros_like
from ..ops.math import FUNCS
from .optimizer import Optimizer, adam_moments, check, fused_backend


def check_betas(lr, eps, betas, weight_decay) -> None:
    """The checks Adam-family optimizers share, with PyTorch's messages."""
    check(0.0 <= lr, f"Invalid learning rate: {lr}")
    check(0.0 <= eps, f"Invalid epsilon value: {eps}")
    check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False)``."""

    _graph_safe = True  # no host-computed per-step value (fused Adam refreshes its own: graphs.py)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False) -> None:
        check_betas(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in (("amsgrad", False), ("maximize", False), ("decoupled_weight_decay", False)):
                group.setdefault(key, value)

    def _update(self, group: dict) -> None:
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        for p, grad, state in self._params_with_grad(group, negate=False):
            if not state:
                refuse("its first step creates the moment buffers (warm up eagerly before capturing)")
                state["step"] = 0.0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            vmax = state.get("max_exp_avg_sq") if group["amsgrad"] else None
            backend = fused_backend(p, grad, state["exp_avg"], state["exp_avg_sq"], vmax)
            if backend is not None:
                if is_current_stream_capturing():  # each replay is one more step (the capture itself none)
                    on_replay(_count_step, state)
                else:
                    state["step"] += 1
                backend.adam_step(p, grad, state["exp_avg"], state["exp_avg_sq"], vmax, lr=lr, beta1=beta1,
                                  beta2=beta2, eps=eps, weight_decay=group["weight_decay"],
                                  decoupled=group["decoupled_weight_decay"], maximize=group["maximize"],
                                  step=state["step"])
                continue
            if group["maximize"]:
                grad = -grad
            refuse("its bias corrections are computed on the host (only the fused step of contiguous float "
                   "tensors on OpenCL can be replayed)")
            step, grad, exp_avg, exp_avg_sq = adam_moments(p, grad, state, group)
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if group["amsgrad"]:
                FUNCS["maximum"](state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                exp_avg_sq = state["max_exp_avg_sq"]
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)


def _count_step(state: dict) -> None:
    state["step"] += 1


class AdamW(Adam):
    """``AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False)``: Adam whose
    weight decay shrinks the parameters directly instead of entering the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
