"""clgrad: PyTorch's API on any OpenCL device. ``import clgrad as torch``."""
from __future__ import annotations

from ._version import __version__

from .dtypes import (  # noqa: F401
    bool, dtype, float16, float32, float64, int8, int16, int32, int64, uint8,
    get_default_dtype, set_default_dtype, promote_types,
)
from .dtypes import result_type as _result_type
from .dtypes import bfloat16  # noqa: F401
from .typeinfo import finfo, iinfo  # noqa: F401
from .device import device, get_default_device, set_default_device  # noqa: F401
from .tensor import Tensor, Size, is_tensor  # noqa: F401
from .backends.opencl.allocator import OutOfMemoryError  # noqa: F401
from .ops.creation import (  # noqa: F401
    tensor, as_tensor, from_numpy, empty, zeros, ones, full, arange, linspace, eye,
    empty_like, zeros_like, ones_like, full_like,
)
from .ops import math as _math
from .ops.math import FUNCS as _FUNCS, add, sub, div, where, clamp, rsub  # noqa: F401
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
from .ops.stats_extra import *  # noqa: F401,F403
from .ops.scans_extra import *  # noqa: F401,F403
from .ops.conv import *  # noqa: F401,F403
from .ops.pooling import *  # noqa: F401,F403
from .ops.conv3d import *  # noqa: F401,F403
from .ops.pool3d import *  # noqa: F401,F403
from .ops.pool_extra import *  # noqa: F401,F403
from .ops.nnops import *  # noqa: F401,F403
from .ops.norms import *  # noqa: F401,F403
from .ops.pixel import *  # noqa: F401,F403
from .ops.products import *  # noqa: F401,F403
from .ops.einsum import *  # noqa: F401,F403
from .ops.calculus import *  # noqa: F401,F403
from . import linalg  # noqa: F401
from .ops.activations import *  # noqa: F401,F403
from .ops.distance import *  # noqa: F401,F403
from .ops.losses_extra import *  # noqa: F401,F403
from .ops.scatter_extra import *  # noqa: F401,F403
from .ops.search import *  # noqa: F401,F403
from . import autograd, datasets, distributed, nn, optim, profiler, utils  # noqa: F401
from . import onnx  # noqa: F401 - clgrad.onnx.export (the onnx package loads only when it runs)
from .serialization import CheckpointError, load, save  # noqa: F401
from .compiler import compile  # noqa: F401,A004
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled  # noqa: F401
from .autograd.grad_mode import is_inference_mode_enabled  # noqa: F401
from .tensor import layout, sparse_coo, strided  # noqa: F401
from .ops.sparse import sparse_coo_tensor  # noqa: F401
from .ops.sparse_mm import spmm  # noqa: F401
from . import sparse  # noqa: F401
from .tensor import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format  # noqa: F401
from .ops.methods import install as _install_methods
# device-agnostic API, torch.cuda/torch.backends.* stand-ins, shared-memory multiprocessing (clgrad.accelerator)
from . import accelerator, cuda, multiprocessing  # noqa: F401,E402
from .accelerator import get_device_module  # noqa: F401,E402
from .backends import cuda as _b_cuda, cudnn as _b_cudnn, mkl as _b_mkl, mkldnn as _b_mkldnn  # noqa: F401,E402
from .backends import mps as _b_mps, openmp as _b_openmp  # noqa: F401,E402
from .backends.flags import (  # noqa: F401,E402
    are_deterministic_algorithms_enabled, get_deterministic_debug_mode, get_float32_matmul_precision,
    get_num_interop_threads, get_num_threads, is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode, set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
    use_deterministic_algorithms,
)

_install_methods(Tensor)
from .ops import special as _special  # noqa: E402
from .ops.special import polygamma, mvlgamma, _standard_gamma_grad  # noqa: E402,F401
from .ops.special import heaviside, positive, float_power, ldexp, frexp  # noqa: E402,F401

_special.install(Tensor)
from . import fft  # noqa: E402 - torch.fft's namespace (transforms on (re, im) pairs: ops/fft_core.py)
from ._stft import stft, istft, install as _install_stft  # noqa: E402

_install_stft(Tensor)
from .ops.linalg_solve import *  # noqa: F401,F403,E402 - cholesky, cholesky_solve, cholesky_inverse, triangular_solve
from .ops.linalg_lu import *  # noqa: F401,F403,E402 - det, logdet, slogdet, inverse, lu_unpack
from .ops.linalg_lu import legacy_lu as lu, legacy_lu_solve as lu_solve, install as _install_lu  # noqa: E402,F401

_install_lu(Tensor)
# issue 17: QR, SVD and eigen-decompositions (ops/linalg_qr.py, linalg_svd.py, linalg_eig.py)
from .ops.linalg_qr import *  # noqa: F401,F403,E402 - geqrf, orgqr, ormqr, qr
from .ops.linalg_svd import *  # noqa: F401,F403,E402 - svd, pinverse, svd_lowrank, pca_lowrank
from .ops.linalg_eig import *  # noqa: F401,F403,E402 - matrix_exp
from .ops.linalg_qr import install as _install_qr  # noqa: E402
from .ops.linalg_svd import install as _install_svd  # noqa: E402

_install_qr(Tensor)
_install_svd(Tensor)
Tensor.matrix_exp = matrix_exp  # noqa: F405
from .special_random import _sample_dirichlet, _standard_gamma  # noqa: E402,F401
from . import distributions  # noqa: E402,F401
# issue 17: shape/creation/random breadth (the *_copy views, rot90, logspace, cauchy_, ...)
from .ops import shape_extra as _shape_extra  # noqa: E402
from . import random_extra as _random_extra  # noqa: E402
from .ops.shape_extra import *  # noqa: F401,F403,E402
from .ops.creation_extra import *  # noqa: F401,F403,E402
from .random_extra import *  # noqa: F401,F403,E402

_shape_extra.install(Tensor)
_random_extra.install(Tensor)
from . import special  # noqa: E402,F401 - torch.special's namespace
from . import masked  # noqa: E402,F401 - torch.masked (mask= reductions)
from . import amp  # noqa: E402,F401 - torch.amp: autocast regions and GradScaler
from .amp.autocast_mode import (  # noqa: E402,F401
    autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled,
)


def is_autocast_cpu_enabled() -> bool:
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")




globals().update(_FUNCS)
globals().update(_math.NO_INPLACE_FUNCS)
globals().update(_math.TORCH_FUNCS)
from .ops.forms import *  # noqa: F401,F403,E402 - after the generated functions: round(decimals=), pow(exponent=)
from .ops.legacy import *  # noqa: F401,F403,E402
float, double, half, long, int, short = float32, float64, float16, int64, int32, int16  # noqa: A001
multiply, subtract, divide, true_divide, clip = _FUNCS["mul"], sub, div, div, clamp
absolute, negative, greater, less, not_equal = (_FUNCS[n] for n in ("abs", "neg", "gt", "lt", "ne"))


def result_type(tensor1, tensor2):
    """The dtype an op on ``tensor1`` and ``tensor2`` produces: ``clgrad.result_type(x, 2.5)``."""
    return _result_type(tensor1, tensor2)


def synchronize() -> None:
    opencl.synchronize()

# issue 17: complex64/complex128 as (re, im) pairs of real storage, composed from real ops (ops/complex.py)
from .dtypes import complex64, complex128  # noqa: E402,F401
from .ops import complex_math as _complex_math  # noqa: E402,F401 - registers the complex compositions
from .ops.complex import *  # noqa: F401,F403,E402
from .ops.complex import install as _install_complex  # noqa: E402

cfloat, cdouble = complex64, complex128
_install_complex(Tensor)

# issue 17's nn ops at top level (grid_sampler_2d, native_batch_norm, conv_tbc, _chunk_cat ...)
from .ops.attention import *  # noqa: F401,F403,E402
from .ops.grid_sample import *  # noqa: F401,F403,E402
from .ops.nn_misc import *  # noqa: F401,F403,E402
from .ops.resample_aa import *  # noqa: F401,F403,E402
from .ops.segments import *  # noqa: F401,F403,E402

# torch alias names and cheap composites (arccos, special.expit, signal.windows ...) where clgrad lacks them; last
import sys as _sys  # noqa: E402

from .ops import aliases as _aliases  # noqa: E402

_aliases.install(_sys.modules[__name__])

# CLGRAD_WARMUP=background: build the example networks' kernels in a daemon thread (warmup.py; off by default)
if __import__("os").environ.get("CLGRAD_WARMUP") == "background":
    from . import warmup as _warmup  # noqa: E402

    _warmup.start_background()
