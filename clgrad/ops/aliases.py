"""PyTorch's alias names and cheap composite ops, installed where clgrad lacks them.

``install(package)`` runs last in ``clgrad/__init__.py``. Each name is set only when the package does not
already define it, so a dedicated implementation (a registry record, a kernel) always wins over these, and an
alias of an op that does not exist yet (``arccosh`` of ``acosh``) appears as soon as its target does.
The composites are written in clgrad ops, so autograd and every device come for free; they are for real dtypes
(the complex ops live in ``ops/complex.py``; a name set there first, as ``conj`` or ``real``, is kept). Found by ``scripts/opdb_coverage.py``, which measures clgrad against PyTorch's op database.
"""
from __future__ import annotations

import math
import sys
import types

import numpy as np

# torch name -> clgrad name, as functions (``clgrad.X``) and as methods (``Tensor.X`` and ``Tensor.X_``).
ALIASES = {
    "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2", "arccosh": "acosh",
    "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc", "negative": "neg", "absolute": "abs",
    "clip": "clamp", "multiply": "mul", "divide": "div", "subtract": "sub", "true_divide": "div",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "swapaxes": "transpose", "swapdims": "transpose", "moveaxis": "movedim", "ger": "outer",
    "concat": "cat", "concatenate": "cat", "row_stack": "vstack", "unsafe_chunk": "chunk",
    "unsafe_split": "split", "inverse": "linalg.inv", "det": "linalg.det", "matrix_exp": "linalg.matrix_exp",
    "orgqr": "linalg.householder_product", "special.psi": "digamma", "special.digamma": "digamma",
    "special.gammaln": "lgamma", "special.expit": "sigmoid", "special.multigammaln": "mvlgamma",
    "special.gammainc": "igamma", "special.gammaincc": "igammac",
}
# torch.special functions that are the top-level op of the same name.
SPECIAL_SAME = (
    "logit", "exp2", "expm1", "log1p", "erf", "erfc", "erfinv", "sinc", "round", "softmax", "log_softmax",
    "logsumexp", "i0", "polygamma", "xlogy", "ndtr", "entr", "xlog1py", "i0e", "i1", "i1e", "erfcx", "ndtri",
    "log_ndtr", "zeta",
)
METHOD_ONLY = ("arccos", "arcsin", "arctan", "arctan2", "arccosh", "arcsinh", "arctanh", "fix", "negative",
               "absolute", "clip", "multiply", "divide", "subtract", "true_divide", "greater", "greater_equal",
               "less", "less_equal", "not_equal", "swapaxes", "swapdims", "moveaxis", "ger", "inverse", "det",
               "matrix_exp", "orgqr", "unsafe_chunk", "unsafe_split")
# torch functions that are the Tensor method of the same name (``torch.resize_as_(x, y)``)
METHOD_FUNCS = ("resize_as_", "zero_", "fill_", "fill")
_LN2 = math.log(2.0)


def _is_float(x) -> bool:
    return x.dtype.is_floating_point


def _float(x, pkg):
    """``x`` itself when floating, else cast to the default dtype (torch's int -> float rule for unary math)."""
    return x if _is_float(x) else x.to(pkg.get_default_dtype())


def _make(pkg):
    """The composite functions, closed over the clgrad package (ops never import the package itself)."""
    def positive(input):
        """``input`` itself: ``clgrad.positive(x)``; a bool tensor is refused, as in torch."""
        if input.dtype == pkg.bool:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return input

    def identity(input):
        """The identity on clgrad's real tensors (torch's conj/resolve_conj/resolve_neg/real on real dtypes)."""
        return input

    def sgn(input):
        """``sign`` for real tensors: ``clgrad.sgn(x)``."""
        return pkg.sign(input)

    def deg2rad(input):
        """Degrees to radians: ``clgrad.deg2rad(x)``."""
        return _float(input, pkg) * (math.pi / 180.0)

    def rad2deg(input):
        """Radians to degrees: ``clgrad.rad2deg(x)``."""
        return _float(input, pkg) * (180.0 / math.pi)

    def angle(input):
        """The argument of a real number: pi where negative, 0 elsewhere, nan for nan: ``clgrad.angle(x)``."""
        x = _float(input, pkg)
        arg = pkg.where(x < 0, pkg.full_like(x, math.pi), pkg.zeros_like(x))
        return pkg.where(pkg.isnan(x), x, arg)

    def signbit(input):
        """True where the sign bit is set (``-0.0`` included): ``clgrad.signbit(x)``."""
        if input.dtype == pkg.bool:
            return pkg.zeros_like(input, dtype=pkg.bool)
        if not _is_float(input):
            return input < 0
        return pkg.copysign(pkg.ones_like(input), input) < 0

    def isposinf(input):
        """True where ``input`` is +inf: ``clgrad.isposinf(x)``."""
        return pkg.isinf(input) & (input > 0) if _is_float(input) else pkg.zeros_like(input, dtype=pkg.bool)

    def isneginf(input):
        """True where ``input`` is -inf: ``clgrad.isneginf(x)``."""
        return pkg.isinf(input) & (input < 0) if _is_float(input) else pkg.zeros_like(input, dtype=pkg.bool)

    def isreal(input):
        """All True: clgrad's tensors are real: ``clgrad.isreal(x)``."""
        return pkg.ones_like(input, dtype=pkg.bool)

    def imag(input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def sinc(input):
        """sin(pi x) / (pi x), 1 at 0: ``clgrad.sinc(x)``."""
        x = _float(input, pkg)
        safe = pkg.where(x == 0, pkg.ones_like(x), x) * math.pi
        return pkg.where(x == 0, pkg.ones_like(x), pkg.sin(safe) / safe)

    def logaddexp2(input, other):
        """log2(2**input + 2**other), without overflow: ``clgrad.logaddexp2(x, y)``."""
        return pkg.logaddexp(input * _LN2, other * _LN2) / _LN2

    def heaviside(input, values):
        """The Heaviside step: ``values`` where ``input`` is 0, else 1 or 0: ``clgrad.heaviside(x, v)``."""
        if input.dtype != values.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
        step = (input > 0).to(input.dtype)
        return pkg.where(input == 0, values, step)

    def float_power(input, exponent):
        """``input ** exponent`` computed in float64: ``clgrad.float_power(x, 2)``."""
        base = input.to(pkg.float64) if isinstance(input, pkg.Tensor) else float(input)
        exp = exponent.to(pkg.float64) if isinstance(exponent, pkg.Tensor) else float(exponent)
        if not isinstance(base, pkg.Tensor):
            base = pkg.tensor(base, dtype=pkg.float64, device=exp.device)
        return pkg.pow(base, exp)

    def ldexp(input, other):
        """``input * 2 ** other``: ``clgrad.ldexp(x, e)``."""
        return _float(input, pkg) * pkg.exp2(other.to(_float(input, pkg).dtype))

    def entr(input):
        """Elementwise entropy -x log x (0 at 0, -inf below): ``clgrad.special.entr(x)``."""
        x = _float(input, pkg)
        safe = pkg.where(x > 0, x, pkg.ones_like(x))
        val = pkg.where(x > 0, -x * pkg.log(safe), pkg.where(x == 0, 0.0, -math.inf).to(x.dtype))
        return pkg.where(pkg.isnan(x), x, val)

    def ndtr(input):
        """The standard normal CDF: ``clgrad.special.ndtr(x)``."""
        return 0.5 * pkg.erfc(_float(input, pkg) * -math.sqrt(0.5))

    def xlog1py(input, other):
        """x * log1p(y), 0 where x is 0 (unless y is nan): ``clgrad.special.xlog1py(x, y)``."""
        x, y = _pair(pkg, input, other)
        # torch's gradients: d/dx is log1p(y), except 0 where x == 0 and y <= -1; d/dy is x / (1 + y)
        mask = (x == 0) & ((y <= -1) | pkg.isinf(y))
        return x * pkg.log1p(pkg.where(mask, pkg.zeros_like(y), y))

    def nonzero_static(input, *, size, fill_value=-1):
        """``nonzero`` padded with ``fill_value`` or cut to ``size`` rows: ``clgrad.nonzero_static(x, size=4)``."""
        nz = pkg.nonzero(input)
        if nz.shape[0] >= size:
            return nz[:size]
        pad = pkg.full((size - nz.shape[0], nz.shape[1]), fill_value, dtype=nz.dtype, device=nz.device)
        return pkg.cat([nz, pad])

    return {k: v for k, v in locals().items() if callable(v) and k != "pkg"}


def _make_native(pkg):
    """ATen's native_* and backward entry points that op_db lists, composed from clgrad ops."""
    def _normalize(x, dims, eps):
        mean = x.mean(dims, keepdim=True)
        rstd = pkg.rsqrt(((x - mean) * (x - mean)).mean(dims, keepdim=True) + eps)
        return (x - mean) * rstd, mean, rstd

    def native_layer_norm(input, normalized_shape, weight, bias, eps):
        """(layer_norm, mean, rstd), the statistics kept over the normalized dims."""
        out, mean, rstd = _normalize(input, tuple(range(-len(normalized_shape), 0)), eps)
        out = out if weight is None else out * weight
        return (out if bias is None else out + bias), mean.detach(), rstd.detach()  # torch: no gradient through these

    def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
        """(group_norm, mean, rstd), the statistics of shape (N, group)."""
        out, mean, rstd = _normalize(input.reshape(N, group, -1), (-1,), eps)
        out = out.reshape(input.shape)
        per_channel = (1, C) + (1,) * (input.dim() - 2)
        out = out if weight is None else out * weight.reshape(per_channel)
        out = out if bias is None else out + bias.reshape(per_channel)
        return out, mean.reshape(N, group), rstd.reshape(N, group)

    def _softmax_backward_data(grad_output, output, dim, input_dtype):
        """The input gradient of softmax from its output."""
        grad = output * (grad_output - (grad_output * output).sum(dim, keepdim=True))
        return grad.to(input_dtype)

    def native_dropout_backward(grad_output, mask, scale):
        """grad_output * mask * scale."""
        return grad_output * mask.to(grad_output.dtype) * scale

    def _unsafe_masked_index(input, mask, indices, fill):
        """input[indices] where ``mask``, else ``fill``."""
        # masked-off positions may hold any index: clamp them into range, as ATen does
        safe = tuple(None if i is None else i.clamp(-input.shape[d], input.shape[d] - 1) for d, i in enumerate(indices))
        picked = input[safe]
        return pkg.where(mask, picked, pkg.full_like(picked, fill))

    return {k: v for k, v in locals().items() if not k.startswith("_n") and k != "pkg"}


def _pair(pkg, a, b):
    """Two operands as float tensors on one device (either may be a Python number)."""
    like = a if isinstance(a, pkg.Tensor) else b
    dt = like.dtype if _is_float(like) else pkg.get_default_dtype()
    a = a.to(dt) if isinstance(a, pkg.Tensor) and not _is_float(a) else a
    b = b.to(dt) if isinstance(b, pkg.Tensor) and not _is_float(b) else b
    a = a if isinstance(a, pkg.Tensor) else pkg.full_like(b, a, dtype=b.dtype)
    b = b if isinstance(b, pkg.Tensor) else pkg.full_like(a, b, dtype=a.dtype)
    return a, b


def _lookup(pkg, dotted):
    obj = pkg
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _namespace(pkg, dotted):
    """The module ``clgrad.<dotted>``, created empty (and registered in sys.modules) when missing."""
    obj = pkg
    for part in dotted.split("."):
        child = getattr(obj, part, None)
        if child is None:
            child = types.ModuleType(f"{obj.__name__}.{part}", f"PyTorch's torch.{dotted} names in clgrad.")
            sys.modules[child.__name__] = child
            setattr(obj, part, child)
        obj = child
    return obj


def _put(pkg, dotted, fn) -> None:
    head, _, name = dotted.rpartition(".")
    space = _namespace(pkg, head) if head else pkg
    if getattr(space, name, None) is None and fn is not None:
        setattr(space, name, fn)


def _install_methods(pkg, funcs) -> None:
    T = pkg.Tensor
    for alias in METHOD_ONLY:
        target = ALIASES[alias]
        if "." in target:
            fn = _lookup(pkg, target)
            if fn is not None and not hasattr(T, alias):
                setattr(T, alias, fn)
            continue
        for suffix in ("", "_"):
            if not hasattr(T, alias + suffix) and hasattr(T, target + suffix):
                setattr(T, alias + suffix, getattr(T, target + suffix))
    for name in ("positive", "sgn", "deg2rad", "rad2deg", "angle", "signbit", "isposinf", "isneginf", "isreal",
                 "sinc", "logaddexp2", "heaviside", "float_power", "ldexp"):
        if not hasattr(T, name):
            setattr(T, name, funcs[name])
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg"):
        if not hasattr(T, name):
            setattr(T, name, funcs["identity"])
    if not hasattr(T, "real"):
        T.real = property(funcs["identity"])
    if not hasattr(T, "imag"):
        T.imag = property(funcs["imag"])
    if not hasattr(T, "__rdiv__"):
        T.__rdiv__ = T.__rtruediv__
    if not hasattr(T, "new_empty_strided") and hasattr(pkg, "empty_strided"):
        T.new_empty_strided = _new_empty_strided(pkg)


def _new_empty_strided(pkg):
    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, **kwargs):
        """An uninitialized tensor with ``self``'s dtype and device by default."""
        return pkg.empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                                 requires_grad=requires_grad)
    return new_empty_strided


def install(pkg) -> None:
    """Add the missing alias names and composites to the clgrad package ``pkg``, its namespaces and Tensor."""
    funcs = _make(pkg)
    for alias, target in ALIASES.items():
        _put(pkg, alias, _lookup(pkg, target))
    for name in ("positive", "sgn", "deg2rad", "rad2deg", "angle", "signbit", "isposinf", "isneginf", "isreal",
                 "sinc", "logaddexp2", "heaviside", "float_power", "ldexp", "imag", "nonzero_static"):
        _put(pkg, name, funcs[name])
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg", "real"):
        _put(pkg, name, funcs["identity"])
    for name in ("entr", "ndtr", "xlog1py"):
        _put(pkg, "special." + name, funcs[name])
    for name in SPECIAL_SAME:
        _put(pkg, "special." + name, _lookup(pkg, name))
    for name, fn in _make_native(pkg).items():
        _put(pkg, name, fn)
    for name in METHOD_FUNCS:
        _put(pkg, name, getattr(pkg.Tensor, name, None))
    _put(pkg, "linalg.diagonal", _linalg_diagonal(pkg))
    _install_methods(pkg, funcs)
    _install_functional(pkg)
    _install_windows(pkg)


def _linalg_diagonal(pkg):
    def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
        """The diagonals of a batch of matrices: ``clgrad.linalg.diagonal(A)``."""
        return pkg.diagonal(A, offset=offset, dim1=dim1, dim2=dim2)
    return diagonal


def _install_functional(pkg) -> None:
    F = pkg.nn.functional

    def upsample_nearest(input, size=None, scale_factor=None):
        """Deprecated in torch: ``interpolate(mode='nearest')``."""
        return F.interpolate(input, size, scale_factor, mode="nearest")

    def upsample_bilinear(input, size=None, scale_factor=None):
        """Deprecated in torch: ``interpolate(mode='bilinear', align_corners=True)``."""
        return F.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)

    def rms_norm(input, normalized_shape, weight=None, eps=None):
        """x / sqrt(mean(x**2) + eps) over the trailing ``normalized_shape`` dims, times ``weight``."""
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if tuple(input.shape[input.dim() - len(shape):]) != shape or len(shape) > input.dim():
            raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                               f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
        eps = float(np.finfo(input.dtype.np).eps) if eps is None else eps
        dims = tuple(range(-len(shape), 0))
        out = input * pkg.rsqrt((input * input).mean(dims, keepdim=True) + eps)
        return out if weight is None else out * weight

    _put(pkg, "nn.functional.rms_norm", rms_norm)
    _put(pkg, "nn.functional.upsample_nearest", upsample_nearest)
    _put(pkg, "nn.functional.upsample_bilinear", upsample_bilinear)


# ---- torch.signal.windows: computed in float64 numpy, returned as a tensor of the requested dtype ----

def _window(pkg, fn):
    def window(M, *args, sym=True, dtype=None, layout=None, device=None, requires_grad=False, **kwargs):
        if M < 0:
            raise ValueError(f"{fn.__name__} requires non-negative window length, got M={M}")
        n = M + (0 if sym or M <= 1 else 1)
        values = fn(n, *args, **kwargs)[:M] if M > 1 else np.ones(M)
        return pkg.tensor(values, dtype=dtype or pkg.get_default_dtype(), device=device,
                          requires_grad=requires_grad)
    window.__name__ = fn.__name__
    window.__doc__ = f"torch.signal.windows.{fn.__name__}: ``clgrad.signal.windows.{fn.__name__}(8)``."
    return window


def general_cosine(n, *, a):
    k = np.arange(n)
    return sum((-1) ** i * c * np.cos(2 * math.pi * i * k / (n - 1)) for i, c in enumerate(a))


def general_hamming(n, *, alpha=0.54):
    return general_cosine(n, a=[alpha, 1.0 - alpha])


def hamming(n):
    return general_hamming(n, alpha=0.54)


def hann(n):
    return general_hamming(n, alpha=0.5)


def blackman(n):
    return general_cosine(n, a=[0.42, 0.5, 0.08])


def nuttall(n):
    return general_cosine(n, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411])


def bartlett(n):
    k = np.arange(n)
    return 1 - np.abs(2 * k / (n - 1) - 1)


def cosine(n):
    return np.sin(math.pi * (np.arange(n) + 0.5) / n)


def gaussian(n, *, std=1.0):
    k = np.arange(n) - (n - 1) / 2
    return np.exp(-(k ** 2) / (2 * std ** 2))


def exponential(n, *, center=None, tau=1.0):
    center = (n - 1) / 2 if center is None else center
    return np.exp(-np.abs(np.arange(n) - center) / tau)


def kaiser(n, *, beta=12.0):
    k = np.arange(n)
    return np.i0(beta * np.sqrt(1 - (2 * k / (n - 1) - 1) ** 2)) / np.i0(beta)


def _install_windows(pkg) -> None:
    for fn in (bartlett, blackman, cosine, exponential, gaussian, general_cosine, general_hamming, hamming,
               hann, kaiser, nuttall):
        _put(pkg, "signal.windows." + fn.__name__, _window(pkg, fn))
