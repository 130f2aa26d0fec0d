"""clgrad.finfo / clgrad.iinfo against torch's: every attribute, the repr and the errors."""
from __future__ import annotations

import pytest

import clgrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo_matches_torch(name):
    a, b = clgrad.finfo(getattr(clgrad, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert repr(a) == repr(b)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    a, b = clgrad.iinfo(getattr(clgrad, name)), torch.iinfo(getattr(torch, name))
    assert (a.bits, a.max, a.min, a.dtype, repr(a)) == (b.bits, b.max, b.min, b.dtype, repr(b))


def test_defaults_and_errors():
    assert clgrad.finfo().dtype == "float32"
    for make, arg in ((clgrad.finfo, clgrad.int32), (clgrad.iinfo, clgrad.float32), (clgrad.iinfo, clgrad.bool)):
        torch_arg = getattr(torch, arg.name)
        with pytest.raises(TypeError) as want:
            getattr(torch, make.__name__)(torch_arg)
        with pytest.raises(TypeError, match=str(want.value).replace("(", r"\(").replace(")", r"\)")):
            make(arg)
