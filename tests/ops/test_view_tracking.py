"""Every view method records a node when its input requires grad, whatever the shape (``x.t()`` of a 1-D tensor,
``squeeze()`` with no size-1 dim, ``flatten`` of a 1-D tensor...): ``requires_grad`` and the node's name
against torch, and gradients flow through them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import clgrad

VIEWS = [
    "x.t()", "x[0].t()", "x.sum().t()", "x.T", "x[0].T", "x.sum().T", "x.mT", "x.mH", "x.H", "x.adjoint()",
    "x.sum().mT", "x.sum().mH", "x.sum().H", "x.sum().adjoint()", "x.view_as(x)", "x.expand_as(x)",
    "x.reshape_as(x)", "x.squeeze()", "x.squeeze(0)", "x[0].flatten()", "x.flatten(0, 0)", "x.flatten()",
    "x.sum().flatten()", "x.contiguous()", "x.t().contiguous()", "x[0].reshape(3)", "x.view(2, 3)", "x.view(-1)",
    "x.transpose(0, 0)", "x.permute(0, 1)", "x.expand(2, 3)", "x.narrow(0, 0, 2)", "x[:]", "x.swapaxes(0, 1)",
    "x.sum().view(1)", "x.sum().squeeze()", "x.sum().unsqueeze(0)", "x.sum().reshape(())", "x.sum().expand(())",
    "L.t(x[0])", "L.flatten(x[0])", "L.squeeze(x)", "L.transpose(x, 0, 0)", "L.select(x, 0, 1)",
    "L.as_strided(x, (2,), (1,))", "x.detach().t()", "x.unsqueeze(0).squeeze(0)", "x.movedim(0, 0)", "x.unflatten(1, (3, 1))",
]
ERRORS = ["x[0].mT", "x[0].mH", "x[0].H", "x[0].adjoint()", "x.unsqueeze(0).H", "x.unsqueeze(0).t()"]


def _describe(r):
    return r.requires_grad, None if r.grad_fn is None else r.grad_fn.name(), tuple(r.shape), r.is_leaf


@pytest.mark.parametrize("expr", VIEWS)
def test_view_records_like_torch(expr):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of .T/.mT on 0-d and 1-d tensors
        expected = _describe(eval(expr, {"L": torch, "x": torch.ones(2, 3, requires_grad=True)}))
    x = clgrad.ones(2, 3, requires_grad=True)
    got = eval(expr, {"L": clgrad, "x": x})
    assert _describe(got) == expected
    if got.requires_grad:  # the gradient reaches the leaf: ones where the view looked
        (got * 1.0).sum().backward()
        assert x.grad is not None and x.grad.shape == (2, 3)
        ref = torch.ones(2, 3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (eval(expr, {"L": torch, "x": ref}) * 1.0).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), ref.grad.numpy())


@pytest.mark.parametrize("expr", ERRORS)
def test_matrix_views_refuse_other_ranks_like_torch(expr):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        eval(expr, {"x": torch.ones(2, 3)})
    with pytest.raises(RuntimeError) as ours:
        eval(expr, {"x": clgrad.ones(2, 3)})
    assert str(ours.value) == str(theirs.value)


def test_untracked_views_stay_untracked(device):
    x = clgrad.ones(2, 3, device=device)
    with clgrad.no_grad():
        y = clgrad.ones(3, device=device, requires_grad=True).t()
    for v in (x.t(), x[0].t(), x.mT, x.H, x.adjoint(), x.flatten(), y):
        assert not v.requires_grad and v.grad_fn is None
    assert x[0].t()._storage is x._storage  # still a view
