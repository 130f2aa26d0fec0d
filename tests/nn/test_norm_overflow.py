"""Issue 19 item 10: a row whose float32 mean squared overflows gets a NaN variance, as in PyTorch, on every
device (layer_norm of [3e38] * 3 is NaN there, not 0); ordinary rows are unaffected."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F

ROWS = [[3e38] * 3, [2e19] * 4, [-1e30] * 8, [1.8e19] * 3, [1.0, 2.0, 4.0], [1e19, -1e19, 1e19]]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r[0]:g}x{len(r)}")
def test_layer_norm_overflow_matches_torch(device, row):
    torch = pytest.importorskip("torch")
    x = np.array([row], dtype=np.float32)
    got = F.layer_norm(clgrad.tensor(x, device=device), (len(row),)).cpu().numpy()
    want = torch.nn.functional.layer_norm(torch.tensor(x), (len(row),)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_group_norm_shares_the_rule(device):
    """group_norm uses the same statistics. (batch_norm does too; PyTorch's own batch_norm of such a channel
    is -inf or NaN depending on its layout, so it is not compared here.)"""
    torch = pytest.importorskip("torch")
    x = np.full((2, 2, 3), 3e38, dtype=np.float32)
    x[1] = np.arange(6, dtype=np.float32).reshape(2, 3)  # a second sample that stays finite
    got = F.group_norm(clgrad.tensor(x, device=device), 1).cpu().numpy()
    want = torch.nn.functional.group_norm(torch.tensor(x), 1).numpy()
    assert np.isnan(want[0]).all() and np.isfinite(want[1]).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    y = x.transpose(1, 0, 2).copy()  # channel 0 is all 3e38, channel 1 finite
    out = F.batch_norm(clgrad.tensor(y, device=device), None, None, training=True).cpu().numpy()
    assert np.isnan(out[:, 0]).all() and np.isfinite(out[:, 1]).all()


def test_float64_rows_stay_exact(device):
    """Where float64 holds the square, PyTorch (and clgrad) normalize the constant row to zeros."""
    if device != "cpu" and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("the device lacks cl_khr_fp64")
    x = clgrad.tensor([[3e38] * 3], dtype=clgrad.float64, device=device)
    assert F.layer_norm(x, (3,)).cpu().numpy().tolist() == [[0.0, 0.0, 0.0]]
