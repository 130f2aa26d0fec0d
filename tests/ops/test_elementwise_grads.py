"""Gradients of the elementwise math tail: gradcheck and gradgradcheck per rule, and PyTorch's conventions at kinks, ties and non-finite values."""
from __future__ import annotations

import types

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.ops import pointwise as P
from tests.helpers import make, to_numpy
from tests.ops.test_elementwise_math import CL, _skip_fp64, _torch_ns, inf, nan


# ---- gradients: gradcheck and gradgradcheck over every rule ---------------------------------------
def _u(*v):
    return np.array(v, np.float64)


X = _u(-3.5, -2.2, -0.7, -0.3, 0.2, 0.6, 1.4, 2.9, 6.5)  # away from every kink of the activations
POS = _u(0.3, 0.9, 1.7, 2.6, 4.1)
UNIT = _u(-0.8, -0.35, 0.1, 0.45, 0.7)  # inside (-1, 1)
PROB = _u(0.03, 0.2, 0.5, 0.8, 0.97)
A, B = _u(2.3, -1.7, 5.1, -0.6, 0.45), _u(1.1, 0.9, -2.2, 0.35, -0.8)
COND = np.array([True, False, True, False, True])

GRAD_CASES = [  # (id, fn over the tensors, float64 inputs; bool arrays enter as conditions without grad)
    ("identity", lambda x: P.apply("identity", x), [X]),
    ("add", lambda a, b: a + b, [A, B]),
    ("add_alpha", lambda a, b: clgrad.add(a, b, alpha=-2.5), [A, B]),
    ("sub", lambda a, b: a - b, [A, B]),
    ("rsub_scalar", lambda a: 2 - a, [A]),
    ("mul", lambda a, b: a * b, [A, B]),
    ("mul_scalar", lambda a: a * 3.5, [A]),
    ("div", lambda a, b: a / b, [A, B]),
    ("rdiv_scalar", lambda b: 2.0 / b, [B]),
    ("pow", lambda a, b: a**b, [POS, B]),
    ("pow_scalar", lambda a: a**2.5, [POS]),
    ("pow_int_scalar", lambda a: a**3, [A]),
    ("pow_zero", lambda a: a**0, [A]),
    ("rpow_scalar", lambda b: 1.7**b, [B]),
    ("maximum", lambda a, b: clgrad.maximum(a, b), [A, B]),
    ("minimum", lambda a, b: clgrad.minimum(a, b), [A, B]),
    ("fmax", lambda a, b: clgrad.fmax(a, b), [A, B]),
    ("fmin", lambda a, b: clgrad.fmin(a, b), [A, B]),
    ("clamp", lambda a: a.clamp(-1.0, 1.0), [A]),
    ("clamp_tensors", lambda a, lo, hi: a.clamp(lo, hi), [A, _u(0.0, -1.0, 1.0, 0.2, 0.0), _u(1.0, 2.0, 0.5, 0.5, 0.3)]),
    ("clamp_tensors_inverted", lambda a, lo, hi: a.clamp(lo, hi), [A, _u(3.0, 2.0, 6.0, 1.0, 0.9),
                                                                    _u(1.0, 0.5, 5.0, 0.0, 0.1)]),
    ("clamp_min", lambda a: a.clamp(min=0.0), [A]),
    ("clamp_min_tensor", lambda a, b: clgrad.clamp_min(a, b), [A, B]),
    ("clamp_max", lambda a, b: clgrad.clamp(a, max=b), [A, B]),
    ("where", lambda a, b: clgrad.where(make(COND, a.device), a, b), [A, B]),
    ("where_scalar", lambda a: clgrad.where(make(COND, a.device), a, 0.5), [A]),
    ("atan2", lambda a, b: clgrad.atan2(a, b), [A, B]),
    ("hypot", lambda a, b: clgrad.hypot(a, b), [A, B]),
    ("fmod", lambda a, b: clgrad.fmod(a, b), [A, B]),
    ("remainder", lambda a, b: a % b, [A, B]),
    ("copysign", lambda a, b: clgrad.copysign(a, b), [A, B]),
    ("xlogy", lambda a, b: clgrad.xlogy(a, b), [A, POS]),
    ("xlogy_scalar_x", lambda b: clgrad.xlogy(2.0, b), [POS]),
    ("lerp", lambda a, b: clgrad.lerp(a, b, 0.3), [A, B]),
    ("lerp_tensor", lambda a, b, w: clgrad.lerp(a, b, w), [A, B, _u(0.1, 0.7, -0.4, 1.3, 0.5)]),
    ("addcmul", lambda a, b, c: clgrad.addcmul(a, b, c, value=-1.5), [A, B, POS]),
    ("addcdiv", lambda a, b, c: clgrad.addcdiv(a, b, c, value=0.5), [A, B, POS]),
    ("neg", lambda a: -a, [A]),
    ("abs", lambda a: a.abs(), [A]),
    ("sqrt", lambda a: a.sqrt(), [POS]),
    ("rsqrt", lambda a: a.rsqrt(), [POS]),
    ("exp", lambda a: a.exp(), [A]),
    ("exp2", lambda a: clgrad.exp2(a), [A]),
    ("expm1", lambda a: a.expm1(), [A]),
    ("log", lambda a: a.log(), [POS]),
    ("log2", lambda a: a.log2(), [POS]),
    ("log10", lambda a: a.log10(), [POS]),
    ("log1p", lambda a: a.log1p(), [POS]),
    ("sin", lambda a: a.sin(), [A]),
    ("cos", lambda a: a.cos(), [A]),
    ("tan", lambda a: a.tan(), [UNIT]),
    ("asin", lambda a: a.asin(), [UNIT]),
    ("acos", lambda a: a.acos(), [UNIT]),
    ("atan", lambda a: a.atan(), [A]),
    ("sinh", lambda a: a.sinh(), [A]),
    ("cosh", lambda a: a.cosh(), [A]),
    ("tanh", lambda a: a.tanh(), [A]),
    ("sigmoid", lambda a: a.sigmoid(), [A]),
    ("relu", lambda a: a.relu(), [A]),
    ("reciprocal", lambda a: a.reciprocal(), [A]),
    ("square", lambda a: a.square(), [A]),
    ("sign", lambda a: a.sign(), [A]),
    ("floor", lambda a: a.floor(), [A]),
    ("ceil", lambda a: a.ceil(), [A]),
    ("round", lambda a: a.round(), [A]),
    ("trunc", lambda a: a.trunc(), [A]),
    ("frac", lambda a: a.frac(), [A]),
    ("erf", lambda a: a.erf(), [A]),
    ("erfc", lambda a: a.erfc(), [A]),
    ("nan_to_num", lambda a: a.nan_to_num(), [A]),
    ("logit", lambda p: p.logit(), [PROB]),
    ("logit_eps", lambda p: p.logit(eps=0.1), [PROB]),
    ("gelu", lambda x: CL.gelu(x), [X]),
    ("gelu_tanh", lambda x: CL.gelu(x, approximate="tanh"), [X]),
    ("silu", lambda x: CL.silu(x), [X]),
    ("elu", lambda x: CL.elu(x, alpha=0.7), [X]),
    ("selu", lambda x: CL.selu(x), [X]),
    ("celu", lambda x: CL.celu(x, alpha=2.0), [X]),
    ("leaky_relu", lambda x: CL.leaky_relu(x, 0.2), [X]),
    ("softplus", lambda x: CL.softplus(x, beta=2.0, threshold=3.0), [X]),
    ("hardtanh", lambda x: CL.hardtanh(x, -2.0, 2.5), [X]),
    ("relu6", lambda x: CL.relu6(x), [X]),
    ("hardsigmoid", lambda x: CL.hardsigmoid(x), [X]),
    ("hardswish", lambda x: CL.hardswish(x), [X]),
    ("mish", lambda x: CL.mish(x), [X]),
    ("logsigmoid", lambda x: CL.logsigmoid(x), [X]),
]
def _grad_inputs(arrays, device):
    return tuple(make(a, device) if a.dtype == bool else
                 clgrad.tensor(a, dtype=clgrad.float64, device=device, requires_grad=True) for a in arrays)


@pytest.mark.parametrize("fn,arrays", [c[1:] for c in GRAD_CASES], ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, fn, arrays):
    _skip_fp64(device, "float64")
    inputs = _grad_inputs(arrays, device)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# ---- PyTorch's conventions at kinks, ties and non-finite values --------------------------------------
KINKS = [  # (id, fn(lib, *tensors), inputs): gradients compared with torch's at exactly the awkward points
    ("relu", lambda t, x: t.relu(x), [_u(0.0, -0.0, nan, 1.0, -1.0)]),
    ("leaky_relu", lambda t, x: t.leaky_relu(x, 0.2), [_u(0.0, -0.0, nan, 1.0, -1.0)]),
    ("elu", lambda t, x: t.elu(x, alpha=2.0), [_u(0.0, -0.0, nan, 1.0, -1.0)]),
    ("selu", lambda t, x: t.selu(x), [_u(0.0, -0.0, nan, 1.0, -1.0)]),
    ("celu", lambda t, x: t.celu(x, alpha=0.5), [_u(0.0, nan, 1.0, -1.0)]),
    ("hardtanh", lambda t, x: t.hardtanh(x, -1.0, 2.0), [_u(-1.0, 2.0, nan, 0.0, 3.0, -inf, inf)]),
    ("relu6", lambda t, x: t.relu6(x), [_u(0.0, 6.0, nan, 3.0, 7.0)]),
    ("hardsigmoid", lambda t, x: t.hardsigmoid(x), [_u(-3.0, 3.0, nan, 0.0, -4.0, 4.0)]),
    ("hardswish", lambda t, x: t.hardswish(x), [_u(-3.0, 3.0, nan, 0.0, -4.0, 4.0)]),
    ("softplus_threshold", lambda t, x: t.softplus(x, beta=2.0, threshold=4.0), [_u(2.0, 2.5, 1.5, -1e3, 1e3)]),
    ("logsigmoid", lambda t, x: t.logsigmoid(x), [_u(0.0, -1e3, 1e3, nan)]),
    ("silu", lambda t, x: t.silu(x), [_u(0.0, -1e3, 1e3)]),
    ("mish", lambda t, x: t.mish(x), [_u(0.0, -50.0, 50.0)]),
    ("gelu", lambda t, x: t.gelu(x), [_u(0.0, -10.0, 10.0)]),
    ("abs", lambda t, x: t.abs(x), [_u(0.0, -0.0, 1.0, -1.0)]),
    ("clamp_scalar_bounds", lambda t, x: t.clamp(x, -1.0, 1.0), [_u(-1.0, 1.0, 0.0, 2.0, nan)]),
    ("clamp_min_tie", lambda t, x: t.clamp(x, min=0.5), [_u(0.5, 0.0, 1.0)]),
    ("clamp_max_tie", lambda t, x: t.clamp(x, max=0.5), [_u(0.5, 0.0, 1.0)]),
    ("clamp_tensor_ties", lambda t, x, lo, hi: t.clamp(x, lo, hi),
     [_u(0.0, 1.0, 2.0, 5.0, 0.5), _u(0.0, 0.0, 3.0, 1.0, 0.5), _u(1.0, 1.0, 1.0, 0.0, 0.5)]),
    ("clamp_min_tensor_tie", lambda t, x, lo: t.clamp(x, min=lo), [_u(0.0, 1.0, 2.0), _u(0.0, 2.0, 1.0)]),
    ("maximum_ties", lambda t, a, b: t.maximum(a, b), [_u(1.0, 2.0, 0.0, nan), _u(1.0, 1.0, 3.0, 1.0)]),
    ("minimum_ties", lambda t, a, b: t.minimum(a, b), [_u(1.0, 2.0, 0.0, nan), _u(1.0, 1.0, 3.0, 1.0)]),
    ("fmax_ties_nan", lambda t, a, b: t.fmax(a, b), [_u(1.0, 2.0, 0.0, nan, 1.0), _u(1.0, 1.0, 3.0, 1.0, nan)]),
    ("fmin_ties_nan", lambda t, a, b: t.fmin(a, b), [_u(1.0, 2.0, 0.0, nan, 1.0), _u(1.0, 1.0, 3.0, 1.0, nan)]),
    ("pow_zero_base", lambda t, a, b: t.pow(a, b), [_u(0.0, 0.0, 0.0, 2.0), _u(0.0, 2.0, -1.0, 0.0)]),
    ("pow_zero_exponent", lambda t, a: t.pow(a, 0.0), [_u(0.0, 1.0, -2.0)]),
    ("rpow_zero_base", lambda t, b: t.pow(0.0, b), [_u(0.0, 2.0, -1.0)]),
    ("xlogy_zeros", lambda t, a, b: t.xlogy(a, b), [_u(0.0, 0.0, 0.0, 1.0), _u(0.0, -1.0, 2.0, 0.5)]),
    ("nan_to_num", lambda t, x: t.nan_to_num(x), [_u(nan, inf, -inf, 1.0)]),
    ("logit_eps_bounds", lambda t, p: t.logit(p, eps=0.25), [_u(0.25, 0.75, 0.1, 0.9, 0.5)]),
    ("logit_outside", lambda t, p: t.logit(p), [_u(-0.5, 1.5, 0.5)]),
    ("lerp_tensor", lambda t, a, b, w: t.lerp(a, b, w), [_u(1.0, 2.0), _u(3.0, -1.0), _u(0.5, 1.5)]),
    ("where", lambda t, a, b: t.where(t.tensor([True, False, True]), a, b), [_u(1.0, 2.0, 3.0), _u(4.0, 5.0, 6.0)]),
    ("sign_floor", lambda t, x: t.sign(x) + t.floor(x) + t.round(x), [_u(0.0, 0.5, -1.5)]),
]


@pytest.mark.parametrize("fn,arrays", [k[1:] for k in KINKS], ids=[k[0] for k in KINKS])
def test_gradients_match_torch_at_kinks(device, fn, arrays):
    torch, ns = _torch_ns()
    _skip_fp64(device, "float64")
    ours = [clgrad.tensor(a, dtype=clgrad.float64, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    ns.tensor = torch.tensor
    cl = types.SimpleNamespace(**(vars(CL) | {"tensor": lambda v: clgrad.tensor(v, device=device),
                                              "where": clgrad.where, "clamp": clgrad.clamp}))
    out_t = fn(ns, *theirs)
    (out_t * torch.arange(1, out_t.numel() + 1, dtype=torch.float64)).sum().backward()
    out = fn(cl, *ours)
    (out * clgrad.arange(1, out.numel() + 1, dtype=clgrad.float64, device=device)).sum().backward()
    for mine, want in zip(ours, theirs):
        got = np.zeros(mine.shape) if mine.grad is None else to_numpy(mine.grad)
        # (torch's hardsigmoid backward uses a float 1/6 even in float64)
        np.testing.assert_allclose(got, want.grad.numpy(), rtol=1e-7, atol=1e-12, equal_nan=True)


def test_infinite_gradient_through_flat_regions(device):
    # masks select (where), so an infinite upstream gradient gives 0 where the op is flat, as in PyTorch
    x = clgrad.tensor([-1.0, 2.0], device=device, requires_grad=True)
    y = CL.hardtanh(x, 0.0, 1.0) + x.relu() + x.clamp(min=0.0)
    (g,) = clgrad.autograd.grad(y, x, clgrad.tensor([inf, inf], device=device))
    assert to_numpy(g).tolist() == [0.0, inf]


def test_inplace_activation_gradients(device):
    a = clgrad.tensor([-1.5, 0.5, 2.0], device=device, requires_grad=True)
    y = a * 1
    CL.elu(y, alpha=2.0, inplace=True)
    y.addcmul_(a, a, value=0.5)
    y.lerp_(a, 0.25)
    y.sum().backward()
    x = np.array([-1.5, 0.5, 2.0])
    elu_grad = np.where(x <= 0, 2.0 * np.exp(x), 1.0)
    want = 0.75 * (elu_grad + x) + 0.25
    np.testing.assert_allclose(to_numpy(a.grad), want, rtol=1e-5)


def test_node_names(device):
    x = clgrad.ones(2, device=device, requires_grad=True)
    names = {"GeluBackward0": CL.gelu(x), "EluBackward0": CL.selu(x), "LeakyReluBackward0": CL.leaky_relu(x),
             "HardtanhBackward0": CL.relu6(x), "ClampBackward1": x.clamp(min=0), "LerpBackward0": x.lerp(x, 0.5),
             "AddcmulBackward0": x.addcmul(x, x), "XlogyBackward0": x.xlogy(x), "NanToNumBackward0": x.nan_to_num()}
    for name, y in names.items():
        assert y.grad_fn.name() == name
    assert CL.isclose(x, x).requires_grad is False
