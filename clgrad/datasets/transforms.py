"""Small image transforms with torchvision's semantics: ``ToTensor``, ``Normalize``, ``Compose``, ``Lambda``.

Images are numpy arrays (HxW or HxWxC), so the data pipeline needs nothing beyond numpy; ``ToTensor`` also takes
anything with ``__array_interface__`` (PIL images among them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..ops.creation import from_numpy
from ..ops.creation import tensor as make_tensor
from ..tensor import is_tensor

__all__ = ["Compose", "Lambda", "Normalize", "ToTensor"]


class Compose:
    """Applies ``transforms`` one after the other: ``Compose([ToTensor(), Normalize((0.5,), (0.5,))])``."""

    def __init__(self, transforms: Sequence[Callable]):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """A numpy (or PIL) image HxW or HxWxC as a clgrad tensor CxHxW; uint8 values are scaled to float32 in [0, 1].

    Other dtypes keep their values and dtype, as torchvision does for non-byte arrays.
    """

    def __call__(self, pic):
        if not isinstance(pic, np.ndarray) and hasattr(pic, "__array_interface__"):
            pic = np.asarray(pic)  # a PIL image (mode L, RGB...) or another array-like image
        if not isinstance(pic, np.ndarray):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        img = pic[:, :, None] if pic.ndim == 2 else pic
        img = np.ascontiguousarray(img.transpose(2, 0, 1))
        if img.dtype == np.uint8:
            img = img.astype(np.float32) / np.float32(255)
        elif not img.dtype.isnative:
            img = img.astype(img.dtype.newbyteorder("="))
        return from_numpy(img.copy() if np.shares_memory(img, pic) else img)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class Normalize:
    """``(tensor - mean) / std`` per channel of a float tensor image (..., C, H, W)."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor):
        if not is_tensor(tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.dim() < 3:
            raise ValueError(
                "Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                f"{tuple(tensor.shape)}"
            )
        mean = make_tensor(_as_list(self.mean), dtype=tensor.dtype, device=tensor.device)
        std = make_tensor(_as_list(self.std), dtype=tensor.dtype, device=tensor.device)
        if bool((std == 0).any()):
            raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
        mean, std = mean.view(-1, 1, 1), std.view(-1, 1, 1)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return tensor.sub(mean).div(std)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Lambda:
    """Wraps a user function as a transform: ``Lambda(lambda x: x * 2)``."""

    def __init__(self, lambd: Callable):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


def _as_list(values) -> list[float]:
    """mean/std given as a number, a sequence or an array, as a list of floats."""
    return [float(v) for v in np.atleast_1d(np.asarray(values, dtype=np.float64))]
