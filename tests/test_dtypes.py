"""Dtypes and type promotion: ``result_type``/``promote_types`` against PyTorch over every pair of dtypes."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import clgrad
from clgrad import dtypes as D
from tests.conftest import fp64_ok

NAMES = [d.name for d in D.ALL]
PAIRS = list(itertools.product(NAMES, NAMES))
SCALARS = [3, -2, 2.5, True, False]


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def default_dtype():
    """Restores the default float dtype after a test changes it."""
    saved = clgrad.get_default_dtype()
    yield
    clgrad.set_default_dtype(saved)


def _pair(torch, name, shape):
    """The same zero tensor in clgrad and torch."""
    return clgrad.zeros(shape, dtype=getattr(clgrad, name)), torch.zeros(shape, dtype=getattr(torch, name))


def _name(torch_dtype) -> str:
    return str(torch_dtype).split(".")[1]


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types(torch, a, b):
    got = clgrad.promote_types(getattr(clgrad, a), getattr(clgrad, b))
    assert got.name == _name(torch.promote_types(getattr(torch, a), getattr(torch, b)))


# (shape of the first operand, shape of the second): dimensioned tensors outrank 0-dim tensors
SHAPES = {"tensor-tensor": ((2,), (2,)), "tensor-0dim": ((2,), ()), "0dim-tensor": ((), (2,)), "0dim-0dim": ((), ())}


@pytest.mark.parametrize("kind", list(SHAPES))
def test_result_type_tensors(torch, kind):
    sa, sb = SHAPES[kind]
    for a, b in PAIRS:
        (xa, ta), (xb, tb) = _pair(torch, a, sa), _pair(torch, b, sb)
        assert clgrad.result_type(xa, xb).name == _name(torch.result_type(ta, tb)), (kind, a, b)


@pytest.mark.parametrize("shape", [(2,), ()], ids=["tensor", "0dim"])
def test_result_type_python_scalars(torch, shape):
    for name, s in itertools.product(NAMES, SCALARS):
        x, t = _pair(torch, name, shape)
        expected = _name(torch.result_type(t, s))
        assert clgrad.result_type(x, s).name == expected, (name, s)
        assert clgrad.result_type(s, x).name == _name(torch.result_type(s, t)), (s, name)


def test_result_type_of_two_scalars(torch):
    for a, b in itertools.product(SCALARS, SCALARS):
        assert clgrad.result_type(a, b).name == _name(torch.result_type(a, b)), (a, b)


def test_result_type_many_operands():
    # the n-ary form used by where/clamp: each group (dim, 0-dim, scalar) is promoted, then combined
    t8, t16 = clgrad.zeros(2, dtype=clgrad.int8), clgrad.zeros(2, dtype=clgrad.int16)
    f64, i64, b = (clgrad.zeros((), dtype=d) for d in (clgrad.float64, clgrad.int64, clgrad.bool))
    assert D.result_type(t8, t16, f64, 1) is clgrad.float64
    assert D.result_type(t8, i64, 7, True) is clgrad.int8
    assert D.result_type(b, 2.5, 1) is clgrad.float32
    assert D.result_type(b, True) is clgrad.bool


def test_aliases_match_torch(torch):
    for alias in ("float", "double", "half", "long", "int", "short"):
        assert getattr(clgrad, alias).name == _name(getattr(torch, alias)), alias
    assert clgrad.float is clgrad.float32 and clgrad.long is clgrad.int64


@pytest.mark.parametrize(
    "spec,expected",
    [("float32", "float32"), ("double", "float64"), ("half", "float16"), ("long", "int64"), ("int", "int32"),
     ("short", "int16"), (np.uint8, "uint8"), (np.dtype("int8"), "int8"), ("bool", "bool"), (bool, "bool"),
     (int, "int64"), (float, "float32"), (clgrad.float16, "float16")],
)
def test_as_dtype(spec, expected):
    assert D.as_dtype(spec).name == expected


@pytest.mark.parametrize("bad", ["float128", "complex256", np.clongdouble, None, object(), "cuda", 3])
def test_as_dtype_errors(bad):
    with pytest.raises(TypeError, match="unsupported dtype"):
        D.as_dtype(bad)


def test_from_numpy_dtype_error():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type complex256"):
        D.from_numpy_dtype(np.clongdouble)


def test_promote_types_rejects_non_dtypes():
    with pytest.raises(TypeError, match="argument 'type2' .* must be clgrad.dtype, not int"):
        clgrad.promote_types(clgrad.uint8, 1)


def test_dtype_properties():
    assert [d.kind for d in D.ALL] == ["b", "u", "i", "i", "i", "i", "f", "f", "f", "f"]
    assert [d.itemsize for d in D.ALL] == [1, 1, 1, 2, 4, 8, 2, 4, 8, 2]
    assert clgrad.float16.compute_ctype == "float" and clgrad.float16.ctype == "half"
    assert clgrad.int64.scalar_name == "Long" and clgrad.uint8.scalar_name == "Byte"
    assert clgrad.float32.is_floating_point and not clgrad.int8.is_floating_point
    assert clgrad.int8.is_signed and not clgrad.uint8.is_signed and not clgrad.bool.is_complex
    assert repr(clgrad.float32) == "clgrad.float32"


@pytest.mark.parametrize("default", ["float64", "float16", "float32"])
def test_set_default_dtype(default_dtype, default, device):
    if default == "float64" and not fp64_ok(device):
        pytest.skip("the device lacks cl_khr_fp64")
    dt = getattr(clgrad, default)
    clgrad.set_default_dtype(dt)
    assert clgrad.get_default_dtype() is dt
    ints = clgrad.tensor([1, 2, 3], device=device)
    half = ints / 2  # true division of integers gives the default float
    assert half.dtype is dt and half.device == clgrad.device(device)
    assert half.tolist() == [0.5, 1.0, 1.5]
    assert ints.sqrt().dtype is dt
    assert (ints * 2.5).dtype is dt  # a float scalar takes the default dtype
    assert clgrad.result_type(ints, 2.5) is dt
    assert clgrad.tensor([1.5]).dtype is dt
    # a float tensor keeps its own dtype next to a float scalar
    assert (clgrad.tensor([1.0], dtype=clgrad.float32) * 2.5).dtype is clgrad.float32


def test_set_default_dtype_rejects_integers(default_dtype):
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        clgrad.set_default_dtype(clgrad.int32)
    assert clgrad.get_default_dtype() is clgrad.float32


def test_default_dtype_against_torch(torch, default_dtype):
    saved = torch.get_default_dtype()
    try:
        for name in ("float64", "float16"):
            clgrad.set_default_dtype(getattr(clgrad, name))
            torch.set_default_dtype(getattr(torch, name))
            for a, s in itertools.product(NAMES, SCALARS):
                x, t = _pair(torch, a, (2,))
                assert clgrad.result_type(x, s).name == _name(torch.result_type(t, s)), (name, a, s)
    finally:
        torch.set_default_dtype(saved)


def test_promote_types_keywords():
    """torch.promote_types(type1=, type2=)."""
    assert clgrad.promote_types(type1=clgrad.int32, type2=clgrad.float16) is clgrad.float16


def test_ml_dtypes_is_imported_on_first_bfloat16_use():
    """``import clgrad`` leaves ml_dtypes (0.45 s of import) for the first bfloat16 use; then bfloat16 tensors, numpy
    bfloat16 arrays and scalars work as before, whichever of clgrad and ml_dtypes a program imports first."""
    import subprocess
    import sys

    code = """
import sys, numpy as np, clgrad
assert "ml_dtypes" not in sys.modules
t = clgrad.ones(3, dtype=clgrad.bfloat16) * 2
assert "ml_dtypes" in sys.modules and t.dtype is clgrad.bfloat16 and t.float().tolist() == [2.0] * 3
import ml_dtypes
a = np.ones(2, dtype=ml_dtypes.bfloat16)
assert clgrad.from_numpy(a).dtype is clgrad.bfloat16 and clgrad.tensor(a).dtype is clgrad.bfloat16
from clgrad.backends import common
assert common.is_scalar(a[0])
assert clgrad.finfo(clgrad.bfloat16).eps == 2 ** -7
"""
    first = """
import ml_dtypes, numpy as np, clgrad
from clgrad.backends import common
assert common.is_scalar(np.ones(1, dtype=ml_dtypes.bfloat16)[0])
assert clgrad.as_tensor(np.ones(1, dtype=ml_dtypes.bfloat16)).dtype is clgrad.bfloat16
"""
    for src in (code, first):
        proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
