"""clgrad.compile: elementwise chains fused into one kernel, bit-identical to eager; everything else eager."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import compiler
from tests.helpers import make


def _rand(shape, dtype="float32", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _kernels(fn, *args):
    """The kernel names one call of ``fn`` launches."""
    with clgrad.profiler.profile() as prof:
        fn(*args)
        clgrad.opencl.synchronize()
    return [e.key for e in prof.key_averages() for _ in range(e.count)]


# (name, fn, argument shapes): chains of float ops over arguments, broadcasts and Python scalars
CHAINS = [
    ("mul-add", lambda a, b, c: a * b + c, [(30, 40)] * 3),
    ("bias-activations", lambda x, bias: (x + bias).relu().sigmoid() * 2.0, [(30, 40), (40,)]),
    ("unary-mix", lambda x, y: clgrad.exp(x) - clgrad.tanh(y) / 3 + F.silu(x), [(7, 13), (7, 13)]),
    ("reuse", lambda a, b: (a * b) * (a * b) + a, [(64,), (64,)]),
    ("column-bias", lambda x, col: F.leaky_relu(x * col - 0.5, 0.1), [(16, 9), (16, 1)]),
    ("rsub-pow", lambda x, y: (1.0 - x) ** 2 + y.abs().sqrt(), [(5, 6), (5, 6)]),
]


def _eager_and_compiled(fn, arrays, device, layouts=None):
    layouts = layouts or ["contiguous"] * len(arrays)
    args = [make(a, device, lay) for a, lay in zip(arrays, layouts)]
    compiled = clgrad.compile(fn)
    want = fn(*args).cpu().numpy()
    first = compiled(*args).cpu().numpy()  # traced (runs eagerly)
    second = compiled(*args).cpu().numpy()  # fused where it can be
    return compiled, args, want, first, second


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", CHAINS, ids=[c[0] for c in CHAINS])
def test_chains_fuse_and_match_eager_bit_for_bit(device, name, fn, shapes, dtype):
    if dtype == "float64" and device != "cpu" and not clgrad.opencl.get_device_properties(device).fp64:
        pytest.skip("no fp64")
    arrays = [_rand(s, dtype, seed=k) for k, s in enumerate(shapes)]
    compiled, args, want, first, second = _eager_and_compiled(fn, arrays, device)
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(second, want)  # same statements, same rounding: bit-identical
    if device != "cpu":
        (plan,) = compiled.plans.values()
        assert isinstance(plan, compiler._Plan), "an elementwise chain should fuse"
        assert _kernels(compiled, *args) == [f"{plan.name}_{'float' if dtype == 'float32' else 'double'}"]


@pytest.mark.parametrize("layouts", [["transposed", "sliced", "offset"], ["sliced", "contiguous", "transposed"]])
def test_strided_arguments(device, layouts):
    arrays = [_rand((12, 10), seed=k) for k in range(3)]
    compiled, args, want, first, second = _eager_and_compiled(lambda a, b, c: (a - b) * c + 1.5, arrays, device,
                                                              layouts)
    np.testing.assert_array_equal(second, want)
    # the plan reads each argument through its own view: a new call with new values gives new results
    again = [make(a + 1, device, lay) for a, lay in zip(arrays, layouts)]
    np.testing.assert_array_equal(compiled(*again).cpu().numpy(), ((again[0] - again[1]) * again[2] + 1.5).cpu().numpy())


def _sum_inside(a, b):
    return (a * b).sum() + a


def _inplace(a, b):
    a.add_(1.0)
    return a * b


def _two_outputs(a, b):
    return a + b, a * b


def _host_read(a, b):
    return a * b + float((a * 0).sum().item())


def _ints(a, b):
    return (a.to(clgrad.int32) + 1) * 2


EAGER_CASES = [_sum_inside, _inplace, _two_outputs, _host_read, _ints,
               lambda a, b: a @ b.t() + 1.0, lambda a, b: clgrad.where(a > b, a, b) * 2.0,
               lambda a, b: F.dropout(a, 0.5, training=True) + b]


@pytest.mark.parametrize("fn", EAGER_CASES, ids=lambda f: getattr(f, "__name__", "lambda"))
def test_everything_else_stays_eager(device, fn):
    arrays = [_rand((6, 6), seed=k) for k in range(2)]
    clgrad.manual_seed(0)
    want = fn(*[make(a, device) for a in arrays])
    compiled = clgrad.compile(fn)
    for _ in range(2):
        clgrad.manual_seed(0)
        got = compiled(*[make(a, device) for a in arrays])
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g.cpu().numpy(), w.cpu().numpy())
    assert not any(isinstance(p, compiler._Plan) for p in compiled.plans.values())
    strict = clgrad.compile(fn, fullgraph=True)
    with pytest.raises(RuntimeError, match="fullgraph=True"):
        strict(*[make(a, device) for a in arrays])


def test_closure_tensors_are_never_baked_in(device):
    """A tensor the function did not receive could change between calls: such a function stays eager."""
    state = {"w": make(_rand((4,)), device)}
    compiled = clgrad.compile(lambda x: x * state["w"] + 1.0)
    x = make(_rand((4,), seed=1), device)
    compiled(x)
    state["w"] = make(_rand((4,), seed=2), device)
    np.testing.assert_array_equal(compiled(x).cpu().numpy(), (x * state["w"] + 1.0).cpu().numpy())


def test_aliased_arguments_at_trace_time_stay_eager(device):
    """Traced with f(x, x), the reads of both arguments come from one storage: replaying that on f(x, y) would read
    x twice, so such a trace is not fused."""
    compiled = clgrad.compile(lambda a, b: a * 2.0 + b)
    x, y = make(_rand((8,)), device), make(_rand((8,), seed=1), device)
    compiled(x, x)
    np.testing.assert_array_equal(compiled(x, y).cpu().numpy(), (x * 2.0 + y).cpu().numpy())
    np.testing.assert_array_equal(compiled(x, x[::1]).cpu().numpy(), (x * 2.0 + x).cpu().numpy())


def test_autograd_runs_eagerly_and_backpropagates(device):
    compiled = clgrad.compile(lambda a, b: (a * b).sigmoid() + a)
    a = make(_rand((5,)), device).requires_grad_()
    b = make(_rand((5,), seed=1), device)
    for _ in range(2):
        a.grad = None
        compiled(a, b).sum().backward()
    s = 1 / (1 + np.exp(-(a.detach().cpu().numpy() * b.cpu().numpy())))
    np.testing.assert_allclose(a.grad.cpu().numpy(), s * (1 - s) * b.cpu().numpy() + 1, rtol=1e-5)
    with clgrad.no_grad():  # without grad mode the same call can fuse
        compiled(a, b)
        np.testing.assert_array_equal(compiled(a, b).cpu().numpy(), ((a * b).sigmoid() + a).cpu().numpy())


def test_signatures_scalars_and_sizes(device):
    compiled = clgrad.compile(lambda x, k: x * k + x)
    for shape, k in [((3, 4), 2.0), ((3, 4), 2.0), ((3, 4), -1.5), ((5,), 2.0), ((0, 4), 2.0), ((0, 4), 2.0)]:
        x = make(_rand(shape), device)
        np.testing.assert_array_equal(compiled(x, k).cpu().numpy(), (x * k + x).cpu().numpy())
    assert len(compiled.plans) == (4 if device != "cpu" else 0)


def test_compile_forms():
    model = clgrad.nn.Linear(3, 2)
    assert clgrad.compile(model) is model
    fn = lambda x: x + 1  # noqa: E731
    assert clgrad.compile(fn, disable=True) is fn
    deco = clgrad.compile(fullgraph=False, mode="max-autotune")(fn)
    assert deco(clgrad.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="expected a callable"):
        clgrad.compile(3)


def test_nested_compiled_calls(device):
    inner = clgrad.compile(lambda a, b: a * b + 1.0)
    outer = clgrad.compile(lambda a, b: inner(a, b).relu() - b)
    a, b = make(_rand((9, 4)), device), make(_rand((9, 4), seed=1), device)
    want = ((a * b + 1.0).relu() - b).cpu().numpy()
    for _ in range(3):
        np.testing.assert_array_equal(outer(a, b).cpu().numpy(), want)
    inner(a, b)  # the inner function traced on its own later: still exact
    for _ in range(2):
        np.testing.assert_array_equal(inner(a, b).cpu().numpy(), (a * b + 1.0).cpu().numpy())
        np.testing.assert_array_equal(outer(a, b).cpu().numpy(), want)
