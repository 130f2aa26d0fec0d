"""Conv3d and ConvTranspose3d (the shared machinery is conv.py's)."""
from __future__ import annotations

from .. import functional as F
from .conv import _Conv, _ConvTranspose

__all__ = ["Conv3d", "ConvTranspose3d"]


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
