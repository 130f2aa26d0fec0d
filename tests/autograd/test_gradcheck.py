"""gradcheck and gradgradcheck themselves, and gradients of matmul-family ops checked with them."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.autograd import Function
from tests.helpers import grad_precision, quiet_gradcheck


# ---- gradcheck itself ------------------------------------------------------------------------------------
class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class CubeWrong(Cube):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3.1 * x * x * grad  # 3% off: beyond rtol=1e-3


class CubeFirstOrderOnly(Cube):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * (x * x).detach() * grad  # right values, but its own derivative in x is lost


def test_gradcheck_passes_and_fails(device):
    dt, tols = grad_precision(device)  # float32 with wider tolerances on a device without cl_khr_fp64
    x = clgrad.tensor([0.5, -1.2, 2.0], dtype=getattr(clgrad, dt), device=device, requires_grad=True)
    y = clgrad.tensor([[0.3], [1.1]], dtype=getattr(clgrad, dt), device=device, requires_grad=True)

    def check(fn, inputs, **kwargs):
        return quiet_gradcheck(clgrad.autograd.gradcheck, fn, inputs, **tols, **kwargs)

    def check2(fn, inputs):
        return quiet_gradcheck(clgrad.autograd.gradgradcheck, fn, inputs, **tols)

    assert check(Cube.apply, (x,))
    assert check(lambda a, b: (a * b).sin(), (x, y))  # broadcasting, several inputs
    assert check(lambda a: (a.exp(), a.sum()), (x,))  # several outputs
    with pytest.raises(clgrad.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        check(CubeWrong.apply, (x,))
    assert check(CubeWrong.apply, (x,), raise_exception=False) is False
    assert check2(Cube.apply, (x,))
    assert check(CubeFirstOrderOnly.apply, (x,))
    with pytest.raises(clgrad.autograd.GradcheckError):
        check2(CubeFirstOrderOnly.apply, (x,))


def test_gradcheck_defaults_are_torch_defaults():
    torch = pytest.importorskip("torch")
    import inspect

    for name in ("gradcheck", "gradgradcheck"):
        ours = inspect.signature(getattr(clgrad.autograd, name)).parameters
        theirs = inspect.signature(getattr(torch.autograd, name)).parameters
        for p in ("eps", "atol", "rtol"):
            assert ours[p].default == theirs[p].default, (name, p)


# gradcheck (and gradgradcheck) through the Functions of the autograd core: views, in-place, reductions
GRADCHECK = {
    "view_ops": lambda m: m.t().reshape(12)[::3].unsqueeze(1).expand(4, 2) * m[1:, 2:].flatten()[:4, None],
    "select_narrow": lambda m: m.select(1, 2) * m.narrow(0, 1, 2).sum(1).sum(),
    "copy_slices": lambda m: _set_rows(m),
    "as_strided_refresh": lambda m: _refresh(m),
    "reductions": lambda m: m.sum(0) * m.mean(1, keepdim=True) + m.prod(1, keepdim=True) + m.amax(0),
    "max_min": lambda m: m.max(1)[0] + m.min(0)[0][:3] + m.max() * m.min(),
    "to_device": lambda m: m.to("cpu") * m.cpu().exp(),
}


def _set_rows(m):
    c = m * 1
    c[1] = m[0].exp()
    c.t()[2] *= m[:, 0]
    return c


def _refresh(m):
    c = m.clone()
    v = c[:, 1:3]
    c.mul_(m.sin())
    return v * 2


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradcheck_core_functions(device, name):
    dt, tols = grad_precision(device)  # float32 with wider tolerances on a device without cl_khr_fp64
    rng = np.random.default_rng(1)
    m = clgrad.tensor(rng.uniform(0.5, 1.5, (3, 4)), dtype=getattr(clgrad, dt), device=device, requires_grad=True)
    assert quiet_gradcheck(clgrad.autograd.gradcheck, GRADCHECK[name], (m,), **tols)
    assert quiet_gradcheck(clgrad.autograd.gradgradcheck, GRADCHECK[name], (m,), **tols)


MATMUL_SHAPES = [("mm", (3, 4), (4, 5)), ("bmm", (2, 3, 4), (2, 4, 5)), ("mv", (3, 4), (4,)), ("dot", (4,), (4,)),
                 ("matmul", (4,), (4, 5)), ("matmul", (2, 3, 4), (4,)), ("matmul", (5, 1, 3, 4), (2, 4, 5))]


@pytest.mark.parametrize("op, shape_a, shape_b", MATMUL_SHAPES)
def test_matmul_function(device, op, shape_a, shape_b):
    from clgrad.ops.linalg import Matmul

    dt, tols = grad_precision(device)  # float32 with wider tolerances on a device without cl_khr_fp64
    rng = np.random.default_rng(2)
    a, b = (clgrad.tensor(rng.standard_normal(s), dtype=getattr(clgrad, dt), device=device, requires_grad=True)
            for s in (shape_a, shape_b))
    assert quiet_gradcheck(clgrad.autograd.gradcheck, lambda x, y: Matmul.apply(x, y, op), (a, b), **tols)
    assert quiet_gradcheck(clgrad.autograd.gradgradcheck, lambda x, y: Matmul.apply(x, y, op), (a, b), **tols)
