"""Conv1d/2d/3d, ConvTranspose1d/2d/3d and their Lazy forms (3-D convolutions are composed from 2-D ones:
ops/conv3d.py)."""
from __future__ import annotations

import math

from ...ops import creation
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .linear import _uniform_bias
from .module import Module

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation, self.transposed = stride, padding, dilation, transposed
        self.output_padding, self.groups, self.padding_mode = output_padding, groups, padding_mode
        self._reversed_padding_repeated_twice = self._edge_padding()
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(creation.empty(shape + kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _edge_padding(self) -> list:
        """F.pad's argument (last dim first) for the non-zeros padding modes."""
        pads = []
        for i in reversed(range(len(self.kernel_size))):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                pads += [total // 2, total - total // 2]
            elif self.padding == "valid":
                pads += [0, 0]
            else:
                pads += [self.padding[i]] * 2
        return pads

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            _uniform_bias(self.bias, init._fans(self.weight)[0])

    def _conv(self, fn, input):
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _dims = 0
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        n = self._dims
        padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n), padding,
                         _ntuple(dilation, n), False, (0,) * n, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv(type(self)._fn, input)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) input; PyTorch's signature and initialisation."""

    _dims = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) input; PyTorch's signature and initialisation."""

    _dims = 2
    _fn = staticmethod(F.conv2d)


class _ConvTranspose(_ConvNd):
    _dims = 0
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self._dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n),
                         _ntuple(padding, n), _ntuple(dilation, n), True, _ntuple(output_padding, n), groups, bias,
                         padding_mode, device, dtype)

    def _output_padding(self, input, output_size) -> tuple:
        if output_size is None:
            return self.output_padding
        n = self._dims
        output_size = list(output_size)[-n:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{n + 2} elements (got {len(output_size)})")
        result = []
        for d in range(n):
            size = input.shape[input.dim() - n + d]
            low = ((size - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1)
                   + 1)
            high = low + self.stride[d] - 1
            if not low <= output_size[d] <= high:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {low} to "
                                 f"{high} (for an input of {list(input.shape[-n:])})")
            result.append(output_size[d] - low)
        return tuple(result)

    def forward(self, input, output_size=None):
        out_pad = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, out_pad, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTranspose):
    _dims = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution; weight (in_channels, out_channels // groups, kH, kW)."""

    _dims = 2
    _fn = staticmethod(F.conv_transpose2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) input; PyTorch's signature and initialisation.

    >>> nn.Conv3d(2, 4, 3, padding=1)(clgrad.ones(1, 2, 4, 5, 6)).shape
    clgrad.Size([1, 4, 4, 5, 6])
    """

    _dims = 3
    _fn = staticmethod(F.conv3d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution; weight (in_channels, out_channels // groups, kD, kH, kW)."""

    _dims = 3
    _fn = staticmethod(F.conv_transpose3d)


# ---- lazy forms: in_channels from the first input ------------------------------------------------------
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
