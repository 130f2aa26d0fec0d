"""Products composed from ``matmul``/``bmm``/``mul``/``sum`` and views: the ``addmm`` family, ``tensordot``,
``inner``, ``kron``, ``vdot``, ``cross``, ``block_diag``, ``cartesian_prod``, ``combinations``, ``trace``,
``vander``, and ``torch.linalg``'s ``cross``, ``vecdot``, ``multi_dot``, ``matrix_power`` and ``vander``.

Every op is written in differentiable clgrad ops, so autograd (and double backward) comes for free; the work
goes to the batched matmul primitive wherever something is contracted. ``einsum`` lives in ``einsum.py``.

>>> clgrad.addmm(bias, x, w, beta=0.5)  # 0.5 * bias + x @ w
"""
from __future__ import annotations

import itertools
import math
import warnings

from .. import dtypes as D
from ..amp.policy import autocast_lower, autocast_lower_gpu
from ..autograd.graph import inplace, needs_graph
from ..tensor import is_tensor
from . import creation, joins, linalg, linalg_lu, rearrange, scans
from . import math as M
from . import pointwise as P
from . import shape as S
from .guard import tensor_first, user_stacklevel
from .views import broadcast_shapes, wrap_dim

__all__ = ["addmm", "addbmm", "baddbmm", "addmv", "addr", "inner", "kron", "tensordot", "vdot", "cross",
           "block_diag", "cartesian_prod", "combinations", "trace", "chain_matmul", "matrix_power", "vander", "ger"]
# torch.linalg.<name>: the linalg namespace module re-exports these
LINALG = ["linalg_cross", "vecdot", "multi_dot", "matrix_power", "linalg_vander"]


# ---- the addmm family: beta * input + alpha * product -------------------------------------------------------
def _check_scalars(dt, beta, alpha) -> None:
    """addr's checks of beta and alpha against the result dtype (the addmm family lets them truncate)."""
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) and dt is not D.bool:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if isinstance(v, float) and dt.kind in "iub":
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def _scaled(t, s):
    """``s * t`` in t's dtype."""
    return t if s == 1 else t * s


def _combine(input, product, beta, alpha):
    """``beta * input + alpha * product``, input broadcast to the product's shape; beta == 0 ignores input (NaN
    included), while input still gets its (zero) gradient as in PyTorch."""
    S.expand(input, product.shape)  # PyTorch's error for an input that does not broadcast
    if product.dtype.kind in "iu":  # integer products take the scalars truncated, as PyTorch does
        beta, alpha = int(beta), int(alpha)
    if product.dtype is D.bool:
        out = product if alpha else M.FUNCS["logical_and"](product, False)
        return M.FUNCS["logical_or"](out, input) if beta else out
    out = _scaled(product, alpha)
    if beta == 0:
        if needs_graph(input):
            return out + M.where(input.new_zeros(input.shape, dtype=D.bool), input, 0)
        return out
    return out + _scaled(input, beta)


def _same_dtype(op: str, input, *mats) -> None:
    for name, m in mats:
        if m.dtype is not input.dtype:
            raise RuntimeError(f"{op} and {name} must have the same dtype, but got {input.dtype.scalar_name} and "
                               f"{m.dtype.scalar_name}")


def _into(out, result, op: str):
    """PyTorch's ``out=``: the result written into ``out`` (same shape; clgrad tensors are never resized)."""
    if out is None:
        return result
    if needs_graph(result, out):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype.cpp_name}, but got "
                           f"{out.dtype.cpp_name} instead")
    if out.shape != result.shape:
        raise RuntimeError(f"{op}(): out= has shape {list(out.shape)} but the result has shape "
                           f"{list(result.shape)}; clgrad does not resize out= tensors (PyTorch would)")
    return out.copy_(result)


@autocast_lower
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``, input broadcast to [n, p]: ``clgrad.addmm(b, x, w)``."""
    linalg._check_tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({linalg._shape(mat1)} and "
                           f"{linalg._shape(mat2)})")
    _same_dtype("self", input, ("mat2", mat2))
    _same_dtype("mat1", mat1, ("mat2", mat2))
    if beta == alpha == 1 and input.dim() == 1 and input.shape[0] == mat2.shape[1] and input.dtype.kind == "f" \
            and input.device == mat1.device == mat2.device and not needs_graph(input, mat1, mat2):
        return _into(out, linalg.matmul_bias(mat1, mat2, input), "addmm")  # the bias added in the product's store
    return _into(out, _combine(input, linalg.mm(mat1, mat2), beta, alpha), "addmm")


@autocast_lower
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``, as one [n, b*m] @ [b*m, p] product."""
    linalg._check_tensors("addbmm", input=input, batch1=batch1, batch2=batch2)
    for name, m in (("batch1", batch1), ("batch2", batch2)):
        if m.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    nb, n, k = batch1.shape
    if batch2.shape[0] != nb:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {nb} and {batch2.shape[0]}")
    if batch2.shape[1] != k:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{k} and {batch2.shape[1]}x{batch2.shape[2]})")
    _same_dtype("self", input, ("batch2", batch2))
    _same_dtype("batch1", batch1, ("batch2", batch2))
    left = batch1.permute(1, 0, 2).reshape(n, nb * k)
    product = linalg.mm(left, batch2.reshape(nb * k, batch2.shape[2]))
    return _into(out, _combine(input, product, beta, alpha), "addbmm")


@autocast_lower
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``, input broadcast to [b, n, p]."""
    linalg._check_tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"expected scalar type {batch1.dtype.scalar_name} but found {input.dtype.scalar_name}")
    return _into(out, _combine(input, linalg.bmm(batch1, batch2), beta, alpha), "baddbmm")


@autocast_lower_gpu
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``: ``clgrad.addmv(b, A, x)``."""
    linalg._check_tensors("addmv", input=input, mat=mat, vec=vec)
    if mat.dim() != 2 or vec.dim() != 1 or input.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}")
    if mat.shape[1] != vec.shape[0] or (input.dim() == 1 and input.shape[0] not in (1, mat.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.dim() else 1}), mat "
                           f"({linalg._shape(mat)}), vec ({vec.shape[0]})")
    if not input.dtype is mat.dtype is vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {input.dtype.scalar_name}, "
                           f"{mat.dtype.scalar_name}, and {vec.dtype.scalar_name}")
    return _into(out, _combine(input, linalg.mv(mat, vec), beta, alpha), "addmv")


@autocast_lower_gpu
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``, with type promotion: ``clgrad.addr(A, u, v)``."""
    linalg._check_tensors("addr", input=input, vec1=vec1, vec2=vec2)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    dt = D.promote_types(D.result_type(input, vec1), vec2.dtype)
    _check_scalars(dt, beta, alpha)
    product = linalg.outer(vec1, vec2)
    S.expand(input, product.shape)
    if dt is D.bool:
        return _into(out, _combine(input, product, beta, alpha), "addr")
    if beta == 0:
        return _into(out, _combine(input, product.to(dt), 0, alpha), "addr")
    return _into(out, _scaled(product, alpha) + _scaled(input, beta), "addr")


def _addmm_inplace(fn, name):
    def method(self, *args, beta=1, alpha=1):
        result = fn(self, *args, beta=beta, alpha=alpha)
        if result.shape != self.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
        if needs_graph(self, *args):
            return inplace(self, lambda old: fn(old, *args, beta=beta, alpha=alpha))
        return self.copy_(result)

    method.__name__ = name
    return method


# ---- contractions -------------------------------------------------------------------------------------------
def _dims_pair(dims, a, b):
    if is_tensor(dims):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    return da, db


def tensordot(a, b, dims=2, out=None):
    """Sum of products over ``dims`` (an int: a's last and b's first dims; or two lists of dims), one matmul.

    >>> clgrad.tensordot(clgrad.ones(3, 4, 5), clgrad.ones(4, 5, 2), dims=2).shape  # clgrad.Size([3, 2])
    """
    linalg._check_tensors("tensordot", a=a, b=b)
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da, db = _dims_pair(dims, a, b)
    for x, ds in ((a, da), (b, db)):
        seen = [wrap_dim(d, x.dim()) for d in ds]
        for d in seen:
            if seen.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    ca, cb = [wrap_dim(d, a.dim()) for d in da], [wrap_dim(d, b.dim()) for d in db]
    for i, j, ra, rb in zip(ca, cb, da, db):
        sa, sb = a.shape[i], b.shape[j]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {ra} and "
                               f"second has size {sb} in dim {rb}")
        if sa != sb:  # a size-1 dim against a longer one: sum the longer one first, as PyTorch does
            a, b = (a, b.sum(j, keepdim=True)) if sa == 1 else (a.sum(i, keepdim=True), b)
    fa, fb = [d for d in range(a.dim()) if d not in ca], [d for d in range(b.dim()) if d not in cb]
    k = math.prod(a.shape[d] for d in ca)
    left = a.permute(*fa, *ca).reshape(math.prod(a.shape[d] for d in fa), k)
    right = b.permute(*cb, *fb).reshape(k, math.prod(b.shape[d] for d in fb))
    result = linalg.mm(left, right).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))
    return _into(out, result, "tensordot")


def inner(input, other, *, out=None):
    """Sum of products over the last dims: [*a, n] and [*b, n] give [*a, *b]; a 0-dim operand multiplies."""
    linalg._check_tensors("inner", input=input, other=other)
    if input.dim() == 0 or other.dim() == 0:
        return _into(out, input * other, "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return _into(out, tensordot(input, other, ([-1], [-1])), "inner")


def vdot(input, other, *, out=None):
    """Dot product of two 1-D tensors (real tensors: ``dot``): ``clgrad.vdot(x, y)``."""
    return _into(out, linalg.dot(input.conj(), other), "vdot")  # conj: the identity on real tensors


def kron(input, other, *, out=None):
    """Kronecker product: block (i, j) of the result is ``input[i, j] * other``, for any number of dims."""
    linalg._check_tensors("kron", input=input, other=other)
    nd = max(input.dim(), other.dim())
    sa = (1,) * (nd - input.dim()) + tuple(input.shape)
    sb = (1,) * (nd - other.dim()) + tuple(other.shape)
    a = input.reshape(tuple(itertools.chain.from_iterable((n, 1) for n in sa)))
    b = other.reshape(tuple(itertools.chain.from_iterable((1, n) for n in sb)))
    return _into(out, (a * b).reshape(tuple(x * y for x, y in zip(sa, sb))), "kron")


def ger(input, vec2, *, out=None):
    """Outer product of two 1-D tensors (the old name of ``outer``)."""
    return _into(out, linalg.outer(input, vec2), "ger")


def linalg_cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim``, the other dims broadcast: ``clgrad.linalg.cross(a, b)``."""
    linalg._check_tensors("linalg_cross", input=input, other=other)
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dim(dim, input.dim())
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found {other.dtype.scalar_name}")
    shape = broadcast_shapes(input.shape, other.shape)
    a, b = input.expand(shape), other.expand(shape)
    # c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}, indices mod 3
    result = a.roll(-1, d) * b.roll(-2, d) - a.roll(-2, d) * b.roll(-1, d)
    return _into(out, result, "linalg.cross")


def cross(input, other, dim=None, *, out=None):
    """``torch.cross``: ``linalg.cross`` along ``dim``; without ``dim`` the first dim of size 3 (deprecated)."""
    linalg._check_tensors("cross", input=input, other=other)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=user_stacklevel())
        if input.dim() == other.dim():
            shape = broadcast_shapes(input.shape, other.shape)
            dim = next((i for i, n in enumerate(shape) if n == 3), None)
            if dim is None:
                raise RuntimeError("no dimension of size 3 in input")
        else:
            dim = -1
    return linalg_cross(input, other, dim=dim, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """``sum(x * y, dim)`` with broadcasting (real tensors): ``clgrad.linalg.vecdot(x, y)``."""
    linalg._check_tensors("linalg_vecdot", x=x, y=y)
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype.scalar_name} and y of type {y.dtype.scalar_name} instead")
    if x.dtype.kind != "f":
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype.scalar_name}")
    return _into(out, (x * y).sum(dim), "linalg.vecdot")


# ---- chains of products -------------------------------------------------------------------------------------
def _chain_order(dims):
    """The cheapest parenthesization of a matrix chain (dims[i] x dims[i+1] matrices): split[i][j]."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return linalg.mm(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


def _check_multi_dot(tensors) -> None:
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if not is_tensor(t):
            raise TypeError(f"multi_dot(): argument 'tensors' must be tuple of Tensors, not {type(t).__name__}")
        where = "the first tensor" if i == 0 else "the last tensor" if i == n - 1 else f"tensor {i}"
        ok = (1, 2) if i in (0, n - 1) else (2,)
        if t.dim() not in ok:
            raise RuntimeError(f"multi_dot(): {where} must be {' or '.join(f'{d}D' for d in ok)} but got "
                               f"{t.dim()}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{tensors[0].dtype.cpp_name} and tensor {i} {t.dtype.cpp_name}")
    P.common_device(list(tensors))


def multi_dot(tensors, *, out=None):
    """``A @ B @ ... @ Z`` in the cheapest order; the first and last may be vectors: ``linalg.multi_dot([a, B])``."""
    tensors = list(tensors)
    _check_multi_dot(tensors)
    first, last = tensors[0].dim() == 1, tensors[-1].dim() == 1
    mats = [t.unsqueeze(0) if first and i == 0 else t for i, t in enumerate(tensors)]
    mats[-1] = mats[-1].unsqueeze(1) if last else mats[-1]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    result = _chain(mats, _chain_order(dims), 0, len(mats) - 1)
    result = result.squeeze(0) if first else result
    return _into(out, result.squeeze(-1) if last else result, "multi_dot")


def chain_matmul(*matrices, out=None):
    """Deprecated form of ``linalg.multi_dot`` taking 2-D tensors as separate arguments."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=user_stacklevel())
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return _into(out, matrices[0].clone(), "chain_matmul")
    return multi_dot(matrices, out=out)


def matrix_power(A, n, *, out=None):
    """``A @ A @ ... @ A`` (n times) for square (batches of) matrices; n = 0 gives the identity.

    Negative n needs a matrix inverse, which clgrad does not have yet: it raises NotImplementedError.
    """
    linalg._check_tensors("linalg_matrix_power", input=A)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if n < 0:  # A^-n = inv(A)^n, raising LinAlgError when A is singular
        A, n = linalg_lu.inv(A), -n
    if n == 0:
        eye = creation.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return _into(out, eye.expand(A.shape).contiguous(), "linalg.matrix_power")
    result, square = None, A
    while n:  # binary powering: about log2(n) squarings
        if n & 1:
            result = square if result is None else linalg.matmul(result, square)
        n >>= 1
        if n:
            square = linalg.matmul(square, square)
    return _into(out, result if result is not A else A.clone(), "linalg.matrix_power")


# ---- building matrices --------------------------------------------------------------------------------------
def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) as blocks along the diagonal of one matrix, zeros elsewhere."""
    for i, t in enumerate(tensors):
        if not is_tensor(t):
            raise TypeError(f"block_diag(): argument 'tensors' must be tuple of Tensors, not {type(t).__name__}")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    if not tensors:
        return creation.empty(1, 0)
    dev = P.common_device(list(tensors))
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    mats = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    width = sum(m.shape[1] for m in mats)
    rows, col = [], 0
    for m in mats:
        w = m.shape[1]
        left = creation.zeros(m.shape[0], col, dtype=dt, device=dev)
        right = creation.zeros(m.shape[0], width - col - w, dtype=dt, device=dev)
        rows.append(joins.cat([left, m.to(dt), right], 1))
        col += w
    return joins.cat(rows, 0)


def _vector(t) -> None:
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows: [n1 * n2 * ..., k] (or [n1] for one)."""
    for t in tensors:
        _vector(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = rearrange.meshgrid(*tensors, indexing="ij")
    return joins.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-D tensor's elements, as rows (itertools.combinations order)."""
    _vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input.new_empty((0, r))
    index = creation.tensor(rows, dtype=D.int64, device=input.device)
    return input[index]


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (integers sum in int64): ``clgrad.trace(A)``."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is D.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return input.diagonal().sum()


def _powers(x, n: int):
    """[*, k, n]: x^0, x^1, ..., x^(n-1) of each element, by a cumulative product as PyTorch computes them."""
    ones = creation.ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device)
    if n <= 1:
        return ones[..., :n]
    reps = x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,))
    return joins.cat([ones, scans.cumprod(reps, -1)], -1)


def vander(x, N=None, increasing=False):
    """Vandermonde matrix of a 1-D tensor: columns x^(N-1), ..., x^0 (reversed when ``increasing``)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    x = x.to(D.int64) if x.dtype.kind in "iub" else x
    result = _powers(x, n)
    return result if increasing else result.flip(-1)


def linalg_vander(x, *, N=None):
    """``linalg.vander``: [*, n] gives [*, n, N] with columns x^0, ..., x^(N-1)."""
    if x.dtype is D.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    x = x if x.dim() else x.reshape(1)  # torch treats a 0-d x as one point: [1, N]
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _powers(x.to(D.int64) if x.dtype.kind in "iu" else x, n)


# ---- Tensor methods ------------------------------------------------------------------------------------------
def install(T) -> None:
    """Attach this module's ops to Tensor as methods (with the in-place addmm family)."""
    for name in ("addmm", "addbmm", "baddbmm", "addmv", "addr", "inner", "kron", "vdot", "cross", "trace",
                 "matrix_power", "ger"):
        setattr(T, name, globals()[name])
    for name in ("addmm", "addbmm", "baddbmm", "addmv", "addr"):
        setattr(T, name + "_", _addmm_inplace(globals()[name], name + "_"))


# a list or a number where a tensor belongs raises PyTorch's TypeError (see guard.py)
tensor_first(globals(), __all__ + LINALG)
