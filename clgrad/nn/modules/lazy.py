"""Lazy modules: their parameters' shapes are inferred from the first input, as in PyTorch.

A lazy module holds ``UninitializedParameter``/``UninitializedBuffer`` placeholders; a forward pre-hook
materializes them from the first input, initializes them, removes itself, and turns the module into its
``cls_to_become`` (``LazyLinear`` becomes a ``Linear``). Loading a state_dict into a lazy module materializes the
placeholders with the checkpoint's shapes.
"""
from __future__ import annotations

from ... import dtypes as D
from ...autograd.grad_mode import no_grad
from ...ops import creation
from ..parameter import UninitializedBuffer, UninitializedParameter, UninitializedTensorMixin
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .conv3d import Conv3d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


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


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is the last dim of the first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        self.in_channels = input.shape[0] if input.dim() == self._dims + 1 else input.shape[1]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        self.weight.materialize(shape + tuple(self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv(name: str, base):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)

    def __init_t__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                   dilation=1, padding_mode="zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                                 padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)

    init = __init_t__ if "Transpose" in name else __init__
    doc = f"A {base.__name__} whose ``in_channels`` is the channel count of the first input."
    return type(name, (_LazyConvMixin, base), {"cls_to_become": base, "__init__": init, "__doc__": doc,
                                                "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d)


class _LazyNormMixin(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        # affine and track_running_stats False: no tensors are made only to be replaced
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=D.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]  # PyTorch's rule (dim 1 also for an unbatched instance-norm input)
        if self.affine:
            self.weight.materialize((self.num_features,))
            if self.bias is not None:
                self.bias.materialize((self.num_features,))
        if self.track_running_stats:
            self.running_mean.materialize((self.num_features,))
            self.running_var.materialize((self.num_features,))
        self.reset_parameters()


def _lazy_norm(name: str, base):
    """PyTorch's lazy norms all default to affine=True, track_running_stats=True (the instance norms too)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        _LazyNormMixin.__init__(self, eps, momentum, affine, track_running_stats, device, dtype)

    doc = f"A {base.__name__} whose ``num_features`` is dim 1 of the first input."
    return type(name, (_LazyNormMixin, base), {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                                                "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d)
