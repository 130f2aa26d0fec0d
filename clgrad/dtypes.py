"""Dtypes, type promotion (identical to ``torch.result_type``) and their numpy / OpenCL C names."""
from __future__ import annotations

import builtins
import sys

import numpy as np


class dtype:
    """A tensor element type. Instances are singletons such as ``clgrad.float32``."""

    __slots__ = ("name", "np", "ctype", "kind", "itemsize")

    def __init__(self, name: str, np_dtype, ctype: str, kind: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.ctype = ctype  # OpenCL C storage type
        self.kind = kind  # 'b' bool, 'u' unsigned int, 'i' signed int, 'f' float
        self.itemsize = self.np.itemsize

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    @property
    def is_complex(self) -> bool:
        return False

    @property
    def compute_ctype(self) -> str:
        """The C type arithmetic happens in: half and bfloat16 are stored in 16 bits but computed in float."""
        return "float" if self.ctype in ("half", "bfloat16") else self.ctype

    @property
    def scalar_name(self) -> str:
        """PyTorch's ScalarType name ('Float', 'Long'), the one its error messages use."""
        return _SCALAR_NAMES[self.name]

    @property
    def cpp_name(self) -> str:
        """The C++ type name some of PyTorch's messages use ('float', 'signed char', 'c10::Half')."""
        return _CPP_NAMES[self.name]

    @property
    def c_int_name(self) -> str:
        """The fixed-width C name of an integer dtype ('int8_t'), as PyTorch's overflow messages write it."""
        return f"{self.name}_t"

    @property
    def tensor_type_name(self) -> str:
        """The legacy tensor type name ('FloatTensor')."""
        return _SCALAR_NAMES[self.name] + "Tensor"

    def __repr__(self) -> str:
        return f"clgrad.{self.name}"

    def __reduce__(self):
        return self.name


bool = dtype("bool", np.bool_, "uchar", "b")  # noqa: A001 - mirrors torch.bool
uint8 = dtype("uint8", np.uint8, "uchar", "u")
int8 = dtype("int8", np.int8, "char", "i")
int16 = dtype("int16", np.int16, "short", "i")
int32 = dtype("int32", np.int32, "int", "i")
int64 = dtype("int64", np.int64, "long", "i")
float16 = dtype("float16", np.float16, "half", "f")
float32 = dtype("float32", np.float32, "float", "f")
float64 = dtype("float64", np.float64, "double", "f")


class _LazyNumpy(dtype):
    """A dtype whose numpy type comes from a module imported on first use: ``np`` resolves it (importing
    ml_dtypes took 0.45 s, half of ``import clgrad``, for a type most programs never touch)."""

    __slots__ = ("_np", "_module", "_attr")

    def __init__(self, name: str, module: str, attr: str, ctype: str, kind: str, itemsize: int):
        self.name, self.ctype, self.kind, self.itemsize = name, ctype, kind, itemsize
        self._np, self._module, self._attr = None, module, attr

    @property
    def np(self):
        if self._np is None:
            import importlib

            self._np = np.dtype(getattr(importlib.import_module(self._module), self._attr))
            _BY_NP[self._np] = self
            _on_resolve(self._np)
        return self._np


_RESOLVE_HOOKS: list = []  # called with a lazily resolved numpy dtype (backends/common.py adds its scalar type)


def _on_resolve(npd) -> None:
    for hook in _RESOLVE_HOOKS:
        hook(npd)


# bfloat16: numpy's type from ml_dtypes (imported on first use); in OpenCL C a ushort of the float's upper 16 bits
# (the ctype name "bfloat16" is kernels/prelude.cl.mako's: ``#define bfloat16 ushort``, load/store convert),
# computed in float
bfloat16 = _LazyNumpy("bfloat16", "ml_dtypes", "bfloat16", "bfloat16", "f", 2)
#: the 16-bit floats: stored in 16 bits, computed (and accumulated) in float32
HALF_FLOATS = (float16, bfloat16)

ALL = (bool, uint8, int8, int16, int32, int64, float16, float32, float64, bfloat16)
ALIASES = {
    "float": float32, "double": float64, "half": float16, "long": int64,
    "int": int32, "short": int16, "bool_": bool,
}
_BY_NAME = {d.name: d for d in ALL} | ALIASES
_SCALAR_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
    "float16": "Half", "float32": "Float", "float64": "Double",
    "bfloat16": "BFloat16",
}
_CPP_NAMES = {
    "bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
    "int64": "long int", "float16": "c10::Half", "float32": "float", "float64": "double",
    "bfloat16": "c10::BFloat16",
}
_BY_NP = {d.np: d for d in ALL if not isinstance(d, _LazyNumpy)}


def _by_np(npd) -> dtype:
    """The dtype of numpy dtype ``npd``; a lazily imported one (bfloat16) is resolved when its module is loaded."""
    found = _BY_NP.get(npd)
    if found is None and "ml_dtypes" in sys.modules and getattr(npd, "name", None) == "bfloat16":
        found = bfloat16 if bfloat16.np == npd else None
    if found is None:
        raise KeyError(npd)
    return found

_default_float = float32


# ---- complex dtypes: interleaved (re, im) pairs of a real dtype, stored in a storage of that real dtype ----------
class _Complex(dtype):
    """``complex64``/``complex128``: a pair of ``real`` values per element. Ops compose complex arithmetic from
    real ops on the pair view (``ops/complex.py``); backends never see a complex descriptor."""

    __slots__ = ("real",)

    def __init__(self, name: str, np_dtype, real: dtype):
        self.name, self.np, self.kind, self.real = name, np.dtype(np_dtype), "c", real
        self.itemsize = self.np.itemsize

    @property
    def ctype(self) -> str:
        """No kernel takes complex operands: a backend asking for a complex C type is an op without a complex
        composition that got past the ops layer's guards. Raise PyTorch's error instead of building a kernel."""
        op = sys._getframe(1).f_code.co_name
        raise NotImplementedError(f"\"{op}\" not implemented for '{_SCALAR_NAMES[self.name]}' (dtype {self.name}): "
                                  "clgrad composes complex ops from real ones, and this one has no composition")

    @property
    def is_complex(self) -> bool:
        return True

    @property
    def is_signed(self) -> bool:
        return True


complex64 = _Complex("complex64", np.complex64, float32)
complex128 = _Complex("complex128", np.complex128, float64)
COMPLEX = (complex64, complex128)
_BY_NAME.update({"complex64": complex64, "complex128": complex128, "cfloat": complex64, "cdouble": complex128})
_BY_NP.update({complex64.np: complex64, complex128.np: complex128})
_SCALAR_NAMES.update(complex64="ComplexFloat", complex128="ComplexDouble")
_CPP_NAMES.update(complex64="c10::complex<float>", complex128="c10::complex<double>")
_UNSUPPORTED = {"complex32": "complex32", "chalf": "complex32"}


def complex_of(d: dtype) -> dtype:
    """The complex dtype with ``d``'s precision (float64 -> complex128, anything else -> complex64: clgrad has
    no complex32, so float16 goes to complex64 where PyTorch gives complex32)."""
    if d.kind == "c":
        return d
    return complex128 if d is float64 else complex64


def _complex_promote(a: dtype, b: dtype) -> dtype:
    """torch.promote_types with a complex operand: complex wins, with the wider precision of the two."""
    wide = any(d in (float64, complex128) for d in (a, b))
    return complex128 if wide else complex64


def _check_supported(d) -> None:
    if isinstance(d, str) and d in _UNSUPPORTED:
        raise TypeError(f"{d} (complex32) is not supported by clgrad: use complex64 (clgrad.cfloat)")


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the dtype of float tensors created from Python floats, e.g. ``set_default_dtype(clgrad.float64)``."""
    global _default_float
    d = as_dtype(d)
    if d not in (float16, float32, float64, bfloat16):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def as_dtype(d) -> dtype:
    """Accept a clgrad dtype, a name such as 'float32', a numpy dtype or a Python type."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if d is float:
        return _default_float
    if d is int:
        return int64
    if d is builtins.bool:
        return bool
    if d is complex:
        return complex_of(_default_float)
    _check_supported(d)
    if d is None:  # np.dtype(None) would silently mean float64
        raise TypeError("unsupported dtype None; use one of " + ", ".join(x.name for x in ALL))
    try:
        return _by_np(np.dtype(d))
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype {d!r}; use one of {', '.join(x.name for x in ALL)}") from None


def from_numpy_dtype(npd) -> dtype:
    npd = np.dtype(npd)
    try:
        return _by_np(npd)
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {npd}. The only supported types are: "
            + ", ".join(x.np.name for x in (*ALL, *COMPLEX))
        ) from None


_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to safely, as ``torch.promote_types``."""
    a, b = type1, type2
    for pos, d in ((1, a), (2, b)):
        if not isinstance(d, dtype):
            raise TypeError(f"promote_types(): argument 'type{pos}' (position {pos}) must be clgrad.dtype, not {type(d).__name__}")
    if a is b:
        return a
    if "c" in (a.kind, b.kind):
        return _complex_promote(a, b)
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.kind == "f" and b.kind != "f":
        return a
    if b.kind == "f" and a.kind != "f":
        return b
    if bfloat16 in (a, b):  # bfloat16 and float16 meet in float32; a wider float wins
        other = b if a is bfloat16 else a
        return float32 if other is float16 else other
    return _by_np(np.promote_types(a.np, b.np))


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # torch's combine_categories: a lower-priority operand only wins if it is of a higher category.
    if higher is None:
        return lower
    if lower is not None and lower.kind == "c" and higher.kind != "c":
        # torch: a complex lower group keeps a float higher group's precision (float64 tensor * 1j -> complex128)
        return complex_of(higher) if higher.kind == "f" else lower
    if lower is None or higher.kind in "fc":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return promote_types(higher, lower)
    return higher


def scalar_dtype(x) -> dtype:
    """The dtype a Python scalar takes part in promotion as (a 'wrapped number' in torch)."""
    if isinstance(x, (builtins.bool, np.bool_)):
        return bool
    if isinstance(x, (int, np.integer)):
        return int64
    if isinstance(x, (float, np.floating)):
        return _default_float
    if isinstance(x, (complex, np.complexfloating)):
        return complex_of(_default_float)
    raise TypeError(f"unsupported scalar type {type(x).__name__}")


def result_type(*operands) -> dtype:
    """Promotion of tensors and Python scalars exactly as ``torch.result_type``.

    Tensors with dimensions outrank 0-dim tensors, which outrank Python scalars, unless a lower
    group holds a higher category (bool < integer < float).
    """
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            if x.dim() > 0:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


def float_of(d: dtype) -> dtype:
    """The dtype an op that needs floats (true division, sqrt, mean) computes an input of dtype ``d`` in."""
    return d if d.kind == "f" else _default_float
