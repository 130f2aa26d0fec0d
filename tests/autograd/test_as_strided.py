"""as_strided's gradient in the cases a plain scatter gets wrong, against PyTorch: a view whose elements share
memory (gradients add up), an input that is itself a view with an offset, an input whose elements share memory
(PyTorch splits the gradient evenly), and a self-overlapping view rebuilt after an in-place write to its base."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")


def _grad(m, device, make_input, size, stride, offset=None):
    kw = {} if m is torch else {"device": device}
    leaf = m.arange(16.0, dtype=m.float64 if m is torch or fp64_ok(device) else m.float32, **kw).requires_grad_(True)
    y = m.as_strided(make_input(leaf), size, stride, offset)
    (y * (m.arange(float(y.numel()), dtype=leaf.dtype, **kw).reshape(y.shape) + 1)).sum().backward()
    assert y.grad_fn.name() == "AsStridedBackward0"
    return np.asarray(leaf.grad.cpu().numpy() if m is clgrad else leaf.grad.numpy(), np.float64)


CASES = [
    ("overlapping view", lambda t: t * 1, (2, 2, 2, 2), (1, 1, 1, 1), 0),
    ("overlapping window", lambda t: t * 1, (5, 4), (2, 1), 1),
    ("offset input", lambda t: (t * 1)[3:], (2, 3), (1, 2), None),
    ("input sharing memory", lambda t: (t * 1)[:4].expand(3, 4), (2, 2), (1, 1), 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_torch(device, case):
    _, make_input, size, stride, offset = case
    want = _grad(torch, device, make_input, size, stride, offset)
    np.testing.assert_allclose(_grad(clgrad, device, make_input, size, stride, offset), want, rtol=1e-6)


def test_self_overlapping_view_rebuilt_after_in_place_write(device):
    def run(m, kw):
        leaf = m.arange(6.0, **kw).requires_grad_(True)
        base = leaf * 1
        v = base.as_strided((3, 2), (1, 1))
        base.mul_(2)  # v's node is rebuilt from base's new one
        (v * m.arange(6.0, **kw).reshape(3, 2)).sum().backward()
        return leaf.grad
    np.testing.assert_allclose(run(clgrad, {"device": device}).cpu().numpy(), run(torch, {}).numpy())
