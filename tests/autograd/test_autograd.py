"""Autograd against PyTorch: the tensor side, the engine, in-place safety and views, anomaly mode, memory,
gradcheck itself, and the classic tutorial loops. Tests that compare with PyTorch skip without it."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import clgrad
from clgrad.autograd import Function
from tests.conftest import fp64_ok
from tests.helpers import assert_close

A = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
B = np.array([[0.5], [2.0]], np.float32)
M = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
R = np.array([7.0, 8.0, 9.0, 10.0], np.float32)


def leaf(lib, values, device="cpu", dtype=None):
    dt = dtype or lib.float32
    return lib.tensor(np.asarray(values), dtype=dt, device=device, requires_grad=True)


def host(t):
    return None if t is None else np.asarray(t.detach().cpu().numpy(), np.float64)


def compare(fn, device, *arrays, rtol=1e-5, atol=1e-6):
    """Run ``fn(lib, *leaves)`` with clgrad on ``device`` and with PyTorch on cpu; every tensor it returns
    (gradients, results) must agree, and so must the positions of the Nones."""
    torch = pytest.importorskip("torch")
    ours = fn(clgrad, *[leaf(clgrad, a, device) for a in arrays])
    theirs = fn(torch, *[leaf(torch, a) for a in arrays])
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t is None or o is None:
            assert o is None and t is None, f"output {i}: {o} vs {t}"
            continue
        np.testing.assert_allclose(host(o), host(t), rtol=rtol, atol=atol, err_msg=f"output {i}")


def message(lib, device, fn, *arrays):
    """The text of the exception ``fn(lib, *leaves)`` raises."""
    with pytest.raises(Exception) as info:
        fn(lib, *[leaf(lib, a, device) for a in arrays])
    return str(info.value)


def torch_message(fn, device, *arrays):
    """PyTorch's message for the same mistake, in clgrad's words (its module and its OpenCL type names)."""
    torch = pytest.importorskip("torch")
    text = message(torch, "cpu", fn, *arrays).replace("torch.", "clgrad.")
    return text if device == "cpu" else text.replace("clgrad.FloatTensor", "clgrad.opencl.FloatTensor")


# ---- the tensor side ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda d: clgrad.tensor([1.0, 2.0], device=d, requires_grad=True),
    lambda d: clgrad.zeros(2, 3, device=d, requires_grad=True),
    lambda d: clgrad.ones(2, device=d, requires_grad=True),
    lambda d: clgrad.randn(2, device=d, requires_grad=True),
    lambda d: clgrad.full((2,), 3.0, device=d, requires_grad=True),
    lambda d: clgrad.empty(2, device=d).requires_grad_(),
])
def test_requires_grad_at_construction(device, make):
    t = make(device)
    assert t.requires_grad and t.is_leaf and t.grad is None and t.grad_fn is None


def test_requires_grad_attribute_and_errors(device):
    t = clgrad.ones(3, device=device)
    assert not t.requires_grad
    t.requires_grad = True
    assert t.requires_grad and t.requires_grad_(False) is t and not t.requires_grad
    with pytest.raises(RuntimeError, match=r"^only Tensors of floating point dtype can require gradients$"):
        clgrad.tensor([1, 2], device=device).requires_grad_()
    y = clgrad.ones(3, device=device, requires_grad=True) * 2
    assert y.requires_grad_() is y
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_grad_fn_next_functions(device):
    a = leaf(clgrad, A, device)
    b = leaf(clgrad, A, device)
    out = (a * b).exp().sum()
    assert out.grad_fn.name() == "SumBackward0"
    (exp_node, nr), = out.grad_fn.next_functions
    assert exp_node.name() == "ExpBackward0" and nr == 0
    mul_node = exp_node.next_functions[0][0]
    assert mul_node.name() == "MulBackward0"
    (acc_a, _), (acc_b, _) = mul_node.next_functions
    assert acc_a.variable is a and acc_b.variable is b and acc_a.name() == "clgrad::autograd::AccumulateGrad"
    c = a * clgrad.ones(4, device=device)
    assert c.grad_fn.next_functions[1] == (None, 0)  # an input without a gradient
    assert (a * 2).grad_fn.next_functions[0][0] is acc_a  # one accumulator per leaf


def _double(a, b):
    return a.double()


def _half(a, b):
    return a.half()


def _stand_in(op, device):
    """``a.double()`` becomes ``a.half()`` on a device without cl_khr_fp64 (the same conversion node, untracked
    alike): float64 can't be on that device."""
    return _half if op is _double and not fp64_ok(device) else op


# PyTorch's node names for common ops (a: [3, 4] leaf, b: [3, 4] leaf)
NAMES = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a ** 2,
    lambda a, b: a.pow(b), lambda a, b: 2 ** a, lambda a, b: 1 - a, lambda a, b: -a, lambda a, b: a.exp(),
    lambda a, b: a.log(), lambda a, b: a.sin(), lambda a, b: a.tanh(), lambda a, b: a.sigmoid(),
    lambda a, b: a.relu(), lambda a, b: a.abs(), lambda a, b: a.sqrt(), lambda a, b: a.square(),
    lambda a, b: a.sum(), lambda a, b: a.sum(0), lambda a, b: a.mean(), lambda a, b: a.mean(1, keepdim=True),
    lambda a, b: a.prod(), lambda a, b: a.prod(1), lambda a, b: a.max(), lambda a, b: a.min(),
    lambda a, b: a.max(0)[0], lambda a, b: a.min(1)[0], lambda a, b: a.amax(0), lambda a, b: a.amin(1),
    lambda a, b: a.view(12), lambda a, b: a.reshape(2, 6), lambda a, b: a.flatten(), lambda a, b: a.permute(1, 0),
    lambda a, b: a[0], lambda a, b: a[:, 1:3], lambda a, b: a[None], lambda a, b: a[1, 1:], lambda a, b: a.select(1, 2),
    lambda a, b: a.narrow(0, 0, 2), lambda a, b: a.unsqueeze(0), lambda a, b: a[None].squeeze(),
    lambda a, b: a[None].squeeze(0), lambda a, b: a.expand(2, 3, 4), lambda a, b: a.clone(),
    _double, lambda a, b: a.where(a > 0, b), lambda a, b: a.t().reshape(12),
    lambda a, b: a.clamp(0, 1), lambda a, b: a.clamp(min=0), lambda a, b: a.clamp(max=b),
    lambda a, b: a.as_strided((2,), (1,)),
]
# ops routed through entry points outside the autograd core (methods.py, linalg.py)
NAMES_PENDING = [
    lambda a, b: a.t(), lambda a, b: a.transpose(0, 1), lambda a, b: a.mm(b.t()), lambda a, b: a @ b.t(),
]


@pytest.mark.parametrize("op", NAMES + NAMES_PENDING)
def test_node_names_match_torch(device, op):
    torch = pytest.importorskip("torch")
    op = _stand_in(op, device)
    ours = op(leaf(clgrad, M, device), leaf(clgrad, M + 2, device)).grad_fn
    theirs = op(leaf(torch, M), leaf(torch, M + 2)).grad_fn
    assert ours.name() == theirs.name()


def test_is_leaf_retain_grad_and_hooks(device):
    def fn(L, a):
        c = a.exp()
        c.retain_grad()
        c.register_hook(lambda g: g * 10)  # runs before retain_grad stores the gradient, as in PyTorch
        d = c * c
        d.retain_grad()
        d.sum().backward()
        return a.grad, c.grad, d.grad, L.tensor([a.is_leaf, c.is_leaf, c.retains_grad, a.retains_grad])

    compare(fn, device, A, rtol=1e-4)


def test_hooks_replace_gradients_leaf_and_non_leaf(device):
    def fn(L, a, b):
        a.register_hook(lambda g: g * 2)
        c = a * b
        c.register_hook(lambda g: g + 1)
        removed = c.register_hook(lambda g: g * 1000)
        removed.remove()
        (c * 3).sum().backward()
        return a.grad, b.grad

    compare(fn, device, A, R)


def test_retain_grad_accumulates_over_backward_calls(device):
    def fn(L, a):
        c = a * 2
        c.retain_grad()
        d = (c * c).sum()
        d.backward(retain_graph=True)
        d.backward()
        return a.grad, c.grad

    compare(fn, device, A)


def test_detach_and_detach_(device):
    a = leaf(clgrad, A, device)
    d = a.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)  # shares memory, and the version counter
    assert_close(a.detach(), A + 1)
    assert a._version == d._version == 1
    y = a * 2
    assert y.detach_() is y and not y.requires_grad and y.is_leaf
    v = (a * 1)[1:3]
    with pytest.raises(RuntimeError, match=r"^Can't detach views in-place. Use detach\(\) instead."):
        v.detach_()


def test_data_shares_memory_but_is_untracked(device):
    a = leaf(clgrad, A, device)
    y = a * a  # saves a
    data = a.data
    assert not data.requires_grad and data.grad_fn is None
    data.mul_(2)  # invisible to the version counter, as in PyTorch: backward uses the new values
    assert a._version == 0
    y.sum().backward()
    assert_close(a.grad, 4 * A)
    a.data = clgrad.zeros(4, device=device)
    assert a.requires_grad and a.tolist() == [0.0] * 4


UNTRACKED_OPS = [
    lambda a, b: a + b, lambda a, b: a * 2, lambda a, b: a.exp(), lambda a, b: a.clamp(min=0), lambda a, b: -a,
    lambda a, b: a.sum(), lambda a, b: a.mean(0), lambda a, b: a.max(), lambda a, b: a.max(1), lambda a, b: a.amax(0),
    lambda a, b: a.view(12), lambda a, b: a.reshape(4, 3), lambda a, b: a[1:, ::2], lambda a, b: a.t(),
    lambda a, b: a.permute(1, 0), lambda a, b: a.expand(2, 3, 4), lambda a, b: a.clone(), _double,
    lambda a, b: a.mm(b.t()), lambda a, b: a @ b.t(), lambda a, b: a.add_(b), lambda a, b: a.copy_(b),
    lambda a, b: a.__setitem__(0, 1.0), lambda a, b: a.zero_(),
]


@pytest.mark.parametrize("op", UNTRACKED_OPS)
def test_untracked_ops_build_no_graph(device, op, monkeypatch):
    """When nothing requires grad (or grad mode is off) an op makes no graph node at all."""
    from clgrad.autograd.function import BackwardCFunction

    op = _stand_in(op, device)
    made = []
    monkeypatch.setattr(BackwardCFunction, "__new__", lambda cls: made.append(cls) or object.__new__(cls))
    op(clgrad.tensor(M, device=device), clgrad.tensor(M, device=device))
    with clgrad.no_grad():
        w = clgrad.tensor(M, device=device, requires_grad=True)
        op(w, w * 1)
    assert made == []


# ---- backward and grad ---------------------------------------------------------------------------------
def test_broadcast_gradients_are_summed_back(device):
    def fn(L, a, b, m, s):
        return_ = (a * b + m[:2, :1] * s).sum()
        return_.backward()
        return a.grad, b.grad, m.grad, s.grad

    compare(fn, device, A, B, M, np.float32(1.5))


def test_gradients_accumulate_across_calls(device):
    def fn(L, a, b):
        (a + b).sum().backward()  # the same gradient tensor reaches both leaves
        (a * 3).sum().backward()
        (a + b).sum().backward()
        return a.grad, b.grad

    compare(fn, device, A, R)


def test_backward_arguments(device):
    def fn(L, a, b):
        out = a * b
        out.backward(L.ones(4, device=a.device) * 2, retain_graph=True)
        out.backward(gradient=L.full((4,), 0.5, device=a.device), inputs=[a])  # b's .grad untouched
        g_a, g_b = a.grad.clone(), b.grad.clone()
        c = a * 2
        (c * c).sum().backward(inputs=[c])  # a non-leaf input gets its .grad
        return g_a, g_b, c.grad

    compare(fn, device, A, R)


def test_autograd_backward_and_grad(device):
    def fn(L, a, b):
        L.autograd.backward([(a * b).sum(), (a * a).sum()])
        ga, gb = L.autograd.grad((a * b * b).sum(), [a, b])
        c = a.exp()
        (gc_,) = L.autograd.grad((c * b).sum(), c)  # the gradient of a non-leaf, nothing accumulated
        g_out = L.autograd.grad(c, a, grad_outputs=L.ones(4, device=a.device) * 3)[0]
        unused = L.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)[1]
        zeros = L.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)[1]
        return a.grad, b.grad, ga, gb, gc_, g_out, unused, zeros

    compare(fn, device, A, R)


def test_higher_order_gradient_penalty(device):
    def fn(L, x, w, b):
        out = ((x * w).tanh().sum(1) + b).sigmoid().pow(2).sum()
        (g,) = L.autograd.grad(out, x, create_graph=True)
        g.pow(2).sum().backward()
        return x.grad, w.grad, b.grad, g

    rng = np.random.default_rng(0)
    compare(fn, device, rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal(4).astype(np.float32), np.float32(0.3), rtol=1e-4, atol=1e-6)


def test_third_derivative_and_backward_create_graph(device):
    def fn(L, a):
        (g1,) = L.autograd.grad(a.sin().sum(), a, create_graph=True)
        (g2,) = L.autograd.grad(g1.sum(), a, create_graph=True)
        (g3,) = L.autograd.grad(g2.sum(), a)
        b = a.detach().requires_grad_()
        b.pow(3).sum().backward(create_graph=True)
        grad_b = b.grad
        return g1, g2, g3, grad_b, L.tensor(float(grad_b.requires_grad))

    compare(fn, device, A)


def test_second_backward_through_nodes_without_saved_tensors(device):
    def fn(L, a, b):
        out = (a + b).view(2, 2).sum() - a[1:].sum()
        out.backward()
        out.backward()  # nothing was saved, so nothing was freed
        return a.grad, b.grad

    compare(fn, device, A, R)


def test_gradient_dtype_follows_the_input(device):
    dt = clgrad.float64 if fp64_ok(device) else clgrad.float16  # float64 can't be on a device without cl_khr_fp64
    a = leaf(clgrad, [1.0, 2.0], device, dt)
    (a.to(clgrad.float32) * 3).sum().backward()
    assert a.grad.dtype is dt
    assert_close(a.grad, np.array([3.0, 3.0], dt.np))


# ---- error messages (PyTorch's words) ------------------------------------------------------------------
ERRORS = {
    "non_scalar": lambda L, a: (a * 2).backward(),
    "second_backward": lambda L, a: [y.sum().backward() for y in [a.exp()] for _ in range(2)],
    "leaf_in_place": lambda L, a: a.add_(1),
    "view_of_leaf_in_place": lambda L, a: a[1:].mul_(2),
    "saved_output_changed": lambda L, a: [b.add_(1) or b.sum().backward() for b in [a.exp()]],
    "saved_input_changed": lambda L, a: [(c.mul_(2), y.sum().backward()) for c in [a * 1] for y in [c * c]],
    "saved_view_changed": lambda L, a: [(c.add_(1), y.sum().backward()) for c in [a.clone()] for y in [c[1:] * c[1:]]],
    "leaf_changed_under_no_grad": lambda L, a: [(L.no_grad().__enter__(), a.add_(1), L.set_grad_enabled(True),
                                                 y.sum().backward()) for y in [a * a]],
    "no_grad_output": lambda L, a: (a.detach() * 2).sum().backward(),
    "second_output_no_grad": lambda L, a: L.autograd.backward([a.sum(), L.ones(1)]),
    "shape_mismatch": lambda L, a: (a * 2).backward(L.ones(2)),
    "unused_input": lambda L, a: L.autograd.grad(a.sum(), [a, L.ones(2, requires_grad=True)]),
    "input_without_grad": lambda L, a: L.autograd.grad(a.sum(), [L.ones(2)]),
    "empty_inputs": lambda L, a: a.sum().backward(inputs=[]),
    "hook_no_grad": lambda L, a: L.ones(2).register_hook(lambda g: g),
    "retain_grad_no_grad": lambda L, a: L.ones(2).retain_grad(),
}


@pytest.mark.parametrize("name", ERRORS)
def test_error_messages_match_torch(device, name):
    fn = ERRORS[name]
    assert message(clgrad, device, fn, A) == torch_message(fn, device, A)


def test_version_counter_error_text(device):
    """The brief's example, spelled out: ExpBackward0's saved output modified in place."""
    a = leaf(clgrad, A[:3], device)
    b = a.exp()
    b.add_(1)
    kind = "clgrad.FloatTensor" if device == "cpu" else "clgrad.opencl.FloatTensor"
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    assert str(info.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[{kind} [3]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint: enable anomaly "
        "detection to find the operation that failed to compute its gradient, with "
        "clgrad.autograd.set_detect_anomaly(True, check_nan=False).")


# ---- anomaly mode ---------------------------------------------------------------------------------------
def test_detect_anomaly_names_the_nan_node(device):
    torch = pytest.importorskip("torch")

    def fn(L, a):
        with L.autograd.set_detect_anomaly(True):
            (a.sqrt() * 0).sum().backward()

    with pytest.warns(Warning):  # PyTorch and clgrad both print the forward traceback
        ours = message(clgrad, device, fn, [-1.0, 1.0])
    assert ours == "Function 'SqrtBackward0' returned nan values in its 0th output."
    with pytest.warns(Warning):
        assert ours == message(torch, "cpu", fn, [-1.0, 1.0])
    assert not clgrad.autograd.is_anomaly_enabled()


def test_detect_anomaly_custom_function_and_modes(device):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    a = leaf(clgrad, A, device)
    with clgrad.autograd.detect_anomaly(), pytest.warns(UserWarning, match="Error detected in BadBackward"):
        with pytest.raises(RuntimeError, match=r"^Function 'BadBackward' returned nan values in its 0th output.$"):
            Bad.apply(a).exp().sum().backward()
    with clgrad.autograd.set_detect_anomaly(True, check_nan=False):
        assert clgrad.autograd.is_anomaly_enabled() and not clgrad.autograd.is_anomaly_check_nan_enabled()
        Bad.apply(a).sum().backward()  # NaN allowed through
    Bad.apply(a).sum().backward()  # off by default
    clgrad.autograd.set_detect_anomaly(True)
    try:
        assert clgrad.autograd.is_anomaly_enabled()
    finally:
        clgrad.autograd.set_detect_anomaly(False)
    assert not clgrad.autograd.is_anomaly_enabled()


# ---- memory ----------------------------------------------------------------------------------------------
def _opencl_only(device):
    if device == "cpu":
        pytest.skip("memory statistics are per OpenCL device")


def test_training_loop_memory_is_constant(device):
    _opencl_only(device)
    rng = np.random.default_rng(0)
    x = clgrad.tensor(rng.standard_normal((32, 8)), dtype=clgrad.float32, device=device)
    y = clgrad.tensor(rng.standard_normal((32, 1)), dtype=clgrad.float32, device=device)
    w = clgrad.tensor(rng.standard_normal((1, 8)) * 0.1, dtype=clgrad.float32, device=device, requires_grad=True)
    b = clgrad.zeros(1, device=device, requires_grad=True)

    def step():
        h = (x * w).tanh().sum(1, keepdim=True) + b  # ops that save inputs and outputs
        loss = (h - y).pow(2).mean()
        loss.backward()
        with clgrad.no_grad():
            w.sub_(0.05 * w.grad)
            b.sub_(0.05 * b.grad)
        w.grad.zero_()
        b.grad = None  # the next backward allocates it afresh
        return loss.item()

    first = step()
    gc.collect()  # what earlier tests left in reference cycles
    before = clgrad.opencl.memory_allocated(device)
    for _ in range(1000):
        last = step()
    gc.collect()
    assert clgrad.opencl.memory_allocated(device) == before
    assert last < first


def test_graphs_are_freed_without_the_garbage_collector(device):
    _opencl_only(device)
    x = clgrad.randn(64, device=device)
    w = clgrad.randn(64, device=device, requires_grad=True)
    (x * w).sigmoid().exp().sum().backward()  # warm up kernels and caches
    w.grad = None
    gc.collect()
    before = clgrad.opencl.memory_allocated(device)
    gc.disable()
    try:
        for _ in range(50):
            (x * w).sigmoid().exp().tanh().sum()  # never backpropagated: nodes saving their outputs
        for _ in range(50):
            (x * w).sigmoid().exp().sum().backward()
        w.grad = None
        assert clgrad.opencl.memory_allocated(device) == before
    finally:
        gc.enable()


# ---- the classic tutorial loops --------------------------------------------------------------------------
def _two_layer_net(lib, device, relu, steps=60):
    rng = np.random.default_rng(0)
    n, d_in, h, d_out = 32, 20, 16, 4
    x = lib.tensor(rng.standard_normal((n, d_in)), dtype=lib.float32, device=device)
    y = lib.tensor(rng.standard_normal((n, d_out)), dtype=lib.float32, device=device)
    w1 = lib.tensor(rng.standard_normal((d_in, h)) * 0.3, dtype=lib.float32, device=device, requires_grad=True)
    w2 = lib.tensor(rng.standard_normal((h, d_out)) * 0.3, dtype=lib.float32, device=device, requires_grad=True)
    losses = []
    for _ in range(steps):
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            w1 -= 1e-3 * w1.grad
            w2 -= 1e-3 * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return np.array(losses)


def _my_relu(lib):
    class MyReLU(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

    return MyReLU.apply


def test_tutorial_two_layer_net_learns_like_torch(device):
    ours = _two_layer_net(clgrad, device, lambda t: t.clamp(min=0))
    assert ours[-1] < 0.3 * ours[0]
    torch = pytest.importorskip("torch")
    theirs = _two_layer_net(torch, "cpu", lambda t: t.clamp(min=0))
    np.testing.assert_allclose(ours, theirs, rtol=2e-3)


def test_tutorial_custom_relu_learns_like_torch(device):
    ours = _two_layer_net(clgrad, device, _my_relu(clgrad))
    assert ours[-1] < 0.3 * ours[0]
    torch = pytest.importorskip("torch")
    theirs = _two_layer_net(torch, "cpu", _my_relu(torch))
    np.testing.assert_allclose(ours, theirs, rtol=2e-3)
