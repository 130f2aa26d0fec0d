"""Complex arithmetic composed from real ops: forward values and gradients against PyTorch (complex64 on every
device, complex128 where the device has fp64), and the guard: every op without a complex composition raises
PyTorch's ``"<op>" not implemented for 'ComplexFloat'`` instead of reading (re, im) pairs as reals."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.conftest import fp64_ok

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)
Z = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
W = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
R = RNG.normal(size=(3, 4))

# name -> (function of (module, *tensors), inputs); the same code runs on torch and clgrad
CASES = {
    "add": (lambda m, a, b: a + b * 2 - 1j, (Z, W)),
    "sub_alpha": (lambda m, a, b: m.sub(a, b, alpha=2), (Z, W)),
    "mul": (lambda m, a, b: a * b, (Z, W)),
    "mul_real_tensor": (lambda m, a, b: a * b, (Z, R)),
    "mul_scalars": (lambda m, a: 2 * a * 0.5j - 3, (Z,)),
    "div": (lambda m, a, b: a / b, (Z, W)),
    "div_real": (lambda m, a, b: a / b + 1 / a, (Z, R)),
    "neg_reciprocal": (lambda m, a: -a.reciprocal(), (Z,)),
    "abs": (lambda m, a: a.abs(), (Z,)),
    "angle": (lambda m, a: a.angle(), (Z,)),
    "sgn": (lambda m, a: a.sgn(), (Z,)),
    "conj": (lambda m, a: a.conj() * a + a.conj_physical(), (Z,)),
    "exp_log_sqrt": (lambda m, a: a.exp() + a.log() * a.sqrt(), (Z,)),
    "sin_cos": (lambda m, a: a.sin() - a.cos(), (Z,)),
    "hyperbolic_tan": (lambda m, a: a.sinh() + a.cosh() * a.tanh() - a.tan() * 0.5j, (Z * 0.5,)),
    "log2_log10_exp2": (lambda m, a: a.log2() + a.log10() * a.exp2(), (Z,)),
    "rsqrt_sigmoid": (lambda m, a: a.rsqrt() + a.sigmoid(), (Z,)),
    "dot_vdot": (lambda m, a, b: m.dot(a[0], b[1]) + m.vdot(a[1], b[0]), (Z, W)),
    "pow_real": (lambda m, a: a ** 2.5 + a ** 2 + a ** -1.5, (Z,)),
    "pow_complex": (lambda m, a: a ** (0.5 + 1j), (Z,)),
    "square": (lambda m, a: a.square(), (Z,)),
    "sum_mean": (lambda m, a: a.sum(0) + a.mean(1).sum() + a.sum(), (Z,)),
    "matmul": (lambda m, a, b: a @ b.mT, (Z, W)),
    "mm_bmm": (lambda m, a, b: m.mm(a, b.T) + m.bmm(a[None], b.mT[None])[0], (Z, W)),
    "matmul_vec": (lambda m, a, b: m.matmul(a, b[0]), (Z, W)),
    "adjoint": (lambda m, a: a.mH @ a + a.adjoint() @ a, (Z,)),
    "real_imag": (lambda m, a: a.real * a.imag, (Z,)),
    "pair_views": (lambda m, a: m.view_as_complex(m.view_as_real(a) * 3), (Z,)),
    "complex_polar": (lambda m, a, b: m.complex(a, b) * m.polar(a.abs(), b), (R, R[::-1].copy())),
    "where": (lambda m, a, b: m.where(a.real > 0, a, b), (Z, W)),
    "views": (lambda m, a: m.cat([a[1:, ::2].t(), a[:2, :2] * 1j]).reshape(-1), (Z,)),
    "broadcast": (lambda m, a, b: a[:, :1] * b[0], (Z, W)),
}


def _inputs(m, values, dt):
    return [m.tensor(v.astype(dt if np.iscomplexobj(v) else np.float64 if dt == "complex128" else np.float32),
                     requires_grad=True) for v in values]


def _run(m, fn, values, dt, device=None):
    ts = _inputs(m, values, dt)
    if device is not None:
        ts = [t.detach().to(device).requires_grad_() for t in ts]
    y = fn(m, *ts)
    loss = (y.abs() ** 2).sum() if y.dtype.is_complex else (y * y).sum()
    loss.backward()
    return np.asarray(y.detach().cpu()), [np.asarray(t.grad.cpu()) for t in ts]


@pytest.mark.parametrize("name", CASES)
def test_forward_and_gradient_match_torch(device, name):
    fn, values = CASES[name]
    for dt in ("complex64", "complex128") if fp64_ok(device) else ("complex64",):
        want, want_grads = _run(torch, fn, values, dt)
        got, got_grads = _run(clgrad, fn, values, dt, device)
        tol = dict(rtol=1e-4, atol=1e-4) if dt == "complex64" else dict(rtol=1e-9, atol=1e-9)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, **tol)
        for g, w in zip(got_grads, want_grads):
            np.testing.assert_allclose(g, w, **tol)


def test_predicates_and_comparisons(device):
    data = np.array([1 + 2j, np.nan + 1j, np.inf * 1j, 3 + 0j, 1 + 2.000001j], np.complex64)
    other = np.array([1 + 2j, 0, 1j, 3, 1 + 2j], np.complex64)
    a, b = clgrad.tensor(data, device=device), clgrad.tensor(other, device=device)
    ta, tb = torch.tensor(data), torch.tensor(other)
    for name in ("isfinite", "isnan", "isinf", "isreal"):
        assert np.asarray(getattr(clgrad, name)(a)).tolist() == getattr(torch, name)(ta).tolist(), name
    assert np.asarray(a == b).tolist() == (ta == tb).tolist() and np.asarray(a != b).tolist() == (ta != tb).tolist()
    assert np.asarray(a == 3).tolist() == (ta == 3).tolist()
    x = clgrad.tensor([1.0, 2.0], device=device)
    assert np.asarray(x == 1j).tolist() == [False, False] and np.asarray(1 == a).tolist() == (1 == ta).tolist()
    assert np.asarray(clgrad.isclose(a, b)).tolist() == torch.isclose(ta, tb).tolist()
    assert np.asarray(clgrad.isclose(a, a, equal_nan=True)).tolist() == torch.isclose(ta, ta, equal_nan=True).tolist()
    assert clgrad.allclose(a[:1], b[:1]) and not clgrad.allclose(a, b)


def test_in_place_and_out(device):
    z = clgrad.tensor(Z.astype(np.complex64), device=device)
    z.mul_(1j)
    z += 1
    np.testing.assert_allclose(np.asarray(z), Z.astype(np.complex64) * 1j + 1, rtol=1e-6)
    out = clgrad.empty(3, 4, dtype=clgrad.cfloat, device=device)
    clgrad.add(z, z, out=out)
    np.testing.assert_allclose(np.asarray(out), 2 * np.asarray(z), rtol=1e-6)


def test_conj_flags():
    z = clgrad.tensor([[1 + 1j]])
    assert z.conj().is_conj() and not z.conj().resolve_conj().is_conj() and not z.conj_physical().is_conj()
    assert not z.is_conj() and not z.resolve_neg().is_neg()
    assert not z.conj().conj().is_conj() and z.H.tolist() == [[1 - 1j]]
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        z.abs_()
    x = clgrad.ones(2)
    assert x.conj() is x and clgrad.resolve_conj(x) is x


def test_gradient_convention_is_torchs():
    """d/dz of |z|^2 is 2z in PyTorch's convention (dL/dx + i dL/dy), and the leaf's grad is complex."""
    z = clgrad.tensor([1 + 2j, -0.5j], requires_grad=True)
    (z.abs() ** 2).sum().backward()
    assert z.grad.dtype is clgrad.complex64
    np.testing.assert_allclose(np.asarray(z.grad), [2 + 4j, -1j], rtol=1e-6)


# ---- the guard: ops without a complex composition refuse complex inputs with PyTorch's error -------------------
UNSUPPORTED = {
    "erf": lambda z: z.erf(), "relu": lambda z: clgrad.relu(z), "sigmoid": lambda z: z.sigmoid(),
    "lt": lambda z: z < 1, "maximum": lambda z: clgrad.maximum(z, z), "floor": lambda z: z.floor(),
    "max": lambda z: z.max(), "amax": lambda z: z.amax(0), "prod": lambda z: z.prod(),
    "argmax": lambda z: z.argmax(), "cumsum": lambda z: z.cumsum(0), "cumprod": lambda z: z.cumprod(1),
    "sort": lambda z: z.sort(),
    "index": lambda z: z[clgrad.tensor([0, 1], device=z.device)], "gather": lambda z: z.gather(0, clgrad.zeros(
        1, 4, dtype=clgrad.int64, device=z.device)), "softmax": lambda z: z.softmax(0),
    "clamp": lambda z: z.clamp(0, 1), "atan2": lambda z: clgrad.atan2(z, z), "tanh": lambda z: z.tanh(),
}


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_ops_raise_not_silent(device, name):
    """Each op either matches torch or raises NotImplementedError naming the op, the dtype and the device: never
    a kernel reading the (re, im) pairs as reals."""
    z = clgrad.tensor(Z.astype(np.complex64), device=device)
    try:
        got = UNSUPPORTED[name](z)
    except NotImplementedError as e:
        assert "not implemented for 'ComplexFloat'" in str(e) and str(z.device) in str(e), str(e)
        return
    tz = torch.tensor(Z.astype(np.complex64))
    want = UNSUPPORTED[name](tz) if name not in ("index", "gather") else None
    if want is not None:
        got = got[0] if isinstance(got, tuple) else got
        want = want[0] if isinstance(want, tuple) else want
        np.testing.assert_allclose(np.asarray(got.cpu()), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["div_real", "exp_log_sqrt", "pow_real", "matmul", "complex_polar"])
def test_gradcheck_through_pair_views(device, name):
    """Finite differences (float64) of the compositions, seen as real functions of the (re, im) pairs."""
    if not fp64_ok(device):
        pytest.skip("float64 finite differences need cl_khr_fp64")
    fn, values = CASES[name]

    def f(*pairs):
        y = fn(clgrad, *[clgrad.view_as_complex(p) if p.dim() == 3 else p for p in pairs])
        return clgrad.view_as_real(y) if y.dtype.is_complex else y

    values = [v[:2, :3] for v in values]  # finite differences cost two calls per real input element
    inputs = [clgrad.tensor(np.stack([v.real, v.imag], -1) if np.iscomplexobj(v) else v, dtype=clgrad.float64,
                            device=device, requires_grad=True) for v in values]
    assert clgrad.autograd.gradcheck(f, inputs)


def test_gradient_at_zero_is_torchs(device):
    """abs, angle and sgn have PyTorch's gradient 0 at z = 0, not 0/0."""
    grads = []
    for m, dev in ((torch, "cpu"), (clgrad, device)):
        z = m.tensor([0j, 1 + 1j, -2 + 0j], device=dev, requires_grad=True)
        (z.abs().sum() + z.angle().sum() + (z.sgn() * z.sgn()).abs().sum()).backward()
        grads.append(np.asarray(z.grad.cpu()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-7)
