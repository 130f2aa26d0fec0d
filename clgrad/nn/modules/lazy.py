"""``LazyModuleMixin``: parameters' shapes inferred from the first input, as in PyTorch.

A lazy module holds ``UninitializedParameter``/``UninitializedBuffer`` placeholders; a forward pre-hook
materializes them from the first input, initializes them, removes itself, and turns the module into its
``cls_to_become`` (``LazyLinear`` becomes a ``Linear``). Loading a state_dict into a lazy module materializes the
placeholders with the checkpoint's shapes. The lazy layers live beside their eager classes (``LazyLinear`` in
linear.py, ``LazyConv*`` in conv.py, ...), where PyTorch has them.
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..parameter import UninitializedTensorMixin

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Infers parameter shapes on the first call: subclasses implement ``initialize_parameters(*inputs)``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """True while any parameter or buffer is still a placeholder."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, UninitializedTensorMixin) for t in tensors)

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _load_from_state_dict(self, state_dict, prefix, missing, unexpected, errors) -> None:
        for name, value in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if isinstance(value, UninitializedTensorMixin) and key in state_dict:
                with no_grad():
                    value.materialize(tuple(state_dict[key].shape))
        super()._load_from_state_dict(state_dict, prefix, missing, unexpected, errors)


def _infer_parameters(module, args):
    with no_grad():
        module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
