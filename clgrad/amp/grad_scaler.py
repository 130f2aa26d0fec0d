"""``clgrad.amp.GradScaler``: PyTorch's dynamic loss scaling for float16 training.

``scale(loss)`` multiplies by the current scale; ``step(optimizer)`` unscales the gradients (unless ``unscale_`` did),
skips the step when any gradient is inf or NaN, and ``update()`` halves the scale after a skipped step or doubles it
after ``growth_interval`` clean ones, with PyTorch's messages for misuse. The non-finite check is summed on the device
and read once per step. ``device="cuda"`` behaves as in a CPU-only PyTorch: a warning, and the scaler is disabled.
"""
from __future__ import annotations

import enum
import warnings
from collections import abc

import numpy as np

from .. import dtypes as D
from ..autograd.grad_mode import no_grad


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._device == "cuda" and self._enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale, self._scale = float(init_scale), None
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval, self._growth_tracker = int(growth_interval), 0
        self._per_optimizer_states: dict = {}

    def _state(self, optimizer) -> dict:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh())

    def _check_scale(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def scale(self, outputs):
        """``outputs`` (a tensor or an iterable of them) multiplied by the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = self._init_scale
        if hasattr(outputs, "_storage"):
            return outputs * self._scale
        if isinstance(outputs, abc.Iterable):
            scaled = map(self.scale, outputs)
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and record whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(np.float32(1.0 / self._scale))  # PyTorch: the float64 reciprocal rounded to float32
        found = []
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype is D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    found.append((~g.isfinite()).any())
                    g.mul_(inv_scale)
        state["found_inf"] = found
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless a gradient was inf or NaN (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        state["skipped"] = any(bool(f.item()) for f in state["found_inf"])  # one read per gradient's flag
        retval = None if state["skipped"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back the scale off after a skipped step, grow it after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            if hasattr(new_scale, "_storage"):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                                         "torch.FloatTensor with requires_grad=False.")
                new_scale = new_scale.item()
            self._scale = float(new_scale)
        else:
            states = [s for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not states:
                raise AssertionError("No inf checks were recorded prior to update.")
            skipped = any(s.get("skipped", any(bool(f.item()) for f in s["found_inf"])) for s in states)
            if skipped:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer_states = {}

    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        return self._growth_tracker if self._enabled else 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
