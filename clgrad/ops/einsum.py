"""``einsum``: PyTorch's equation grammar (ellipsis, repeated subscripts as diagonals, implicit output, the
sublist format), contracted pairwise left to right through batched matmul, as ``torch.einsum`` does without
opt_einsum.

Each operand is first aligned to one dim order shared by all of them (output dims, then contracted dims): a
repeated subscript becomes a diagonal, a missing one a size-1 dim. Then the operands are folded left to right;
each step sums the dims no later operand has (``_pair``: one bmm over [batch, left-only, summed] x
[batch, summed, right-only], or a broadcast product when nothing is summed). Everything is written in
differentiable ops (diagonal, permute, reshape, sum, bmm), so autograd comes for free.
"""
from __future__ import annotations

import math

from .. import dtypes as D
from ..tensor import is_tensor
from . import linalg
from . import pointwise as P

__all__ = ["einsum"]

ELLIPSIS = -1
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _sublist_equation(args):
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the operands and the equation the sublists spell."""
    def spell(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                out.append(_LETTERS[s])
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return "".join(out)

    n = len(args) // 2
    operands, equation = list(args[0:2 * n:2]), ",".join(spell(s) for s in args[1:2 * n:2])
    if len(args) % 2:
        equation += "->" + spell(args[-1])
    return equation, operands


def _parse_lhs(lhs: str, num_ops: int):
    """The labels (indices into _LETTERS, ELLIPSIS for ``...``) of each operand, with PyTorch's checks."""
    labels, cur, found, i = [[] for _ in range(num_ops)], 0, False, 0
    while i < len(lhs):
        c = lhs[i]
        if c == ".":
            if found:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an ellipsis was already found")
            if lhs[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of any ellipsis")
            labels[cur].append(ELLIPSIS)
            found, i = True, i + 2
        elif c == ",":
            cur += 1
            if cur >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
            found = False
        elif c != " ":
            if c not in _LETTERS:
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
            labels[cur].append(_LETTERS.index(c))
        i += 1
    if cur != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return labels


def _ellipsis_dims(labels, operands, counts) -> int:
    ell = 0
    for i, (lab, op) in enumerate(zip(labels, operands)):
        n = sum(1 for x in lab if x != ELLIPSIS)
        has_ell = ELLIPSIS in lab
        for x in lab:
            if x != ELLIPSIS:
                counts[x] += 1
        if has_ell:
            ell = max(ell, op.dim() - n)
            if n > op.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is more than the "
                                   f"number of dimensions ({op.dim()}) for operand {i}")
        elif n != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not match the number "
                               f"of dimensions ({op.dim()}) for operand {i} and no ellipsis was given")
    return ell


def _layout(equation: str, labels, counts, ell: int):
    """(position of each label in the common order, where the ellipsis block starts, number of output dims)."""
    pos, order = [-1] * 52, 0
    arrow = equation.find("->")
    if arrow < 0:  # implicit output: the ellipsis, then labels seen once, in _LETTERS order
        ell_at, order = 0, ell
        for x in range(52):
            if counts[x] == 1:
                pos[x], order = order, order + 1
        return _contracted(pos, order, counts, ell_at, True, ell)
    rhs, base, ell_at, i = equation[arrow + 2:], arrow + 2, None, 0
    while i < len(rhs):
        c = rhs[i]
        if c == ".":
            if ell_at is not None:
                raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
            if rhs[i:i + 3] != "...":
                raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
            ell_at, order, i = order, order + ell, i + 2
        elif c != " ":
            if c not in _LETTERS:
                raise RuntimeError(f"einsum(): invalid subscript given at index {base + i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
            x = _LETTERS.index(c)
            if counts[x] == 0 or pos[x] >= 0:
                why = "appears more than once in the output" if pos[x] >= 0 else \
                    "does not appear in the equation for any input operand"
                raise RuntimeError(f"einsum(): output subscript {c} {why}")
            pos[x], order = order, order + 1
        i += 1
    return _contracted(pos, order, counts, ell_at, ell_at is not None, ell)


def _contracted(pos, order, counts, ell_at, ell_in_out, ell):
    out_dims = order
    if not ell_in_out:  # ellipsis dims missing from the output are summed
        ell_at, order = order, order + ell
    for x in range(52):
        if counts[x] and pos[x] < 0:
            pos[x], order = order, order + 1
    return pos, ell_at, out_dims, order


def _align(op, lab, index, pos, ell_at, ell, total):
    """``op`` with one dim per position of the common order: diagonals for repeated labels, size-1 dims added."""
    perm, first, dim = [-1] * total, {}, 0
    n = sum(1 for x in lab if x != ELLIPSIS)
    for x in lab:
        if x == ELLIPSIS:
            k = op.dim() - n
            for j in range(k):
                perm[ell_at + ell - k + j] = dim
                dim += 1
        elif x in first:
            d = first[x]
            if op.shape[d] != op.shape[dim]:
                raise RuntimeError(f"einsum(): subscript {_LETTERS[x]} is repeated for operand {index} but the sizes "
                                   f"don't match, {op.shape[dim]} != {op.shape[d]}")
            op = op.diagonal(0, d, dim).movedim(-1, d)
        else:
            first[x], perm[pos[x]] = dim, dim
            dim += 1
    for j in range(total):
        if perm[j] < 0:
            op, perm[j] = op.unsqueeze(dim), dim
            dim += 1
    return op.permute(*perm)


def _check_sizes(ops, pos) -> None:
    names = {p: _LETTERS[x] for x, p in enumerate(pos) if p >= 0}
    for d in range(ops[0].dim()):
        seen = 1
        for i, op in enumerate(ops):
            n = op.shape[d]
            if n != 1 and seen != 1 and n != seen:
                what = f"subscript {names[d]}" if d in names else "ellipsis dimension"
                raise RuntimeError(f"einsum(): {what} has size {n} for operand {i} which does not broadcast with "
                                   f"previously seen size {seen}")
            seen = n if n != 1 else seen


def _pair(left, right, sum_dims):
    """Multiply two aligned operands (size-1 dims broadcast) and sum ``sum_dims``, keeping them as size 1."""
    if not sum_dims:
        return left * right
    lro, lo, ro, summed = [], [], [], sorted(sum_dims)
    for d in range(left.dim()):
        sl, sr = left.shape[d] != 1, right.shape[d] != 1
        if d in sum_dims:  # a summed dim only one side has is summed there first
            if sl and not sr:
                left = left.sum(d, keepdim=True)
            elif sr and not sl:
                right = right.sum(d, keepdim=True)
        elif sl and sr:
            lro.append(d)
        elif sl:
            lo.append(d)
        else:
            ro.append(d)
    size = lambda t, ds: math.prod(t.shape[d] for d in ds)  # noqa: E731
    a = left.permute(*lro, *lo, *summed, *ro).reshape(size(left, lro), size(left, lo), size(left, summed))
    b = right.permute(*lro, *summed, *ro, *lo).reshape(size(right, lro), size(right, summed), size(right, ro))
    out = linalg.bmm(a, b)
    shape = [left.shape[d] for d in lro] + [left.shape[d] for d in lo] + [1] * len(summed) + \
        [right.shape[d] for d in ro]
    order = lro + lo + summed + ro
    return out.reshape(shape).permute(*[order.index(d) for d in range(left.dim())])


def _contract(ops, out_dims: int):
    total = ops[0].dim()
    if len(ops) == 1:
        result = ops[0]
        dims = [d for d in range(out_dims, total) if result.shape[d] != 1]
        result = result.sum(tuple(dims), keepdim=True) if dims else result
        return result.reshape(tuple(result.shape[:out_dims]))
    last = [0] * total
    for i, op in enumerate(ops):
        for d in range(total):
            if op.shape[d] != 1:
                last[d] = i
    result = ops[0]
    for i in range(1, len(ops)):
        sum_dims = {d for d in range(out_dims, total) if last[d] <= i}
        result = _pair(result, ops[i], sum_dims)
    return result.reshape(tuple(result.shape[:out_dims]))


def einsum(*args):
    """Sum of products over the subscripts an equation names, as ``torch.einsum``.

    >>> clgrad.einsum("bij,bjk->bik", a, b)          # batched matrix product
    >>> clgrad.einsum("ii", m), clgrad.einsum("...i,...i", x, y)   # trace; batched dot
    >>> clgrad.einsum(a, [0, 1], b, [1, 2], [0, 2])  # sublist format
    """
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, op in enumerate(operands):
        if not is_tensor(op):
            raise TypeError(f"einsum(): argument 'tensors' must be tuple of Tensors, but found element of type "
                            f"{type(op).__name__} at pos {i}")
        if op.dtype is not operands[0].dtype:
            raise RuntimeError(f"expected scalar type {operands[0].dtype.scalar_name} but found "
                               f"{op.dtype.scalar_name}")
    P.common_device(operands)
    arrow = equation.find("->")
    labels = _parse_lhs(equation if arrow < 0 else equation[:arrow], len(operands))
    counts = [0] * 52
    ell = _ellipsis_dims(labels, operands, counts)
    pos, ell_at, out_dims, total = _layout(equation, labels, counts, ell)
    ops = [_align(op, lab, i, pos, ell_at, ell, total) for i, (op, lab) in enumerate(zip(operands, labels))]
    _check_sizes(ops, pos)
    if operands[0].dtype is D.bool and len(ops) > 1 and total > out_dims:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    return _contract(ops, out_dims)
