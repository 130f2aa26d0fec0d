"""Tests generated from the op registry: every elementwise record's samples, on every device.

For each record: forward against its numpy reference in float32 and float64 (and int32 where the op allows
integers), in a contiguous and a transposed layout; then, for a differentiable op, gradcheck and gradgradcheck of
its rule in float64 (float32 with wider tolerances on a device without fp64), and for a NONDIFF op, that nothing
flows back. The bindings a record asks for exist. A new op is tested here without a line of test code; the
registry's own rules (a float op needs a gradient rule or NONDIFF) are checked when it is built. Every reduction
record is checked the same way through the backend's ``reduce`` primitive.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import clgrad
from clgrad import backends
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.backends import common
from clgrad.ops import elementwise as E
from clgrad.registry import elementwise as R
from clgrad.registry import reductions as RED
from tests.conftest import fp64_ok
from tests.helpers import assert_close, grad_precision, make

PUBLIC = [n for n, e in R.OPS.items() if e.public != "internal"]
DIFF = [n for n, e in R.OPS.items() if e.differentiable and e.sample.grad]
SHAPE = (3, 4)


def _arrays(rec: R.EwOp, dtype: str, seed: int) -> list:
    rng = np.random.default_rng(seed)
    n = rec.arity - len(rec.sample.params)
    out = []
    for k, (lo, hi) in enumerate(rec.sample.domains(n)):
        if k in rec.bool_args:
            out.append(rng.random(SHAPE) > 0.5)
        elif np.dtype(dtype).kind == "i":
            a = rng.integers(max(int(lo), -5) if lo < 0 else 1, max(int(hi), 2) + 1, SHAPE).astype(dtype)
            if k == 1 and rec.int_div_check:  # an integer divisor of 0 raises ZeroDivisionError (test_deferred_errors)
                a[a == 0] = 1
            out.append(a)
        else:
            out.append(rng.uniform(lo, hi, SHAPE).astype(dtype))
    return out


def _dtypes(rec: R.EwOp) -> list:
    out = [d for d in ("float32", "float64") if "f" in rec.allow]
    # integers where they compute as integers (float parameters would promote them: custom front ends decide that)
    return out + (["int32"] if "i" in rec.allow and rec.kind != "float" and not rec.sample.params else [])


CASES = [(name, dt) for name in R.OPS for dt in _dtypes(R.OPS[name])]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_forward_matches_numpy(device, name, dtype, layout):
    rec = R.OPS[name]
    if dtype == "float64" and not fp64_ok(device):
        pytest.skip("no cl_khr_fp64")
    arrays = _arrays(rec, dtype, seed=len(name))
    tensors = [make(a, device, layout) for a in arrays]
    got = E.FUNCTIONS[name].apply(*tensors, *rec.sample.params)
    compute = np.float64 if dtype == "float64" else np.float32 if dtype == "float32" or rec.kind == "float" else dtype
    args = [a if k in rec.bool_args else a.astype(compute) for k, a in enumerate(arrays)]
    with np.errstate(all="ignore"):
        want = np.asarray(rec.np(*args, *[np.asarray(p, compute) for p in rec.sample.params]))
    want = want.astype(np.bool_ if rec.predicate else compute)
    assert_close(got, want)


@pytest.mark.parametrize("name", DIFF)
def test_gradient(device, name):
    rec = R.OPS[name]
    dtype, kw = grad_precision(device)
    arrays = _arrays(rec, dtype, seed=len(name) + 1)
    inputs = tuple(make(a, device) if a.dtype == bool else
                   clgrad.tensor(a, device=device, requires_grad=True) for a in arrays)

    def fn(*xs):
        return E.FUNCTIONS[name].apply(*xs, *rec.sample.params)

    assert gradcheck(fn, inputs, **kw)
    assert gradgradcheck(fn, inputs, **kw)


@pytest.mark.parametrize("name", [n for n, e in R.OPS.items() if e.grad is R.NONDIFF and e.public != "internal"])
def test_nondiff_ops_pass_no_gradient(device, name):
    rec = R.OPS[name]
    x = clgrad.tensor(_arrays(rec, "float32", 0)[0], device=device, requires_grad=True)
    others = [clgrad.tensor(a, device=device) for a in _arrays(rec, "float32", 1)[1:]]
    y = E.FUNCTIONS[name].apply(x, *others, *rec.sample.params)
    if y.requires_grad:
        y.sum().backward()
        assert x.grad is None or not x.grad.abs().sum().item()


@pytest.mark.parametrize("name", [n for n, e in R.OPS.items() if e.public == "auto"])
def test_generated_bindings(name):
    rec = R.OPS[name]
    for alias in (name, *rec.aliases):
        assert callable(getattr(clgrad, alias)), alias
        assert callable(getattr(clgrad.Tensor, alias)), alias
    assert callable(getattr(clgrad.Tensor, name + "_"))


def test_node_names_follow_pytorch():
    x = clgrad.ones(2, requires_grad=True)
    assert type(clgrad.logaddexp(x, x).grad_fn).__name__ == "LogaddexpBackward0"
    assert type(x.square().grad_fn).__name__ == "PowBackward0"
    assert type((2 ** x).grad_fn).__name__ == "PowBackward2"
    assert type((1 - x).grad_fn).__name__ == "RsubBackward1"


def test_float_op_without_gradient_fails_the_registry():
    bad = dataclasses.replace(R.OPS["exp"], grad=None)
    with pytest.raises(R.RegistryError, match="'newop' computes floats but has no gradient rule"):
        R.check({**R.OPS, "newop": bad})
    R.check({**R.OPS, "newop": dataclasses.replace(bad, grad=R.NONDIFF)})  # an explicit mark is enough
    R.check({**R.OPS, "newop": dataclasses.replace(bad, allow="bui")})  # integer ops have no gradient


def test_registry_rejects_malformed_records():
    for change, match in [(dict(saves="output"), "saves must be"), (dict(public="yes"), "public must be"),
                          (dict(reads=((0,),)), "one entry per operand")]:
        with pytest.raises(R.RegistryError, match=match):
            R.check({"newop": dataclasses.replace(R.OPS["atan2"], **change)})
    with pytest.raises(R.RegistryError, match="only unary and binary ops get generated bindings"):
        R.check({"newop": dataclasses.replace(R.OPS["clamp"], public="auto")})


# ---- reductions: every record of registry/reductions.py, through the backend primitive -----------------------
RED_CASES = [(op, dt, dims) for op in RED.REDUCTIONS for dt in ("float32", "int32", "bool")
             for dims in ((1,), (0, 2), (0, 1, 2))]


@pytest.mark.parametrize("op,dtype,dims", RED_CASES, ids=[f"{o}-{d}-{''.join(map(str, m))}" for o, d, m in RED_CASES])
def test_reduction_matches_its_record(device, op, dtype, dims):
    """The ``reduce`` primitive against the record's numpy function, in the record's accumulator dtype (and the
    first index of the result for max/min), on a transposed input."""
    rec = RED.REDUCTIONS[op]
    rng = np.random.default_rng(len(op))
    host = rng.integers(-3, 4, (4, 5, 3)) if dtype != "float32" else rng.uniform(-2, 2, (4, 5, 3))
    host = (host > 0) if dtype == "bool" else host.astype(dtype)
    src = make(host, device, "transposed")
    acc = common.acc_dtype(op, src.dtype, src.dtype)
    out_dtype = clgrad.bool if rec.mask else acc if rec.acc == "wide" else src.dtype
    kept = tuple(1 if d in dims else n for d, n in enumerate(host.shape))
    out = clgrad.empty(kept, dtype=out_dtype, device=device)
    idx = clgrad.empty(kept, dtype=clgrad.int64, device=device) if rec.arg and len(dims) == 1 else None
    backends.get(out.device).reduce(op, src, dims, out, idx)
    arr = host != 0 if rec.mask else host.astype(acc.np)
    assert_close(out, rec.np(arr, axis=dims, keepdims=True).astype(out_dtype.np))
    if idx is not None:
        assert_close(idx, np.expand_dims(rec.np_arg(arr, axis=dims[0]), dims[0]))
