"""``gradcheck`` / ``gradgradcheck``: analytic gradients against central differences, PyTorch's defaults.

Only floating-point outputs are checked (integer outputs such as indices carry no gradient), as in PyTorch.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..tensor import is_tensor
from .engine import grad as autograd_grad


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the analytic and numerical Jacobians differ."""


def _float_outputs(func, inputs) -> list:
    out = func(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if is_tensor(o) and o.dtype.is_floating_point]


def _host(t) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy(), np.float64).ravel()


def _numerical(func, inputs, diff_idx, eps) -> list:
    """J[o][n][j, k]: d output_o[k] / d input_{diff_idx[n]}[j] by central differences."""
    jac = None
    for n, i in enumerate(diff_idx):
        x = inputs[i]
        values = np.asarray(x.detach().cpu().numpy(), dtype=x.dtype.np)
        columns = []
        for j in range(values.size):
            sides = []
            for sign in (1, -1):
                moved = values.copy()
                moved.flat[j] += sign * eps
                args = list(inputs)
                args[i] = x.new_tensor(moved, requires_grad=True)
                sides.append([_host(o) for o in _float_outputs(func, args)])
            columns.append([(p - m) / (2 * eps) for p, m in zip(*sides)])
        if jac is None:
            jac = [[None] * len(diff_idx) for _ in (columns[0] if columns else [])]
        for o in range(len(jac)):
            jac[o][n] = np.array([c[o] for c in columns]).reshape(values.size, -1)
    return jac or []


def _analytical(outputs, inputs, diff_idx) -> list:
    """The same Jacobian from autograd: one ``grad`` call per output element."""
    jac = []
    for o in outputs:
        blocks = [np.zeros((inputs[i].numel(), o.numel())) for i in diff_idx]
        for k in range(o.numel() if o.requires_grad else 0):
            seed = o.new_zeros(o.shape)
            seed.view(-1)[k] = 1
            grads = autograd_grad(o, [inputs[i] for i in diff_idx], seed, retain_graph=True, allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    blocks[n][:, k] = _host(g)
        jac.append(blocks)
    return jac


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True, **_ignored) -> bool:
    """Compare the autograd Jacobian of ``func`` at ``inputs`` with central differences (use float64 inputs).

    >>> x = clgrad.randn(3, dtype=clgrad.float64, requires_grad=True)
    >>> clgrad.autograd.gradcheck(clgrad.sigmoid, (x,))
    True
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff_idx = [i for i, x in enumerate(inputs) if is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.itemsize < 8:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", stacklevel=2)
    analytical = _analytical(_float_outputs(func, inputs), inputs, diff_idx)
    numerical = _numerical(func, inputs, diff_idx, eps)
    for o, (a_blocks, n_blocks) in enumerate(zip(analytical, numerical)):
        for n, (a, num) in enumerate(zip(a_blocks, n_blocks)):
            if a.shape != num.shape or not np.allclose(a, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {o} with respect to input {diff_idx[n]},\n"
                                     f"numerical:{num}\nanalytical:{a}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True,
                  **_ignored) -> bool:
    """``gradcheck`` of the gradient itself: second derivatives through ``create_graph=True``, with random
    (or the given) gradients of the outputs, which are differentiated too."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outputs = _float_outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [o.new_tensor(rng.standard_normal(tuple(o.shape)), requires_grad=True) for o in outputs]
    grad_outputs = tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if is_tensor(x) and x.requires_grad]

    def first_grad(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = _float_outputs(func, xs)
        grads = autograd_grad(outs, [xs[i] for i in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grad, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
