"""clgrad/ops/aliases.py: torch's alias names resolve to clgrad's ops, and the composites (sinc, entr, angle,
signbit, signal.windows ...) match PyTorch in value, dtype and gradient."""
from __future__ import annotations

import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from clgrad.ops import aliases
from tests.helpers import grad_precision

torch = pytest.importorskip("torch")

SPECIALS = np.array([-3.0, -1.0, -0.5, 0.0, -0.0, 0.5, 2.0, math.inf, -math.inf, math.nan])
POS = np.array([0.0, 0.3, 1.0, 2.5])

# (id, function of (lib, *tensors), inputs, differentiable): lib is clgrad or torch
CASES = [
    ("arccos", lambda lib, x: lib.arccos(x), [np.array([-0.9, 0.0, 0.4])], True),
    ("arcsin-method", lambda lib, x: x.arcsin(), [np.array([-0.9, 0.0, 0.4])], True),
    ("arctan2", lambda lib, x, y: lib.arctan2(x, y), [np.array([1.0, -2.0]), np.array([0.5, 3.0])], True),
    ("fix", lambda lib, x: lib.fix(x), [np.array([-1.5, 0.2, 2.7])], False),
    ("swapaxes", lambda lib, x: lib.swapaxes(x, 0, 1), [np.arange(6.0).reshape(2, 3)], True),
    ("sgn", lambda lib, x: lib.sgn(x), [SPECIALS[:7]], False),
    ("positive", lambda lib, x: lib.positive(x), [SPECIALS], False),
    ("deg2rad", lambda lib, x: lib.deg2rad(x), [np.array([0.0, 90.0, -180.0])], True),
    ("rad2deg-method", lambda lib, x: x.rad2deg(), [np.array([0.0, 1.0, -3.0])], True),
    ("angle", lambda lib, x: lib.angle(x), [SPECIALS], False),
    ("signbit", lambda lib, x: lib.signbit(x), [SPECIALS], False),
    ("isposinf", lambda lib, x: lib.isposinf(x), [SPECIALS], False),
    ("isneginf", lambda lib, x: lib.isneginf(x), [SPECIALS], False),
    ("isreal", lambda lib, x: lib.isreal(x), [SPECIALS], False),
    ("sinc", lambda lib, x: lib.sinc(x), [np.array([-1.5, -0.25, 0.0, 0.3, 2.0])], True),
    ("logaddexp2", lambda lib, x, y: lib.logaddexp2(x, y), [np.array([-1.0, 0.0, 30.0]), np.array([2.0, 0.0, -4.0])],
     True),
    ("heaviside", lambda lib, x, v: lib.heaviside(x, v), [np.array([-1.0, 0.0, 2.0]), np.array([0.5])], False),
    ("float_power", lambda lib, x: lib.float_power(x, 2.5), [np.array([0.5, 1.0, 3.0])], True),
    ("ldexp", lambda lib, x, e: lib.ldexp(x, e), [np.array([0.5, -1.0, 3.0]), np.array([1.0, 3.0, -2.0])], True),
    ("special.entr", lambda lib, x: lib.special.entr(x), [np.array([-1.0, 0.0, 0.2, 1.5, math.nan])], False),
    ("special.entr-grad", lambda lib, x: lib.special.entr(x), [np.array([0.2, 1.5, 3.0])], True),
    ("special.ndtr", lambda lib, x: lib.special.ndtr(x), [np.array([-3.0, 0.0, 0.7, 4.0])], True),
    ("special.xlog1py", lambda lib, x, y: lib.special.xlog1py(x, y),
     [np.array([0.0, 2.0, -1.5]), np.array([3.0, 0.5, 1.0])], True),
    ("special.xlog1py-edges", lambda lib, x, y: lib.special.xlog1py(x, y),
     [np.array([0.0, 0.0, 0.0, 1.0, 2.0]), np.array([-1.0, -3.0, math.nan, -1.0, math.inf])], False),
    ("special.xlog1py-scalar", lambda lib, x: lib.special.xlog1py(2.0, x), [np.array([0.0, 0.5, 3.0])], True),
    ("special.expit", lambda lib, x: lib.special.expit(x), [np.array([-2.0, 0.0, 3.0])], True),
    ("special.gammaln", lambda lib, x: lib.special.gammaln(x), [np.array([0.5, 2.0, 7.5])], True),
    ("linalg.diagonal", lambda lib, x: lib.linalg.diagonal(x, offset=1), [np.arange(12.0).reshape(3, 4)], True),
    ("rms_norm", lambda lib, x, w: lib.nn.functional.rms_norm(x, (3,), w, 1e-5),
     [np.array([[0.5, -1.0, 2.0], [0.0, 0.1, -0.3]]), np.array([0.5, 2.0, -1.0])], True),
    ("rms_norm-2d", lambda lib, x: lib.nn.functional.rms_norm(x, [2, 3]), [np.arange(12.0).reshape(2, 2, 3) - 5], True),
    ("conj", lambda lib, x: lib.conj(x), [POS], True),
    ("resolve_neg-method", lambda lib, x: x.resolve_neg(), [POS], True),
    ("rdiv", lambda lib, x: x.__rdiv__(2.0), [np.array([0.5, 4.0])], True),
    ("resize_as_", lambda lib, x, y: lib.resize_as_(x.clone(), y), [np.arange(6.0), np.ones((2, 2))], False),
    ("nonzero_static-pad", lambda lib, x: lib.nonzero_static(x, size=4), [np.array([0.0, 1.0, 2.0])], False),
    ("nonzero_static-cut", lambda lib, x: lib.nonzero_static(x, size=1, fill_value=7), [np.array([0.0, 1.0, 2.0])],
     False),
]


def _both(fn, arrays, device, dtype):
    ours = fn(clgrad, *[clgrad.tensor(a, dtype=getattr(clgrad, dtype), device=device) for a in arrays])
    theirs = fn(torch, *[torch.tensor(a, dtype=getattr(torch, dtype)) for a in arrays])
    return ours, theirs


@pytest.mark.parametrize("name,fn,arrays,diff", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(device, name, fn, arrays, diff):
    dtype, kwargs = grad_precision(device)
    if name == "float_power" and dtype != "float64":
        pytest.skip("float_power computes in float64, which this device lacks")
    ours, theirs = _both(fn, arrays, device, dtype)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=tol, atol=tol, equal_nan=True)
    if diff:
        inputs = tuple(clgrad.tensor(a, dtype=getattr(clgrad, dtype), device=device, requires_grad=True)
                       for a in arrays)
        assert gradcheck(lambda *xs: fn(clgrad, *xs), inputs, **kwargs)


def test_int_inputs_promote_like_torch(device):
    x = np.array([-2, 0, 3])
    for fn in (lambda lib, t: lib.deg2rad(t), lambda lib, t: lib.sinc(t), lambda lib, t: lib.angle(t),
               lambda lib, t: lib.signbit(t), lambda lib, t: lib.isposinf(t)):
        ours = fn(clgrad, clgrad.tensor(x, device=device))
        theirs = fn(torch, torch.tensor(x))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "cosine", "gaussian", "hamming", "hann", "kaiser",
                                  "nuttall", "exponential"])
@pytest.mark.parametrize("M,sym", [(0, True), (1, True), (7, True), (8, False)])
def test_signal_windows(name, M, sym):
    ours = getattr(clgrad.signal.windows, name)(M, sym=sym, dtype=clgrad.float64)
    theirs = getattr(torch.signal.windows, name)(M, sym=sym, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
    assert ours.dtype == clgrad.float64 and clgrad.signal.windows.hann(3).dtype == clgrad.float32


def test_general_windows_take_their_coefficients():
    ours = clgrad.signal.windows.general_cosine(6, a=[0.46, 0.23, 0.31], sym=True, dtype=clgrad.float64)
    theirs = torch.signal.windows.general_cosine(6, a=[0.46, 0.23, 0.31], sym=True, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    ours = clgrad.signal.windows.general_hamming(5, alpha=0.6, dtype=clgrad.float64)
    np.testing.assert_allclose(ours.numpy(), torch.signal.windows.general_hamming(5, alpha=0.6).numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        clgrad.signal.windows.hann(-1)


def test_errors_like_torch():
    with pytest.raises(RuntimeError, match="bool tensor"):
        clgrad.positive(clgrad.tensor([True]))
    with pytest.raises(RuntimeError, match="non-complex"):
        _ = clgrad.tensor([1.0]).imag
    with pytest.raises(RuntimeError, match="normalized_shape"):
        clgrad.nn.functional.rms_norm(clgrad.ones(2, 3), [2])
    with pytest.raises(RuntimeError, match="different dtypes"):
        clgrad.heaviside(clgrad.tensor([1.0]), clgrad.tensor([1]))


def test_aliases_are_the_same_ops_and_existing_names_win():
    assert clgrad.arccos is clgrad.acos and clgrad.Tensor.arccos_ is clgrad.Tensor.acos_
    assert clgrad.special.psi is clgrad.digamma and clgrad.row_stack is clgrad.vstack
    before = clgrad.sinc
    aliases.install(clgrad)  # idempotent: a name that exists is never replaced
    assert clgrad.sinc is before and clgrad.arccos is clgrad.acos


def test_upsample_aliases():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    for name in ("upsample_nearest", "upsample_bilinear"):
        ours = getattr(clgrad.nn.functional, name)(clgrad.tensor(x), scale_factor=2)
        theirs = getattr(torch.nn.functional, name)(torch.tensor(x), scale_factor=2)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


NATIVE = [
    ("native_layer_norm", lambda lib, x, w, b: lib.native_layer_norm(x, (3,), w, b, 1e-5),
     [np.array([[0.5, -1.0, 2.0], [0.0, 0.1, -0.3]]), np.array([0.5, 2.0, -1.0]), np.array([0.1, 0.0, 0.3])]),
    ("native_group_norm", lambda lib, x, w, b: lib.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
     [np.arange(24.0).reshape(2, 4, 3) % 5 - 2, np.array([0.5, 2.0, -1.0, 1.0]), np.array([0.1, 0.0, 0.3, 0.2])]),
    ("_softmax_backward_data", lambda lib, g, y: lib._softmax_backward_data(g, y.softmax(1), 1, y.dtype),
     [np.array([[0.5, -1.0, 2.0], [0.0, 0.1, -0.3]]), np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])]),
]


@pytest.mark.parametrize("name,fn,arrays", NATIVE, ids=[c[0] for c in NATIVE])
def test_native_entry_points(device, name, fn, arrays):
    """ATen's native_* composites: every output against torch, and the input gradients of the first output."""
    dtype, kwargs = grad_precision(device)
    ours, theirs = _both(fn, arrays, device, dtype)
    tol = 1e-10 if dtype == "float64" else 1e-5
    for o, t in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.cpu().numpy(), t.numpy(), rtol=tol, atol=tol)
    inputs = tuple(clgrad.tensor(a, dtype=getattr(clgrad, dtype), device=device, requires_grad=True) for a in arrays)
    first = (lambda *xs: fn(clgrad, *xs)[0]) if isinstance(ours, tuple) else (lambda *xs: fn(clgrad, *xs))
    assert gradcheck(first, inputs, **kwargs)


def test_unsafe_masked_index_clamps_masked_off_indices():
    x = torch.arange(5.0)
    mask, idx = torch.tensor([True, False, True]), [torch.tensor([1, 7, 4])]
    theirs = torch._unsafe_masked_index(x, mask, idx, -1.0)
    ours = clgrad._unsafe_masked_index(clgrad.arange(5.0), clgrad.tensor([True, False, True]),
                                       [clgrad.tensor([1, 7, 4])], -1.0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    g = clgrad.tensor([1.0, 2.0], requires_grad=True)
    clgrad.native_dropout_backward(g, clgrad.tensor([True, False]), 2.0).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), [2.0, 0.0])
