"""``clgrad.finfo`` and ``clgrad.iinfo``: the numerical limits of a dtype, with torch's attribute names (bfloat16's
from ml_dtypes)."""
from __future__ import annotations

import numpy as np

from . import dtypes as D

__all__ = ["finfo", "iinfo"]


class finfo:  # noqa: N801 - torch.finfo
    """Limits of a floating-point dtype: ``bits eps max min tiny smallest_normal resolution dtype``."""

    def __init__(self, type=None):  # noqa: A002 - torch's keyword
        d = D.get_default_dtype() if type is None else D.as_dtype(type)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'")
        if d is D.bfloat16:
            import ml_dtypes

            info = ml_dtypes.finfo(d.np)
        else:
            info = np.finfo(d.np)
        self.bits = info.bits
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch.iinfo
    """Limits of an integer dtype: ``bits max min dtype``."""

    def __init__(self, type):  # noqa: A002 - torch's keyword
        d = D.as_dtype(type)
        if d.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.kind not in "iu":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = info.bits, int(info.max), int(info.min), d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
