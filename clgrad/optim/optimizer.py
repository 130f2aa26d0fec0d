"""The ``Optimizer`` base class: parameter groups, per-parameter state and PyTorch-layout state dicts.

Subclasses implement ``_update(group)``; every update runs with clgrad ops on the parameters' own device, in
place and under ``no_grad``. Scalars such as bias corrections are Python floats computed from the step
count, which lives in ``state`` as a Python float, so a step never reads anything back from a device.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any

from .. import backends
from .. import dtypes as D
from ..autograd.grad_mode import enable_grad, no_grad
from ..graphs import refuse
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a hyper-parameter that has no default (PyTorch's ``optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def check(ok: bool, message: str) -> None:
    """Hyper-parameter validation: PyTorch raises ``ValueError`` with these exact words."""
    if not ok:
        raise ValueError(message)


class Optimizer:
    """Base class of all optimizers. ``params`` is an iterable of tensors or of dicts (parameter groups)."""

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state: defaultdict[Tensor, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {key}: {group[key]}\n" for key in sorted(group) if key != "params")
        return text + ")"

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options; missing options take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not (param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to ``None`` by default, else to zeros in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def step(self, closure=None):
        """Perform one optimization step. ``closure`` re-evaluates the model and returns the loss."""
        self._opt_called = True  # lets a scheduler warn when it is stepped before its optimizer
        if not self._graph_safe:
            refuse(f"{type(self).__name__} computes per-step values on the host (SGD and Adam/AdamW can be captured)")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update(group)
        return loss

    def _update(self, group: dict) -> None:
        raise NotImplementedError

    _graph_safe = False  # whether a graph capture (clgrad.graphs) can replay the step

    def _params_with_grad(self, group: dict, negate: bool = True):
        """(param, grad, state) for each parameter of ``group`` that has a gradient; with ``maximize`` the
        gradient comes negated unless ``negate`` is off (a fused step negates it itself)."""
        for p in group["params"]:
            if p.grad is None:
                continue
            if getattr(p.grad, "is_sparse", False):
                raise RuntimeError(f"{self.__class__.__name__} does not support sparse gradients")
            grad = -p.grad if negate and group.get("maximize", False) else p.grad
            yield p, grad, self.state[p]

    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`` as PyTorch lays it out."""
        mapping: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()`` (from clgrad, or PyTorch's layout); tensors are copied onto each parameter's
        device and dtype, so the source optimizer may keep running independently."""
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict[Tensor, Any] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {k: _cast(param, v, k) for k, v in value.items()}
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})


def _cast(param: Tensor, value, key):
    """A loaded state value: 'step' becomes a Python float; tensors go to the parameter's device (and dtype,
    for floating ones) as fresh copies."""
    if key == "step":
        return float(value.item()) if isinstance(value, Tensor) else float(value)
    if isinstance(value, Tensor):
        if value.dtype.kind == "f" and param.dtype.kind == "f":
            return value.to(device=param.device, dtype=param.dtype, copy=True)
        return value.to(device=param.device, copy=True)
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v, key) for v in value)
    return value


def adam_moments(p, grad, state: dict, group: dict):
    """The steps Adam, AdamW, NAdam and RAdam share: count the step, apply weight decay (decoupled: shrink the
    parameter; else L2: add it to the gradient), update the moving averages in place. Returns
    (step, grad with L2 decay applied, exp_avg, exp_avg_sq)."""
    lr, wd, (beta1, beta2) = group["lr"], group["weight_decay"], group["betas"]
    state["step"] += 1
    if wd != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        else:
            grad = grad.add(p, alpha=wd)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    return state["step"], grad, exp_avg, exp_avg_sq


def fused_backend(p, *tensors):
    """The fused optimizer steps of the parameter's backend (its ``fused_optim``) when it has them and they apply:
    ``p``, its gradient and its state tensors (None entries are skipped) are contiguous and of one float dtype, on
    ``p``'s device.
    Otherwise None, and the optimizer composes the same update from elementwise ops."""
    fused = backends.get(p.device).fused_optim
    if fused is None or p.dtype not in (D.float32, D.float64):
        return None
    for t in (p, *tensors):
        if t is not None and (t.dtype is not p.dtype or t.device != p.device or not t.is_contiguous()):
            return None
    return fused
