"""``gradcheck`` / ``gradgradcheck``: analytic gradients against float64 central differences."""
from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    pass


def _tensors(xs):
    return [x for x in xs if hasattr(x, "_storage")]


def _flat_outputs(func, inputs):
    out = func(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if hasattr(o, "_storage")]


def _numerical(func, inputs, diff_idx, eps):
    """J[i][j, k]: d output_k / d input_i[j] (outputs flattened and concatenated) by central differences."""
    from ..ops.creation import tensor

    jac = []
    for i in diff_idx:
        x = inputs[i]
        host = np.asarray(x.detach().cpu().numpy(), dtype=x.dtype.np).copy()
        rows = []
        for j in range(host.size):
            vals = []
            for sign in (1, -1):
                pert = host.copy()
                pert.flat[j] += sign * eps
                args = list(inputs)
                args[i] = tensor(pert, dtype=x.dtype, device=x.device, requires_grad=x.requires_grad)
                outs = _flat_outputs(func, args)
                vals.append(np.concatenate([np.asarray(o.detach().cpu().numpy(), np.float64).ravel() for o in outs]
                                           or [np.zeros(0)]))
            rows.append((vals[0] - vals[1]) / (2 * eps))
        jac.append(np.array(rows).reshape(host.size, -1))
    return jac


def _analytical(outputs, inputs, diff_idx):
    from . import grad as autograd_grad
    from ..ops.creation import zeros

    sizes = [o.numel() for o in outputs]
    total = sum(sizes)
    jac = [np.zeros((inputs[i].numel(), total)) for i in diff_idx]
    col = 0
    for o in outputs:
        for k in range(o.numel()):
            if not o.requires_grad:
                col += 1
                continue
            seed = zeros(tuple(o.shape), dtype=o.dtype, device=o.device)
            seed.view(-1)[k] = 1
            grads = autograd_grad(o, [inputs[i] for i in diff_idx], seed, retain_graph=True, allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    jac[n][:, col] = np.asarray(g.detach().cpu().numpy(), np.float64).ravel()
            col += 1
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored) -> bool:
    """Compare the autograd Jacobian of ``func`` at ``inputs`` with central differences.

    >>> x = clgrad.randn(3, dtype=clgrad.float64, requires_grad=True)
    >>> clgrad.autograd.gradcheck(clgrad.sigmoid, (x,))
    True
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff_idx = [i for i, x in enumerate(inputs) if hasattr(x, "_storage") and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.")
    outputs = _flat_outputs(func, inputs)
    analytical = _analytical(outputs, inputs, diff_idx)
    numerical = _numerical(func, inputs, diff_idx, eps)
    for n, (a, num) in enumerate(zip(analytical, numerical)):
        if a.shape != num.shape or not np.allclose(a, num, rtol=rtol, atol=atol):
            msg = (f"Jacobian mismatch for output 0 with respect to input {diff_idx[n]},\n"
                   f"numerical:{num}\nanalytical:{a}\n")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **_ignored) -> bool:
    """``gradcheck`` of the gradient itself (second derivatives through ``create_graph=True``)."""
    from . import grad as autograd_grad
    from ..ops.creation import tensor

    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outputs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=o.device, requires_grad=True)
                        for o in outputs]
    grad_outputs = tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if hasattr(x, "_storage") and x.requires_grad]

    def first_grad(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = _flat_outputs(func, xs)
        grads = autograd_grad(outs, [xs[i] for i in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grad, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
