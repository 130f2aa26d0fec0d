"""Table-driven checking: build inputs in several memory layouts and compare with numpy."""
from __future__ import annotations

import numpy as np

import clgrad

LAYOUTS = ("contiguous", "transposed", "sliced", "offset")


def make(arr: np.ndarray, device, layout: str = "contiguous", dtype=None):
    """A clgrad tensor equal to ``arr`` whose memory is laid out as ``layout``:
    'contiguous'; 'transposed' (F-order: reversed strides); 'sliced' (every other element of a bigger
    buffer along each dim); 'offset' (nonzero storage offset)."""
    arr = np.asarray(arr)
    dt = dtype if dtype is not None else clgrad.dtypes.from_numpy_dtype(arr.dtype)
    if layout == "contiguous" or arr.ndim == 0:
        return clgrad.tensor(arr, dtype=dt, device=device)
    if layout == "transposed":
        base = clgrad.tensor(np.ascontiguousarray(arr.transpose()), dtype=dt, device=device)
        t = base.permute(*reversed(range(arr.ndim)))
        assert t.shape == arr.shape
        return t
    if layout == "sliced":
        big = np.zeros(tuple(2 * n + 1 for n in arr.shape), arr.dtype)
        big[tuple(slice(1, None, 2) for _ in arr.shape)] = arr
        base = clgrad.tensor(big, dtype=dt, device=device)
        return base[tuple(slice(1, None, 2) for _ in arr.shape)]
    if layout == "offset":
        flat = np.concatenate([np.zeros(3, arr.dtype), arr.reshape(-1)])
        base = clgrad.tensor(flat, dtype=dt, device=device)
        return base[3:].view(arr.shape)
    raise ValueError(layout)


def to_numpy(t) -> np.ndarray:
    return np.asarray(t.cpu().numpy())


def assert_close(t, expected, rtol=None, atol=None, check_dtype=True):
    """Shape, dtype and values of a clgrad tensor against a numpy array."""
    expected = np.asarray(expected)
    got = to_numpy(t)
    assert tuple(t.shape) == expected.shape, f"shape {tuple(t.shape)} != {expected.shape}"
    if check_dtype:
        assert t.dtype.np == expected.dtype, f"dtype {t.dtype} != {expected.dtype}"
    if expected.dtype.kind == "f":
        tol = {2: (2e-3, 2e-3), 4: (2e-5, 1e-6), 8: (1e-10, 1e-12)}[expected.dtype.itemsize]
        np.testing.assert_allclose(
            got.astype(np.float64), expected.astype(np.float64),
            rtol=tol[0] if rtol is None else rtol, atol=tol[1] if atol is None else atol, equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(got, expected)


def rand(shape, dtype="float32", low=-3, high=3):
    """Random test data of a numpy dtype, away from awkward values for the dtype's kind."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.random.rand(*shape) > 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else low
        return np.random.randint(lo, high + 1, size=shape).astype(dt)
    return np.random.uniform(low, high, size=shape).astype(dt)


# ---- gradient checks on devices without cl_khr_fp64 --------------------------------------------------------
# float32 central differences need a wider step and tolerance than float64's; a gradient off by 1% still fails
GRADCHECK32 = dict(eps=1e-3, atol=1e-3, rtol=1e-2)


def grad_precision(device):
    """(dtype name, gradcheck keyword arguments) of a gradient check on ``device``: float64 with PyTorch's defaults,
    or float32 with GRADCHECK32 on a device without cl_khr_fp64, so that its kernels are still checked there."""
    from tests.conftest import fp64_ok

    return ("float64", {}) if fp64_ok(device) else ("float32", dict(GRADCHECK32))


def quiet_gradcheck(check, fn, inputs, **kwargs):
    """``check`` (clgrad's gradcheck or gradgradcheck) without its warning about inputs that are not float64."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Input #", UserWarning)
        return check(fn, inputs, **kwargs)
