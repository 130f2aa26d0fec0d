"""The custom ``Function`` API: PyTorch's static forward(ctx, ...)/backward(ctx, ...) and everything on ctx."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import Function
from tests.conftest import fp64_ok
from tests.helpers import assert_close

X = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
R = np.array([7.0, 8.0, 9.0, 10.0], np.float32)


def leaf(device, values=X, dtype=clgrad.float32):
    return clgrad.tensor(values, dtype=dtype, device=device, requires_grad=True)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class ScaleShift(Function):
    """Non-tensor arguments (positional and keyword) and attributes stored on ctx."""

    @staticmethod
    def forward(ctx, x, scale, shift=0.0, *, power=1):
        ctx.scale, ctx.power = scale, power
        return x * scale + shift

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None, None


def test_forward_backward_and_node(device):
    x = leaf(device)
    y = Square.apply(x)
    assert y.requires_grad and not y.is_leaf
    assert type(y.grad_fn).__name__ == "SquareBackward" and y.grad_fn.name() == "SquareBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    assert_close(x.grad, 2 * X)


def test_non_tensor_args_kwargs_and_ctx_attributes(device):
    x = leaf(device)
    y = ScaleShift.apply(x, 3.0, 1.0, power=2)
    assert_close(y, X * 3 + 1)
    assert y.grad_fn.scale == 3.0 and y.grad_fn.power == 2
    assert len(y.grad_fn.next_functions) == 1  # one edge per tensor argument, as in PyTorch
    y.sum().backward()
    assert_close(x.grad, np.full(4, 3.0, np.float32))


def test_keyword_tensor_arguments_are_inputs(device):
    class Affine(Function):
        @staticmethod
        def forward(ctx, x, weight=None, bias=0.0):
            ctx.save_for_backward(x, weight)
            return x * weight + bias

        @staticmethod
        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            return grad * weight, grad * x, None

    x, w = leaf(device), leaf(device, R)
    y = Affine.apply(x, weight=w)  # bound to positions as PyTorch does: w is an input of the node
    assert len(y.grad_fn.next_functions) == 2
    y.sum().backward()
    assert_close(x.grad, R)
    assert_close(w.grad, X)


def test_needs_input_grad(device):
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, n):
            seen.append(ctx.needs_input_grad)
            return a * b * n

        @staticmethod
        def backward(ctx, grad):
            seen.append(ctx.needs_input_grad)
            a_needed, b_needed, _ = ctx.needs_input_grad
            return grad if a_needed else None, grad if b_needed else None, None

    a, b = leaf(device), clgrad.tensor(X, device=device)
    Probe.apply(a, b, 2).sum().backward()
    assert seen == [(True, False, False), (True, False, False)]
    with clgrad.no_grad():
        Probe.apply(a, b, 2)
    assert seen[-1] == (False, False, False)


def test_several_outputs_and_materialized_grads(device):
    class SumProd(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b, a * b

        @staticmethod
        def backward(ctx, g_sum, g_prod):
            a, b = ctx.saved_tensors
            return g_sum + g_prod * b, g_sum + g_prod * a

    a, b = leaf(device), leaf(device, X[::-1].copy())
    s, p = SumProd.apply(a, b)
    assert s.grad_fn is p.grad_fn and (s._output_nr, p._output_nr) == (0, 1)
    p.sum().backward()  # only one output used: the other's gradient arrives as zeros
    assert_close(a.grad, X[::-1].copy())
    assert_close(b.grad, X)


def test_set_materialize_grads_false_passes_none(device):
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1 is None, g2 is None))
            return g1 * 2

    x = leaf(device)
    Two.apply(x)[0].sum().backward()
    assert seen == [(False, True)]
    assert_close(x.grad, np.full(4, 2.0, np.float32))


def test_mark_non_differentiable_and_integer_outputs(device):
    class WithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            values = x * 2
            flags = x * 0
            ctx.mark_non_differentiable(flags)
            return values, flags, clgrad.tensor([1, 2], device=x.device)

        @staticmethod
        def backward(ctx, g, g_flags, g_index):
            assert g_index is None or g_index.dtype is clgrad.int64
            return g * 2

    x = leaf(device)
    values, flags, index = WithIndex.apply(x)
    assert values.requires_grad and not flags.requires_grad and not index.requires_grad
    assert flags.grad_fn is None and index.grad_fn is None
    values.sum().backward()
    assert_close(x.grad, np.full(4, 2.0, np.float32))


def test_mark_dirty(device):
    class DoubleInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    a = leaf(device)
    c = a.clone()
    out = DoubleInPlace.apply(c)
    assert out is c and c._version == 2 and c.grad_fn.name() == "DoubleInPlaceBackward"
    (c * c).sum().backward()
    assert_close(a.grad, 8 * X)
    with pytest.raises(RuntimeError, match=r"^a leaf Variable that requires grad has been used in an in-place"):
        DoubleInPlace.apply(leaf(device))


def test_mark_dirty_through_a_view_updates_the_base(device):
    class Negate(Function):
        @staticmethod
        def forward(ctx, x):
            x.neg_()
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return -grad

    a = leaf(device)
    c = a * 1
    Negate.apply(c[1:3])
    assert c.grad_fn.name() == "clgrad::autograd::CopySlices"
    (c * c).sum().backward()
    assert_close(a.grad, 2 * X)  # d/da (±a)^2 = 2a either way
    assert_close(c, X * np.array([1, -1, -1, 1], np.float32))


def test_input_returned_unchanged_is_a_new_alias(device):
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    x = leaf(device)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn is not None
    y.sum().backward()
    assert_close(x.grad, np.full(4, 3.0, np.float32))


def test_none_gradients_and_extra_trailing_nones(device):
    class Partial(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 2 + b

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None, None  # b gets none; one extra None is accepted as in PyTorch

    a, b = leaf(device), leaf(device)
    Partial.apply(a, b).sum().backward()
    assert_close(a.grad, np.full(4, 2.0, np.float32))
    assert b.grad is None


def test_backward_may_return_broadcast_shape(device):
    class Spread(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad.reshape(1, 4).expand(3, 4)  # summed back to [4] by the engine

    x = leaf(device)
    Spread.apply(x).sum().backward()
    assert_close(x.grad, np.full(4, 3.0, np.float32))


@pytest.mark.parametrize("result, message", [
    (lambda g: g, r"^function WrongBackward returned an incorrect number of gradients \(expected 2, got 1\)$"),
    (lambda g: (g.sum(), None), r"^Function WrongBackward returned an invalid gradient at index 0 - got \[\] but "
                                r"expected shape compatible with \[4\]$"),
    (lambda g: ("x", None), r"returned a gradient of type str at index 0"),
])
def test_bad_backward_results(device, result, message):
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return result(grad)

    with pytest.raises((RuntimeError, TypeError), match=message):
        Wrong.apply(leaf(device), leaf(device)).sum().backward()


def test_missing_backward_and_legacy_instantiation(device):
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        NoBackward.apply(leaf(device)).sum().backward()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
        NoBackward()


def test_saved_tensors_and_their_lifetime(device):
    x = leaf(device)
    y = Square.apply(x)
    assert y.grad_fn.saved_tensors[0] is x
    y.sum().backward(retain_graph=True)
    assert y.grad_fn.saved_tensors[0] is x
    y.sum().backward()
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors  # noqa: B018 - freed after a backward without retain_graph
    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        class Bad(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(3)
                return x

        Bad.apply(leaf(device))


def test_saved_output_keeps_no_reference_cycle(device):
    import gc
    import weakref

    class ExpSaveOut(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            assert out.grad_fn is ctx  # unpacked with its node re-attached (so double backward works)
            return grad * out

    x = leaf(device)
    gc.disable()
    try:
        y = ExpSaveOut.apply(x)
        node, out = weakref.ref(y.grad_fn), weakref.ref(y)
        del y
        assert node() is None and out() is None  # freed by reference counting alone
    finally:
        gc.enable()
    y = ExpSaveOut.apply(x)
    (g,) = clgrad.autograd.grad(y.sum(), x, create_graph=True)
    g.sum().backward()
    assert_close(x.grad, np.exp(X), rtol=1e-5)


def test_saved_output_modified_in_place_message(device):
    torch = pytest.importorskip("torch")

    def run(lib, dev):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * x
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

        x = lib.tensor(X, requires_grad=True, device=dev)
        y = Sq.apply(x)
        y.add_(1)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        return str(info.value)

    expected = run(torch, "cpu").replace("torch.", "clgrad.")
    if device != "cpu":
        expected = expected.replace("clgrad.FloatTensor", "clgrad.opencl.FloatTensor")
    assert run(clgrad, device) == expected


def test_custom_function_double_backward(device):
    dt = clgrad.float64 if fp64_ok(device) else clgrad.float32  # float64 can't be on a device without cl_khr_fp64
    x = leaf(device, dtype=dt)
    (g,) = clgrad.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert_close(g, 2 * X.astype(dt.np))
    g.pow(2).sum().backward()  # d/dx sum((2x)^2) = 8x
    assert_close(x.grad, 8 * X.astype(dt.np))


def test_variable_is_a_tensor(device):
    t = clgrad.tensor(X, device=device)
    v = clgrad.autograd.Variable(t, requires_grad=True)
    assert isinstance(v, clgrad.Tensor) and v.requires_grad and v.is_leaf
    assert isinstance(clgrad.autograd.Variable(t), clgrad.Tensor)


def test_setup_context_style(device):
    class Mul(Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    a, b = leaf(device), leaf(device, R)
    Mul.apply(a, b).sum().backward()
    assert_close(a.grad, R)
    assert_close(b.grad, X)


def test_once_differentiable(device):
    from clgrad.autograd import once_differentiable

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            assert not clgrad.is_grad_enabled()
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

    x = leaf(device)
    Cube.apply(x).sum().backward()
    assert_close(x.grad, 3 * X * X)
    w = leaf(device, R)  # makes the gradient reaching Cube's backward require grad
    (g,) = clgrad.autograd.grad((Cube.apply(x) * w).sum(), x, create_graph=True)
    assert_close(g, 3 * X * X * R)
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()
