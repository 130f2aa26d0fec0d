"""``repr`` of tensors must be PyTorch's, character for character (``torch.`` spelled ``clgrad.``)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import clgrad
from clgrad import _tensor_str

torch = pytest.importorskip("torch")
import torch._tensor_str as torch_str  # noqa: E402 - only once torch is known to be there

nan, inf = math.nan, math.inf
_rng = np.random.default_rng(1234)

# (id, data, dtype name or None for the dtype torch infers)
CASES = [
    ("int_valued", [1.0, 2.0, 3.0], None),
    ("fixed", [1.5, -2.25, 3.0], None),
    ("fixed_wide", [0.1, 1234.5678, -7.0], None),
    ("sci_tiny", [1e-5, 1.0], None),
    ("sci_huge", [1e9, 1.0], None),
    ("sci_ratio", [1e3, 0.1], None),
    ("sci_int_valued", [1e10, 2.0, -3.0], None),
    ("no_sci_ratio_1000", [1000.0, 1.0], None),
    ("nonfinite", [nan, inf, -inf, 1.5], None),
    ("nonfinite_only", [nan, inf, -inf], None),
    ("nonfinite_sci", [nan, 1e-7, -inf], None),
    ("neg_zero", [0.0, -0.0, 1.5], None),
    ("neg_zero_int", [-0.0, 2.0], None),
    ("zeros", [0.0, 0.0], None),
    ("rounds_up", [9.99999, 0.5], None),
    ("scalar_float", 3.5, None),
    ("scalar_int_valued", 2.0, None),
    ("scalar_sci", 1e-10, None),
    ("scalar_int", 7, None),
    ("scalar_bool", True, None),
    ("scalar_int8", -5, "int8"),
    ("empty", [], None),
    ("empty_int64", [], "int64"),
    ("empty_bool", [], "bool"),
    ("empty_float64", [], "float64"),
    ("empty_2d", np.zeros((0, 3)), "float32"),
    ("empty_2d_int32", np.zeros((2, 0), np.int32), "int32"),
    ("bool", [True, False, True], None),
    ("int64", [1, -20, 300], None),
    ("int64_extremes", [2**63 - 1, -(2**63)], None),
    ("uint8", [0, 7, 255], "uint8"),
    ("int8", [-128, 0, 127], "int8"),
    ("int16", [-32768, 5], "int16"),
    ("int32", [1, -2, 2**31 - 1], "int32"),
    ("float16", [0.1, 65504.0, -1.0], "float16"),
    ("float16_int_valued", [1.0, -2.0], "float16"),
    ("float16_tiny", [6e-8, 1.0], "float16"),
    ("float32_denormal", [1e-45, 1.0], "float32"),
    ("float32_max", [3.4e38, -1.0], "float32"),
    ("float64", [1 / 3, 2 / 3, -1e-3], "float64"),
    ("wrap_float", np.arange(30) * 1.5, "float32"),
    ("wrap_int", list(range(-10, 50)), None),
    ("wrap_bool", [True, False] * 20, None),
    ("wrap_sci", np.linspace(-1e-5, 3e6, 25), "float64"),
    ("2d", np.arange(12).reshape(3, 4) / 7, "float32"),
    ("2d_int", np.arange(-6, 6).reshape(3, 4) * 11, "int64"),
    ("2d_wrapping_rows", np.arange(60).reshape(2, 30) * 0.25, "float32"),
    ("3d", np.arange(24).reshape(2, 3, 4), "int32"),
    ("4d", np.arange(16).reshape(2, 2, 2, 2) - 7.5, "float64"),
    ("summarized_1d", np.arange(2000), "int64"),
    ("summarized_1d_float", _rng.standard_normal(1001), "float32"),
    ("summarized_2d", _rng.standard_normal((40, 40)), "float32"),
    ("summarized_short_rows", np.arange(1203).reshape(3, 401), "int16"),
    ("summarized_3d", _rng.standard_normal((11, 12, 13)) * 1e4, "float64"),
    ("summarized_bool", _rng.random(1500) > 0.5, "bool"),
    ("summarized_float16", _rng.standard_normal((30, 40)), "float16"),
    ("summarized_hidden_sci", np.r_[[1.0] * 3, [1e-9] * 1000, [2.0] * 3], "float32"),
]


def _make(data, dtype, device):
    dt = getattr(clgrad, dtype) if dtype else None
    t = clgrad.tensor(data, dtype=dt, device=device)
    # clgrad.tensor of a Python scalar must give a 0-dim tensor; reshape keeps this test about printing
    return t.reshape(np.shape(data)) if np.ndim(data) == 0 else t


def _expected(data, dtype, device) -> str:
    tt = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    return _torch_repr(tt, device)


def _torch_repr(tt, device) -> str:
    """torch's repr of ``tt`` as if it lived on ``device``: torch has no OpenCL, so the device suffix is
    added with torch's own line-breaking rule, in front of the other suffixes, where torch puts it."""
    text = repr(tt)
    if device != "cpu":
        body = "tensor(" + ("[]" if tt.numel() == 0 else torch_str._tensor_str(tt, len("tensor(")))
        assert text.startswith(body)
        suffixes = [s for s in re.split(r",\s*(?=[a-z_]+=)", text[len(body):-1]) if s]
        text = torch_str._add_suffixes(body, [f"device='{device}'", *suffixes], len("tensor("), False)
    return text.replace("torch.", "clgrad.")


@pytest.fixture(autouse=True)
def _default_print_state():
    yield
    torch.set_printoptions(profile="default")
    _tensor_str.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)
    clgrad.set_default_dtype(clgrad.float32)


@pytest.mark.parametrize("data,dtype", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_repr_matches_torch(data, dtype, device):
    if dtype == "float64" and device != "cpu" and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("no cl_khr_fp64")
    t = _make(data, dtype, device)
    text = repr(t)
    assert text == _expected(data, dtype, device)
    assert str(t) == text
    assert (f"device='{device}'" in text) == (device != "cpu")


LAYOUTS = [
    ("transposed", lambda t: t.t()),
    ("column", lambda t: t[:, 1]),
    ("strided", lambda t: t[::2, 1:]),
]


@pytest.mark.parametrize("view", [v[1] for v in LAYOUTS], ids=[v[0] for v in LAYOUTS])
def test_repr_of_views(view, device):
    data = np.arange(20).reshape(4, 5) * 0.5 - 3
    t = view(clgrad.tensor(data, dtype=clgrad.float32, device=device))
    assert repr(t) == _torch_repr(view(torch.tensor(data, dtype=torch.float32)), device)


OPTIONS = [
    ("precision2", dict(precision=2)),
    ("precision0", dict(precision=0)),
    ("sci_on", dict(sci_mode=True)),
    ("sci_off", dict(sci_mode=False)),
    ("linewidth40", dict(linewidth=40)),
    ("threshold10", dict(threshold=10, edgeitems=2)),
    ("edgeitems0", dict(threshold=5, edgeitems=0)),
    ("short", dict(profile="short")),
    ("full", dict(profile="full")),
]
OPTION_DATA = [
    ([1.123456, -22.5, 3.0], None),
    ([1e-6, 5.0, nan], None),
    ([1.0, 2.0], None),
    (np.arange(40).reshape(5, 8) * 1.25, "float32"),
    (np.arange(1500), "int64"),
    ([], "int32"),
]


@pytest.mark.parametrize("options", [o[1] for o in OPTIONS], ids=[o[0] for o in OPTIONS])
def test_printoptions_match_torch(options):
    torch.set_printoptions(**options)
    _tensor_str.set_printoptions(**options)
    for data, dtype in OPTION_DATA:
        assert repr(_make(data, dtype, "cpu")) == _expected(data, dtype, "cpu")


def test_set_printoptions_profile_resets_and_rejects_unknown():
    _tensor_str.set_printoptions(precision=1, linewidth=20)
    _tensor_str.set_printoptions(profile="default")
    assert _tensor_str.get_printoptions() == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
    with _tensor_str.printoptions(precision=2):
        assert repr(clgrad.tensor([1.23456])) == "tensor([1.23])"
    assert repr(clgrad.tensor([1.23456])) == "tensor([1.2346])"
    with pytest.raises(ValueError, match="profile"):
        _tensor_str.set_printoptions(profile="verbose")


@pytest.mark.parametrize("default", ["float64", "float16"])
def test_dtype_suffix_follows_default_dtype(default):
    torch.set_default_dtype(getattr(torch, default))
    clgrad.set_default_dtype(getattr(clgrad, default))
    for data, dtype in [([1.5, 2.0], "float64"), ([1.5, 2.0], "float32"), ([1.5, 2.0], "float16"),
                        ([1.5], None), ([], None), ([], "float32"), ([3], None)]:
        assert repr(_make(data, dtype, "cpu")) == _expected(data, dtype, "cpu")
