"""clgrad: PyTorch's API on any OpenCL device. ``import clgrad as torch``."""
from __future__ import annotations

from ._version import __version__

from .dtypes import (  # noqa: F401
    bool, dtype, float16, float32, float64, int8, int16, int32, int64, uint8,
    get_default_dtype, set_default_dtype, promote_types,
)
from .dtypes import result_type as _result_type
from .device import device, get_default_device, set_default_device  # noqa: F401
from .tensor import Tensor, Size, is_tensor  # noqa: F401
from .backends.opencl.allocator import OutOfMemoryError  # noqa: F401
from .ops.creation import (  # noqa: F401
    tensor, as_tensor, from_numpy, empty, zeros, ones, full, arange, linspace, eye,
    empty_like, zeros_like, ones_like, full_like,
)
from .ops import math as _math
from .ops.math import FUNCS as _FUNCS, add, sub, div, where, clamp, rsub  # noqa: F401
from .ops.views import broadcast_shapes  # noqa: F401
from . import opencl  # noqa: F401
from ._tensor_str import set_printoptions, get_printoptions, printoptions  # noqa: F401
from .ops.reduction import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.gather import *  # noqa: F401,F403
from .ops.joins import *  # noqa: F401,F403
from .ops.rearrange import *  # noqa: F401,F403
from .ops.scans import *  # noqa: F401,F403
from .ops.stats import *  # noqa: F401,F403
from .ops.conv import *  # noqa: F401,F403
from .ops.pooling import *  # noqa: F401,F403
from .ops.nnops import *  # noqa: F401,F403
from .ops.norms import *  # noqa: F401,F403
from .ops.pixel import *  # noqa: F401,F403
from .ops.activations import *  # noqa: F401,F403
from .ops.distance import *  # noqa: F401,F403
from .ops.losses_extra import *  # noqa: F401,F403
from . import autograd, datasets, distributed, nn, optim, profiler, utils  # noqa: F401
from .serialization import CheckpointError, load, save  # noqa: F401
from .compiler import compile  # noqa: F401,A004
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled  # noqa: F401
from .autograd.grad_mode import is_inference_mode_enabled  # noqa: F401
from .tensor import contiguous_format, preserve_format  # noqa: F401
from .ops.methods import install as _install_methods

_install_methods(Tensor)


def _as_function(name: str):
    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``clgrad.{name}(x, ...)`` is ``x.{name}(...)`` (a view; recorded by autograd)."
    return fn


for _name in ("reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "narrow", "select", "t",
              "as_strided"):
    globals()[_name] = _as_function(_name)
globals().update(_FUNCS)
globals().update(_math.NO_INPLACE_FUNCS)
globals().update(_math.TORCH_FUNCS)
float, double, half, long, int, short = float32, float64, float16, int64, int32, int16  # noqa: A001
multiply, subtract, divide, true_divide, clip = _FUNCS["mul"], sub, div, div, clamp
absolute, negative, greater, less, not_equal = (_FUNCS[n] for n in ("abs", "neg", "gt", "lt", "ne"))


def result_type(tensor1, tensor2):
    """The dtype an op on ``tensor1`` and ``tensor2`` produces: ``clgrad.result_type(x, 2.5)``."""
    return _result_type(tensor1, tensor2)


def numel(t) -> int:
    if not isinstance(t, Tensor):
        raise TypeError(f"numel(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    return t.numel()


def synchronize() -> None:
    opencl.synchronize()
