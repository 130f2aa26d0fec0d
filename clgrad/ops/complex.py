"""Complex tensors: ``view_as_real``/``view_as_complex``, ``real``/``imag``, ``complex``, ``polar``, and complex
arithmetic composed from REAL ops on the (re, im) pair view.

A complex tensor's storage is a real storage of interleaved (re, im) pairs (as numpy and PyTorch lay it out); its
shape, strides and offset count complex elements. ``view_as_real`` is a zero-copy, differentiable view
([..] complex -> [.., 2] real: strides doubled, last stride 1). Every complex op here is written in real clgrad
ops on such views, so it runs on every device without a kernel and autograd comes for free; the gradient of a
real loss with respect to z = x + iy is then dL/dx + i dL/dy, PyTorch's convention. No backend ever sees a complex
descriptor: ``pointwise.complex_op``, ``reduction._run``, ``linalg._product`` and the backends' ``view_of`` /
``Launcher.dev`` raise PyTorch's ``"<op>" not implemented for 'ComplexFloat'`` for ops without a composition.

``conj()`` is eager here (a copy with the imaginary part negated; PyTorch sets a lazy conj bit): ``is_conj()``
is True on its result and ``resolve_conj()`` clears it, so both report PyTorch's values.
"""
from __future__ import annotations

import builtins
import math

from .. import dtypes as D
from ..autograd.function import Function
from ..autograd.graph import needs_graph
from ..tensor import Tensor, is_tensor
from . import pointwise as P
from .joins import stack
from .math import where as _where
from .views import broadcast_shapes

__all__ = ["view_as_real", "view_as_complex", "real", "imag", "complex", "polar", "is_complex", "conj",
           "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "sgn", "angle", "isreal"]


# ---- the two views ------------------------------------------------------------------------------------------
def _as_view(out: Tensor, of: Tensor) -> Tensor:
    out._base = of._base if of._base is not None else of
    return out


def _pairs_of(z: Tensor) -> Tensor:
    return _as_view(z._pairs(), z)


def _complex_of(r: Tensor) -> Tensor:
    dt = D.complex_of(r.dtype)
    t = Tensor._make(r._storage, dt, r._shape[:-1], tuple(s // 2 for s in r._strides[:-1]), r._offset // 2)
    return _as_view(t, r)


class ViewAsReal(Function):
    node_name = "ViewAsRealBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, z):
        return _pairs_of(z)

    @staticmethod
    def backward(ctx, grad):
        return view_as_complex(grad.contiguous())


class ViewAsComplex(Function):
    node_name = "ViewAsComplexBackward0"
    is_view = True

    @staticmethod
    def forward(ctx, r):
        return _complex_of(r)

    @staticmethod
    def backward(ctx, grad):
        return view_as_real(grad)


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor's values as a real [..., 2] view (re, im) of the same memory (differentiable).

    >>> clgrad.view_as_real(clgrad.tensor([1 + 2j]))  # tensor([[1., 2.]])
    """
    if not is_tensor(input) or input.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input) if needs_graph(input) else _pairs_of(input)


def view_as_complex(input: Tensor) -> Tensor:
    """A real [..., 2] tensor's pairs as a complex view of the same memory (differentiable).

    >>> clgrad.view_as_complex(clgrad.tensor([[1.0, 2.0]]))  # tensor([1.+2.j])
    """
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {input.dtype.scalar_name}")
    if input.dim() == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input._strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in input._strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return ViewAsComplex.apply(input) if needs_graph(input) else _complex_of(input)


def real(input: Tensor) -> Tensor:
    """The real part, a view (writable) of a complex tensor; a real tensor itself."""
    return view_as_real(input).select(-1, 0) if input.dtype.kind == "c" else input


def imag(input: Tensor) -> Tensor:
    """The imaginary part, a view (writable) of a complex tensor."""
    if input.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_as_real(input).select(-1, 1)


def is_complex(input: Tensor) -> bool:
    return input.dtype.is_complex


# ---- building complex tensors from real parts ----------------------------------------------------------------
def _join(re, im) -> Tensor:
    """The complex tensor re + i im (tensors of one real dtype, or numbers beside a tensor), differentiable."""
    if not is_tensor(re):
        re = im.new_full(im.shape, re) if is_tensor(im) else re
    if im is None or not is_tensor(im):
        im = re.new_full(re.shape, 0.0 if im is None else im)
    if re.shape != im.shape:
        re, im = re.broadcast_to(_bshape(re, im)), im.broadcast_to(_bshape(re, im))
    return view_as_complex(stack([re, im], -1))


def _bshape(a, b):
    return broadcast_shapes(a.shape, b.shape)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - torch's name
    """``real + i imag`` from two float tensors of one dtype: ``clgrad.complex(x, y)``."""
    for t in (real, imag):
        if t.dtype not in (D.float32, D.float64, D.float16):
            raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                               f"{real.dtype.scalar_name} and {imag.dtype.scalar_name}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype.scalar_name} but got scalar type "
                           f"{imag.dtype.scalar_name} for second argument")
    if real.dtype is D.float16:
        raise TypeError("complex32 is not supported by clgrad: use float32 parts (complex64)")
    return _join(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """``abs * (cos(angle) + i sin(angle))``: ``clgrad.polar(r, theta)``."""
    complex(abs, angle)  # torch's dtype checks
    return _join(abs * angle.cos(), abs * angle.sin())


# ---- conjugation ----------------------------------------------------------------------------------------------
def conj(input: Tensor) -> Tensor:
    """The complex conjugate (eager copy here; PyTorch's is a lazy view); a real tensor itself."""
    if input.dtype.kind != "c":
        return input
    out = conj_physical(input)
    out._conj = not is_conj(input)  # conj twice is the identity, and torch's bit is off again
    return out


def conj_physical(input: Tensor) -> Tensor:
    if input.dtype.kind != "c":
        return input
    re, im = _parts(input, input.dtype.real)
    return _join(re, -im)


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` without the conj flag: the values are already conjugated (conj is eager), so a clone."""
    return input.clone() if is_conj(input) else input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself: clgrad has no lazy negation bit (``is_neg()`` is always False)."""
    return input


def is_conj(input: Tensor) -> bool:
    return bool(input.__dict__.get("_conj", False))


def is_neg(input: Tensor) -> bool:
    return False


# ---- operands as (re, im) parts ---------------------------------------------------------------------------------
def _parts(x, rdt: D.dtype):
    """(re, im) of an operand in real dtype ``rdt``: tensors (im None for a real one) or Python numbers."""
    if isinstance(x, builtins.complex):
        return x.real, x.imag
    if not is_tensor(x):
        return x, None
    if x.dtype.kind != "c":
        return (x if x.dtype is rdt else x.to(rdt)), None
    r = view_as_real(x)
    if r.dtype is not rdt:
        r = r.to(rdt)
    return r.select(-1, 0), r.select(-1, 1)


def _real_dtype(*operands) -> D.dtype:
    return D.complex_of(D.result_type(*operands)).real


def _out(result: Tensor, out):
    """Write ``result`` into ``out`` where one was given (in-place ops and ``out=``)."""
    if out is None:
        return result
    return out.copy_(result)


# ---- functions that are real ops on real tensors ----------------------------------------------------------------
def sgn(input: Tensor) -> Tensor:
    """z / |z| (0 at 0) for complex tensors, ``sign`` for real ones."""
    return P.complex_op("sgn", (input,)) if input.dtype.kind == "c" else input.sign()


def angle(input: Tensor) -> Tensor:
    """The argument atan2(im, re); for real tensors pi where negative, 0 elsewhere, nan for nan."""
    if input.dtype.kind == "c":
        return P.complex_op("angle", (input,))
    x = input if input.dtype.kind == "f" else input.to(D.get_default_dtype())
    return _where(x.isnan(), x, (x < 0).to(x.dtype) * math.pi)


def isreal(input: Tensor) -> Tensor:
    """True where the imaginary part is 0 (everywhere for real tensors)."""
    if input.dtype.kind == "c":
        return imag(input) == 0
    return input.new_ones(input.shape, dtype=D.bool)


# ---- Tensor methods ----------------------------------------------------------------------------------------------
def _set_part(part):
    """``z.real = value`` / ``z.imag = value``: a write through the part's view, as in torch."""
    def setter(self, value):
        if is_tensor(value):
            part(self).copy_(value)
        else:
            part(self).fill_(value)
    return setter


def _to(dt):
    def method(self, memory_format=None):
        if dt is None:
            raise TypeError("complex32 (chalf) is not supported by clgrad: use cfloat (complex64)")
        return self.to(dt)
    return method


def install(T) -> None:
    """Attach the complex methods and properties to Tensor (real tensors keep their behaviour)."""
    T.real = property(real, _set_part(real))
    T.imag = property(imag, _set_part(imag))
    for fn in (conj, conj_physical, resolve_conj, resolve_neg, is_conj, is_neg, sgn, angle, isreal):
        setattr(T, fn.__name__, fn)
    T.conj_physical_ = lambda self: self.copy_(conj_physical(self))
    T.cfloat, T.cdouble, T.chalf = _to(D.complex64), _to(D.complex128), _to(None)
    T.__complex__ = lambda self: builtins.complex(self.item())
    for name in ("mH", "H"):
        original = T.__dict__[name]
        setattr(T, name, property(lambda self, o=original: _conj_if(self, o.fget(self))))
    adjoint = T.__dict__["adjoint"]
    T.adjoint = lambda self, o=adjoint: _conj_if(self, o(self))


def _conj_if(self, t):
    return conj(t) if self.dtype.kind == "c" else t
