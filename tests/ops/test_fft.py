"""torch.fft and stft/istft: the pair-level engine (ops/fft_core.py, ops/spectral.py) against numpy.fft and
torch.fft (through ``torch.view_as_real``) on every device, gradients by gradcheck and against torch's, torch's
errors; the public complex API (clgrad.fft) where clgrad has complex tensors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.ops import fft_core as F
from clgrad.ops import spectral as S
from tests.conftest import DEVICES, fp64_ok
from tests.helpers import grad_precision, make, quiet_gradcheck

LENGTHS = (1, 2, 3, 5, 7, 8, 12, 17, 60, 64, 97, 1000, 4096)
NORMS = (None, "backward", "ortho", "forward")
FIRST_CL = next((p.values[0] for p in DEVICES if p.values[0] != "cpu"), None)


def _dt(device) -> str:
    return "float64" if fp64_ok(device) else "float32"


def _close(got, want, dt):
    """Relative to the largest magnitude (an FFT's error scales with it)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    scale = max(np.abs(want).max(initial=0.0), 1.0)
    tol = 1e-12 if dt == "float64" else 2e-6
    assert np.abs(got - want).max(initial=0.0) <= tol * scale, np.abs(got - want).max() / scale


def _pairs_np(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], -1)


def _cplx(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("n", LENGTHS)
def test_c2c_lengths_vs_numpy(device, n):
    """Every Stockham radix (4, 2, 3, 5, 7) and Bluestein (17, 97), batched, both directions."""
    dt, rng = _dt(device), np.random.default_rng(n)
    z = _cplx(rng, (3, n))
    p = make(_pairs_np(z).astype(dt), device)
    _close(F.fft(p).cpu().numpy(), _pairs_np(np.fft.fft(z)), dt)
    _close(F.ifft(p, norm="forward").cpu().numpy(), _pairs_np(np.fft.ifft(z, norm="forward")), dt)
    assert F.fft(p).dtype == p.dtype


def _torch_ref(torch, name, inp, kw, real_in):
    t = torch.from_numpy(inp) if real_in else torch.view_as_complex(torch.from_numpy(np.ascontiguousarray(inp)))
    out = getattr(torch.fft, name)(t, **kw)
    return torch.view_as_real(out.resolve_conj()).numpy() if out.is_complex() else out.numpy()


REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
CASES = [  # (function, kwargs, input shape (complex dims))
    ("fft", {}, (4, 6)), ("fft", {"n": 9, "dim": 0}, (4, 6)), ("fft", {"n": 3}, (4, 6)),
    ("ifft", {"n": 10}, (4, 6)), ("ifft", {"dim": -2}, (5, 3)),
    ("rfft", {}, (3, 8)), ("rfft", {"n": 7}, (3, 8)), ("rfft", {"dim": 0}, (5, 4)),
    ("irfft", {}, (3, 5)), ("irfft", {"n": 7}, (3, 5)), ("irfft", {"n": 12, "dim": 0}, (4, 3)),
    ("hfft", {}, (3, 5)), ("hfft", {"n": 5}, (2, 4)), ("ihfft", {}, (3, 7)), ("ihfft", {"n": 4}, (3, 7)),
    ("fft2", {}, (2, 4, 6)), ("fft2", {"s": (3, 8)}, (4, 6)), ("ifft2", {"dim": (0, 2)}, (3, 2, 5)),
    ("fftn", {}, (3, 4, 5)), ("fftn", {"s": (7, -1)}, (3, 4, 5)), ("ifftn", {"s": (2, 3), "dim": (2, 0)}, (3, 4, 5)),
    ("rfft2", {}, (3, 6, 5)), ("rfftn", {"s": (4, 9)}, (3, 6, 5)), ("rfftn", {"dim": (1, 0)}, (4, 6)),
    ("irfft2", {}, (3, 4, 5)), ("irfftn", {"s": (5, 9)}, (4, 6)), ("irfftn", {"dim": (1, 0)}, (6, 4)),
    ("hfft2", {}, (4, 5)), ("hfftn", {"s": (3, 6)}, (2, 4, 5)), ("ihfft2", {}, (4, 6)),
    ("ihfftn", {"s": (3, 5), "dim": (0, 2)}, (4, 2, 6)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{'-'.join(f'{k}{v}' for k, v in c[1].items())}")
def test_pairs_vs_torch(device, case):
    """Each case with one of the norms (in turn), on a contiguous or non-contiguous input."""
    torch = pytest.importorskip("torch")
    name, kw, shape = case
    norm = NORMS[CASES.index(case) % len(NORMS)]
    dt, rng = _dt(device), np.random.default_rng(len(CASES))
    real_in = name in REAL_IN
    inp = rng.standard_normal(shape) if real_in else _pairs_np(_cplx(rng, shape))
    layout = ("contiguous", "transposed", "sliced")[hash((name, str(kw))) % 3]  # non-contiguous inputs too
    got = getattr(F, name)(make(inp.astype(dt), device, layout), **kw, norm=norm)
    _close(got.cpu().numpy(), _torch_ref(torch, name, inp, dict(kw, norm=norm), real_in), dt)


GRAD_CASES = [("fft", {"n": 5}, (3, 4)), ("ifft2", {"s": (2, 5)}, (3, 4)), ("rfft", {"n": 6}, (2, 5)),
              ("irfft", {}, (2, 4)), ("irfft", {"n": 5}, (2, 4)), ("hfftn", {}, (3, 3)), ("ihfft2", {}, (3, 4)),
              ("rfftn", {"norm": "ortho"}, (3, 4)), ("irfftn", {"s": (3, 4), "norm": "forward"}, (2, 3))]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c[0] + "-" + "-".join(map(str, c[1].values())))
def test_gradients(device, case):
    """gradcheck of the pair-level transforms, and the gradient against torch's (view_as_real of z.grad)."""
    name, kw, shape = case
    dt, opts = grad_precision(device)
    rng = np.random.default_rng(3)
    real_in = name in REAL_IN
    inp = rng.standard_normal(shape) if real_in else _pairs_np(_cplx(rng, shape))
    x = make(inp.astype(dt), device).requires_grad_(True)
    fn = getattr(F, name)
    assert quiet_gradcheck(gradcheck, lambda a: fn(a, **kw), (x,), **opts)
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(inp).requires_grad_(True)
    tin = t if real_in else torch.view_as_complex(t)
    out = getattr(torch.fft, name)(tin, **kw)
    w = rng.standard_normal(tuple(out.shape) + ((2,) if out.is_complex() else ()))
    (torch.view_as_real(out) if out.is_complex() else out).mul(torch.from_numpy(w)).sum().backward()
    got = fn(x, **kw)
    (got * make(w.astype(dt), device)).sum().backward()
    _close(x.grad.cpu().numpy(), t.grad.numpy(), dt)


@pytest.mark.parametrize("norm", NORMS)
def test_every_norm(device, norm):
    """c2c, r2c and c2r (both directions) under each norm, against numpy."""
    dt, rng = _dt(device), np.random.default_rng(4)
    z = _cplx(rng, (2, 12))
    p = make(_pairs_np(z).astype(dt), device)
    _close(F.ifft(p, norm=norm).cpu().numpy(), _pairs_np(np.fft.ifft(z, norm=norm)), dt)
    _close(F.rfft(p.select(-1, 0), norm=norm).cpu().numpy(), _pairs_np(np.fft.rfft(z.real, norm=norm)), dt)
    _close(F.irfft(p, 15, norm=norm).cpu().numpy(), np.fft.irfft(z, 15, norm=norm), dt)
    _close(F.hfft(p, norm=norm).cpu().numpy(), np.fft.hfft(z, norm=norm), dt)


def test_double_backward_and_empty_batch(device):
    dt, opts = grad_precision(device)
    rng = np.random.default_rng(10)
    p = make(_pairs_np(_cplx(rng, (2, 6))).astype(dt), device).requires_grad_(True)
    x = make(rng.standard_normal((2, 6)).astype(dt), device).requires_grad_(True)
    assert quiet_gradcheck(gradgradcheck, lambda a: F.fft(a, norm="ortho"), (p,), **opts)
    assert quiet_gradcheck(gradgradcheck, lambda a: F.rfft(a), (x,), **opts)
    assert quiet_gradcheck(gradgradcheck, lambda a: F.irfft(a, 5), (p,), **opts)
    empty = F.fft(make(np.zeros((0, 5, 2), dt), device))
    assert tuple(empty.shape) == (0, 5, 2)
    assert tuple(F.rfft(make(np.zeros((0, 6), dt), device)).shape) == (0, 4, 2)


def test_errors(device):
    dt = _dt(device)
    x = make(np.zeros((3, 4, 2), dt), device)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fft(make(np.zeros((0, 2), dt), device))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fft(x, n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.irfft(make(np.zeros((1, 2), dt), device))
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        F.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        F.fft2(x, dim=(0, 0))
    with pytest.raises(RuntimeError, match="dim and shape arguments must have the same length"):
        F.fftn(x, s=(2,), dim=(0, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.fft(x, dim=2)
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        F.rfft(make(np.zeros(4, np.float16), device))


def test_integer_input_is_default_float(device):
    got = F.rfft(make(np.arange(6), device))
    assert got.dtype is clgrad.float32
    _close(got.cpu().numpy(), _pairs_np(np.fft.rfft(np.arange(6.0))), "float32")


def test_freqs_and_shifts(device):
    torch = pytest.importorskip("torch")
    for n, d in ((1, 1.0), (5, 0.5), (8, 2.0)):
        np.testing.assert_array_equal(clgrad.fft.fftfreq(n, d, device=device).cpu().numpy(),
                                      torch.fft.fftfreq(n, d).numpy())
        np.testing.assert_array_equal(clgrad.fft.rfftfreq(n, d, device=device).cpu().numpy(),
                                      torch.fft.rfftfreq(n, d).numpy())
    a = np.arange(30.0, dtype=_dt(device)).reshape(5, 6)
    for dim in (None, 0, -1, (0, 1)):
        for name in ("fftshift", "ifftshift"):
            got = getattr(clgrad.fft, name)(make(a, device, "transposed"), dim)
            np.testing.assert_array_equal(got.cpu().numpy(), getattr(torch.fft, name)(torch.from_numpy(a), dim))


STFT_CASES = [{}, {"hop_length": 3, "win_length": 6, "window": True}, {"center": False, "normalized": True},
              {"pad_mode": "constant", "onesided": False}, {"win_length": 5}]


def _stft_kw(kw, device, torch_mod=None):
    win = np.hanning(8)[1:7]
    out = dict(kw)
    if out.pop("window", False):
        out["window"] = torch_mod.from_numpy(win) if torch_mod else make(win.astype(_dt(device)), device)
    return out


@pytest.mark.parametrize("kw", STFT_CASES, ids=str)
def test_stft_istft_vs_torch(device, kw):
    torch = pytest.importorskip("torch")
    dt, rng = _dt(device), np.random.default_rng(5)
    x = rng.standard_normal((2, 40))
    want = torch.stft(torch.from_numpy(x), 8, return_complex=True, **_stft_kw(kw, device, torch))
    got = S.stft(make(x.astype(dt), device, "sliced"), 8, **_stft_kw(kw, device))
    _close(got.cpu().numpy(), torch.view_as_real(want).numpy(), dt)
    _close(S.stft(make(x[0].astype(dt), device), 8, **_stft_kw(kw, device)).cpu().numpy(),
           torch.view_as_real(want[0]).numpy(), dt)
    if "win_length" in kw and "window" not in kw or kw.get("center") is False:
        return  # a zero-padded box window leaves gaps in the overlap-add: istft raises, as torch
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    for length in (None, 37):
        back = torch.istft(want, 8, length=length, **_stft_kw(ikw, device, torch))
        _close(S.istft(got, 8, length=length, **_stft_kw(ikw, device)).cpu().numpy(), back.numpy(), dt)


def test_stft_complex_and_gradients(device):
    torch = pytest.importorskip("torch")
    dt, opts = grad_precision(device)
    rng = np.random.default_rng(6)
    z = rng.standard_normal((24, 2))
    want = torch.stft(torch.view_as_complex(torch.from_numpy(z)), 8, return_complex=True)
    spec = S.stft(make(z.astype(dt), device), 8, is_complex=True)
    _close(spec.cpu().numpy(), torch.view_as_real(want).numpy(), dt)
    back = torch.istft(want, 8, onesided=False, return_complex=True)
    _close(S.istft(spec, 8, onesided=False, return_complex=True).cpu().numpy(), torch.view_as_real(back).numpy(),
           dt)
    x = make(rng.standard_normal(12).astype(dt), device).requires_grad_(True)
    assert quiet_gradcheck(gradcheck, lambda a: S.stft(a, 4, hop_length=2), (x,), **opts)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        S.istft(S.stft(x.detach(), 4), 4, window=make(np.zeros(4, dt), device))
    with pytest.raises(RuntimeError, match="expected 0 < n_fft < 12, but got n_fft=40"):
        S.stft(x.detach(), 40, center=False)


def test_stft_public_pairs(device):
    """return_complex=False (PyTorch's deprecated real output) needs no complex dtype."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).standard_normal(32)
    got = clgrad.stft(make(x, device if fp64_ok(device) else "cpu"), 8, return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its deprecation of return_complex=False (warned once per process)
        want = torch.stft(torch.from_numpy(x), 8, return_complex=False)
    _close(got.cpu().numpy(), want.numpy(), "float64")
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        clgrad.stft(make(x, "cpu"), 8)


# ---- the public complex API (needs clgrad's complex dtypes: skipped where clgrad has none) --------------
def _complex_or_skip():
    if not hasattr(clgrad, "view_as_complex"):
        with pytest.raises(NotImplementedError, match="complex tensors"):
            clgrad.fft.fft(clgrad.zeros(4))
        pytest.skip("clgrad has no complex dtypes yet (clgrad.view_as_complex)")


@pytest.mark.parametrize("case", CASES[::3], ids=lambda c: c[0])
def test_public_vs_torch(device, case):
    _complex_or_skip()
    torch = pytest.importorskip("torch")
    name, kw, shape = case
    dt, rng = _dt(device), np.random.default_rng(8)
    real_in = name in REAL_IN
    inp = rng.standard_normal(shape) if real_in else _pairs_np(_cplx(rng, shape))
    x = make(inp.astype(dt), device)
    x = x if real_in else clgrad.view_as_complex(x)
    got = getattr(clgrad.fft, name)(x, **kw)
    got = clgrad.view_as_real(got) if got.is_complex() else got
    _close(got.cpu().numpy(), _torch_ref(torch, name, inp, kw, real_in), dt)


def test_public_stft_istft(device):
    _complex_or_skip()
    torch = pytest.importorskip("torch")
    dt = _dt(device)
    x = np.random.default_rng(9).standard_normal(40)
    spec = clgrad.stft(make(x.astype(dt), device), 8, return_complex=True)
    want = torch.stft(torch.from_numpy(x), 8, return_complex=True)
    _close(clgrad.view_as_real(spec).cpu().numpy(), torch.view_as_real(want).numpy(), dt)
    _close(clgrad.istft(spec, 8).cpu().numpy(), torch.istft(want, 8).numpy(), dt)


# ---- PyTorch's OpInfo samples, run through the pair-level functions (cpu and one OpenCL device) -----------
OPINFO_NAMES = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
                "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")


@pytest.mark.parametrize("name", OPINFO_NAMES)
def test_opinfo_samples_on_pairs(device, name):
    """The first 4 samples of op_db's ``fft.<name>`` (complex128 where the op takes complex, else float64): a
    complex input passes as ``torch.view_as_real``, the result compared with torch's viewed alike."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("expecttest")
    if device not in ("cpu", FIRST_CL):
        pytest.skip("cpu and one OpenCL device")
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == f"fft.{name}")
    real_in = name in REAL_IN
    dt = _dt(device)
    for i, s in enumerate(op.sample_inputs("cpu", torch.float64 if real_in else torch.complex128)):
        if i == 4:
            break
        want = op(s.input, *s.args, **s.kwargs)
        want = torch.view_as_real(want.resolve_conj()) if want.is_complex() else want
        inp = s.input.numpy() if real_in else torch.view_as_real(s.input).numpy()
        got = getattr(F, name)(make(inp.astype(dt), device), *s.args, **s.kwargs)
        _close(got.cpu().numpy(), want.numpy(), dt)


@pytest.mark.parametrize("kw", [{}, {"center": False, "hop_length": 3}, {"win_length": 8, "hop_length": 2}])
def test_istft_complex_window(device, kw):
    """A complex window multiplies each frame, and the envelope is the overlap-added complex w**2 (as torch)."""
    torch = pytest.importorskip("torch")
    dt = _dt(device)
    rng = np.random.default_rng(10)
    spec = rng.standard_normal((3, 10, 6)) + 1j * rng.standard_normal((3, 10, 6))
    win = rng.standard_normal(kw.get("win_length", 10)) + 1j * rng.standard_normal(kw.get("win_length", 10))
    want = torch.istft(torch.from_numpy(spec), 10, window=torch.from_numpy(win), return_complex=True, **kw)
    cdt = "complex128" if dt == "float64" else "complex64"
    x, w = (clgrad.tensor(a.astype(cdt), device=device) for a in (spec, win))
    got = clgrad.istft(x, 10, window=w, return_complex=True, **kw)
    _close(clgrad.view_as_real(got).cpu().numpy(), torch.view_as_real(want).numpy(), dt)
    with pytest.raises(RuntimeError, match="Complex windows are incompatible with return_complex=False"):
        clgrad.istft(x, 10, window=w)
