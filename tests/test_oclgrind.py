"""The focused kernel subset for the Oclgrind simulator: every template family, each dtype class, contiguous
and strided operands, and edge sizes (0, 1, a prime, more than one work-group).

``tox -e oclgrind`` (or ``CLGRAD_TEST_DEVICES=oclgrind pytest -m oclgrind``) runs it under Oclgrind, whose
reports of invalid memory accesses and data races on stderr fail the test. On other devices it is a cheap
extra correctness check.
"""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.helpers import assert_close, make

pytestmark = pytest.mark.oclgrind

SIZES = (0, 1, 7, 1031)
DTYPES = ("bool", "int32", "float16", "float32", "float64")
ERROR_MARKERS = ("Invalid read", "Invalid write", "data race", "Uninitialized", "Oclgrind - ")


@pytest.fixture(autouse=True)
def no_simulator_errors(capfd, device):
    yield
    clgrad.opencl.synchronize() if device != "cpu" else None
    err = capfd.readouterr().err
    found = [m for m in ERROR_MARKERS if m.lower() in err.lower()]
    assert not found, f"the OpenCL runtime reported {found}:\n{err[:4000]}"


def _skip_fp64(device, dtype):
    if dtype == "float64" and device != "cpu" and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("no cl_khr_fp64")


def _data(n, dtype):
    rng = np.random.default_rng(n)
    if dtype == "bool":
        return rng.random(n) > 0.5
    if dtype.startswith("int"):
        return rng.integers(-50, 50, n).astype(dtype)
    return rng.uniform(-4, 4, n).astype(dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise(device, dtype, n):
    _skip_fp64(device, dtype)
    a, b = _data(n, dtype), _data(n, dtype)
    x, y = clgrad.tensor(a, device=device), clgrad.tensor(b, device=device)
    if dtype == "bool":
        assert_close(clgrad.logical_and(x, y), np.logical_and(a, b))
    else:
        assert_close(clgrad.maximum(x, y), np.maximum(a, b))
    # strided: every other element of a 2-D view, with a broadcast row
    m = make(np.stack([a, b]), device, "sliced")
    assert_close(clgrad.where(m[0] > m[1], m[0], m[1]), np.where(a > b, a, b))


@pytest.mark.parametrize("n", SIZES)
def test_copy_cast(device, n):
    a = _data(n, "float32")
    x = make(a.reshape(1, n) if n else a.reshape(1, 0), device, "transposed" if n else "contiguous")
    assert_close(x.to(clgrad.float16), a.reshape(1, n).astype(np.float16))
    assert_close(x.to(clgrad.int32), a.reshape(1, n).astype(np.int64).astype(np.int32))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ("int32", "float16", "float32", "float64"))
def test_random(device, dtype, n):
    _skip_fp64(device, dtype)
    dt = getattr(clgrad, dtype)
    gen = clgrad.Generator().manual_seed(n + 1)
    if dtype.startswith("int"):
        x = clgrad.randint(-5, 5, (n,), dtype=dt, device=device, generator=gen)
        ref = clgrad.randint(-5, 5, (n,), dtype=dt, generator=clgrad.Generator().manual_seed(n + 1))
    else:
        x = clgrad.rand(n, dtype=dt, device=device, generator=gen)
        ref = clgrad.rand(n, dtype=dt, generator=clgrad.Generator().manual_seed(n + 1))
    np.testing.assert_array_equal(x.cpu().numpy(), ref.numpy())
    # a strided destination goes through a temporary and a copy
    y = clgrad.zeros(n, 2, dtype=dt, device=device)
    if dtype.startswith("float"):
        y[:, 1].uniform_(generator=gen)
        assert (y[:, 0].cpu().numpy() == 0).all()
