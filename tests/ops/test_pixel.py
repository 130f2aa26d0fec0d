"""pixel_shuffle, pixel_unshuffle, channel_shuffle (clgrad/ops/pixel.py): values against torch over layouts and
batch shapes, gradients by gradcheck/gradgradcheck, node names, PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck
from tests.helpers import LAYOUTS, assert_close, grad_precision, make, quiet_gradcheck

torch = pytest.importorskip("torch")

# (function name, input shape, factor)
CASES = [
    ("pixel_shuffle", (1, 4, 2, 3), 2),
    ("pixel_shuffle", (2, 3, 18, 2, 1), 3),  # two batch dims
    ("pixel_shuffle", (8, 2, 2), 2),  # no batch dim
    ("pixel_shuffle", (2, 4, 3, 3), 1),
    ("pixel_unshuffle", (1, 2, 4, 6), 2),
    ("pixel_unshuffle", (2, 2, 1, 6, 3), 3),
    ("pixel_unshuffle", (1, 4, 4), 4),
    ("channel_shuffle", (2, 6, 3), 3),
    ("channel_shuffle", (1, 6, 2, 2), 2),
    ("channel_shuffle", (2, 4, 1, 2, 3), 4),
]
IDS = [f"{name}-{shape}-{r}" for name, shape, r in CASES]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,shape,r", CASES, ids=IDS)
def test_matches_torch(device, name, shape, r, layout):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = make(a, device, layout)
    out = getattr(F, name)(x, r)
    assert out.is_contiguous() and out.device == x.device
    assert_close(out, getattr(torch.nn.functional, name)(torch.tensor(a), r).numpy(), rtol=0, atol=0)


def test_int_dtype_empty_batch_and_namespaces():
    a = np.arange(2 * 8 * 2 * 2).reshape(2, 8, 2, 2)
    assert_close(clgrad.pixel_shuffle(clgrad.tensor(a), 2), torch.pixel_shuffle(torch.tensor(a), 2).numpy())
    assert_close(clgrad.pixel_unshuffle(clgrad.tensor(a), 2), torch.pixel_unshuffle(torch.tensor(a), 2).numpy())
    assert_close(clgrad.channel_shuffle(clgrad.tensor(a), 4), torch.channel_shuffle(torch.tensor(a), 4).numpy())
    assert tuple(F.pixel_shuffle(clgrad.zeros(0, 4, 2, 2), 2).shape) == (0, 1, 4, 4)


@pytest.mark.parametrize("name,shape,r", [CASES[1], CASES[5], CASES[8]], ids=[IDS[1], IDS[5], IDS[8]])
def test_gradcheck(device, name, shape, r):
    dtype, kw = grad_precision(device)
    x = make(np.random.default_rng(0).standard_normal(shape), device, "transposed",
             dtype=getattr(clgrad, dtype)).requires_grad_()
    fn = getattr(F, name)
    assert quiet_gradcheck(gradcheck, lambda t: fn(t, r), (x,), **kw)
    assert quiet_gradcheck(gradgradcheck, lambda t: fn(t, r), (x,), **kw)


def test_node_names_match_torch():
    for name, shape, r in (CASES[0], CASES[4], CASES[7]):
        x, tx = clgrad.zeros(shape, requires_grad=True), torch.zeros(shape, requires_grad=True)
        got = getattr(F, name)(x, r).grad_fn.name()
        assert got == getattr(torch.nn.functional, name)(tx, r).grad_fn.name()


BAD = [
    ("pixel_shuffle", (1, 3, 4, 4), 2, RuntimeError, "input.size(-3)=3 is not divisible by 4"),
    ("pixel_shuffle", (3, 4), 2, RuntimeError, "at least 3 dimensions"),
    ("pixel_shuffle", (1, 4, 4, 4), 0, RuntimeError, "expects a positive upscale_factor, but got 0"),
    ("pixel_shuffle", (1, 4, 4, 4), 2.0, TypeError, "argument 'upscale_factor' (position 2) must be int"),
    ("pixel_unshuffle", (1, 3, 5, 4), 2, RuntimeError, "height to be divisible by downscale_factor"),
    ("pixel_unshuffle", (1, 3, 4, 5), 2, RuntimeError, "input.size(-1)=5 is not divisible by 2"),
    ("pixel_unshuffle", (1, 4, 4, 4), -1, RuntimeError, "positive downscale_factor, but got -1"),
    ("channel_shuffle", (1, 3, 4), 2, RuntimeError, "Got 3 channels and 2 groups."),
    ("channel_shuffle", (3, 4), 1, RuntimeError, "input with > 2 dims, but got input with sizes [3, 4]"),
    ("channel_shuffle", (1, 4, 4), 0, RuntimeError, "must be positive. Value of groups:0"),
]


@pytest.mark.parametrize("name,shape,r,exc,message", BAD, ids=[f"{b[0]}-{b[2]}-{b[1]}" for b in BAD])
def test_errors_match_torch(name, shape, r, exc, message):
    for lib, make_zeros in ((F, clgrad.zeros), (torch.nn.functional, torch.zeros)):
        with pytest.raises(exc) as e:
            getattr(lib, name)(make_zeros(shape), r)
        assert message in str(e.value)
    got = pytest.raises(exc, getattr(F, name), clgrad.zeros(shape), r)
    want = pytest.raises(exc, getattr(torch.nn.functional, name), torch.zeros(shape), r)
    if exc is RuntimeError:
        assert str(got.value) == str(want.value)


def test_not_a_tensor():
    with pytest.raises(TypeError, match=r"pixel_shuffle\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        F.pixel_shuffle([[1.0]], 2)
