"""In-place ops and views under autograd: version counters, PyTorch's errors, CopySlices, rebased views."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from tests.autograd.test_autograd import A, M, R, compare, leaf
from tests.helpers import assert_close

# ---- in-place ops and views ------------------------------------------------------------------------------
# Each pattern takes (L, a: [4] leaf, b: [4] leaf, m: [3, 4] leaf) and returns the tensor it built in place;
# the test backpropagates a weighted sum of its squares and compares every gradient (and the values) with PyTorch.
IN_PLACE = {}


def pattern(fn):
    IN_PLACE[fn.__name__] = fn
    return fn


@pattern
def setitem_slice(L, a, b, m):
    c = a.clone()
    c[1:3] = b[:2] * 2
    return c


@pattern
def setitem_number(L, a, b, m):
    c = a * b
    c[1:3] = 5.0  # the overwritten elements no longer depend on a or b
    return c


@pattern
def setitem_into_zeros(L, a, b, m):
    c = L.zeros(4, device=a.device)  # a leaf that doesn't require grad joins the graph
    c[0:2] = b[2:]
    return c


@pattern
def setitem_row_of_transpose(L, a, b, m):
    c = m * 1
    c.t()[1] = b[:3]
    return c


@pattern
def setitem_into_transposed_base(L, a, b, m):
    c = m.t().clone()  # a dense but transposed memory layout
    c[2] = b[:3] * 3
    return c


@pattern
def view_mul_(L, a, b, m):
    c = a.clone()
    c[1:3].mul_(b[:2])
    return c


@pattern
def view_of_view_mul_(L, a, b, m):
    c = a * 1
    c[::2][1:].mul_(b[0])
    return c


@pattern
def row_add_(L, a, b, m):
    c = m.clone()
    c[1].add_(b)
    return c


@pattern
def unsqueezed_view_mul_(L, a, b, m):
    c = m * 1
    c.unsqueeze(0)[0, 1].mul_(b)
    return c


@pattern
def base_changed_then_view_used(L, a, b, m):
    c = a.clone()
    v = c[1:3]
    c.mul_(b)  # v's memory changed through its base: v's gradient must see the multiplication
    return v


@pattern
def sibling_view_changed(L, a, b, m):
    c = a.clone()
    v1, v2 = c[0:2], c[1:3]
    v1.mul_(b[:2])  # v2 overlaps v1 at element 1
    return v2


@pattern
def expanded_view_after_change(L, a, b, m):
    c = a.clone()
    e = c[:1].expand(3)  # stride 0: the gradients of its elements add up
    c.mul_(b)
    return e


@pattern
def copy_into_view(L, a, b, m):
    c = a.clone()
    c[::2].copy_(b[1:3])
    return c


@pattern
def copy_constant(L, a, b, m):
    c = a * 2
    c.copy_(L.ones(4, device=a.device) * 5)  # a gets zero gradients, as in PyTorch
    return c * a


@pattern
def zero_(L, a, b, m):
    c = a * 2
    c.zero_()
    return c + a


@pattern
def fill_(L, a, b, m):
    c = a * 2
    c.fill_(3)
    return c * b


@pattern
def view_fill_(L, a, b, m):
    c = a * 2
    c[1:3].fill_(-1)
    return c


@pattern
def operand_changed_after_use(L, a, b, m):
    c = a.clone()
    d = c * 2 + c / 4 + b.detach() * c + b  # no gradient here reads c's value
    c.add_(1)
    return d


@pattern
def arithmetic_chain(L, a, b, m):
    c = a.clone()
    c += b
    c *= a
    c -= 1
    c /= 2
    return c


@pattern
def self_alias(L, a, b, m):
    c = a.clone()
    c.add_(c)
    return c


@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_and_views_match_torch(device, name):
    def fn(L, a, b, m):
        c = IN_PLACE[name](L, a, b, m)
        weights = L.arange(1.0, c.numel() + 1, device=c.device).reshape(c.shape)
        (c * c * weights).sum().backward()
        return a.grad, b.grad, m.grad, c

    compare(fn, device, A, R, M, rtol=1e-5, atol=1e-5)


def test_in_place_node_names(device):
    a = leaf(clgrad, A, device)
    c = a.clone()
    v = c.view(2, 2)
    v[0, 0] = leaf(clgrad, [5.0], device)[0]
    assert c.grad_fn.name() == "clgrad::autograd::CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    c.sum().backward()
    assert_close(a.grad, np.array([0, 1, 1, 1], np.float32))


def test_masked_fill_(device):

    def fn(L, a, b):
        c = a * b
        c.masked_fill_(a > 0, 0.0)
        (c * c).sum().backward()
        return a.grad, b.grad, c

    compare(fn, device, A, R)


def test_retain_grad_follows_in_place_writes(device):
    """After ``a.retain_grad(); a.mul_(2)`` PyTorch's ``a.grad`` is the gradient of ``a`` as it is after the write
    (the old node must not overwrite it with the pre-write gradient), directly and through a view."""
    w = clgrad.tensor([1.0, 2.0, 3.0], device=device)
    leaf = clgrad.ones(3, device=device, requires_grad=True)
    a = leaf * 1
    a.retain_grad()
    a.mul_(2)
    (a * w).sum().backward()
    assert a.grad.cpu().numpy().tolist() == [1.0, 2.0, 3.0]
    assert leaf.grad.cpu().numpy().tolist() == [2.0, 4.0, 6.0]
    leaf = clgrad.ones(2, 3, device=device, requires_grad=True)
    b = leaf * 1
    b.retain_grad()
    b[0].mul_(5)
    (b * w).sum().backward()
    assert b.grad.cpu().numpy().tolist() == [[1.0, 2.0, 3.0]] * 2
    assert leaf.grad.cpu().numpy().tolist() == [[5.0, 10.0, 15.0], [1.0, 2.0, 3.0]]


def test_whole_tensor_index_is_an_alias():
    y = clgrad.ones(3, 4, requires_grad=True) * 2
    for index in ((...,), (slice(None),), (..., slice(None)), ()):
        assert y[index].grad_fn.name() == "AliasBackward0"
    assert y[1:].grad_fn.name() == y[:].grad_fn.name() == "SliceBackward0"
