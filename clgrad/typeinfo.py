"""``torch.finfo`` and ``torch.iinfo``: the numeric limits of a dtype (bfloat16's from ml_dtypes)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from . import dtypes as D

__all__ = ["finfo", "iinfo"]


class finfo:  # noqa: N801 - torch.finfo
    """Limits of a floating dtype: ``clgrad.finfo(clgrad.bfloat16).eps`` (the default dtype without an argument)."""

    def __init__(self, type=None):  # noqa: A002 - PyTorch's parameter name
        d = D.get_default_dtype() if type is None else D.as_dtype(type)
        if d.kind != "f":
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = ml_dtypes.finfo(d.np)
        self.dtype, self.bits = d.name, d.itemsize * 8
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(10.0 ** -info.precision)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch.iinfo
    """Limits of an integer dtype: ``clgrad.iinfo(clgrad.int32).max``."""

    def __init__(self, type):  # noqa: A002 - PyTorch's parameter name
        d = D.as_dtype(type)
        if d.kind not in "iub":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(np.uint8 if d.kind == "b" else d.np)
        self.dtype, self.bits, self.min, self.max = d.name, d.itemsize * 8, int(info.min), int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"
