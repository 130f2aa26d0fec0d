"""OpenCL implementation of the ``nn`` primitives (an op family of OpenCLBackend): row-wise softmax and its
backward, nll_loss's per-sample pieces, embedding gather / accumulate, and normalization moments.

Launchers read operands in place through strides (any layout) and only enqueue kernels. The ones with a
device-side bounds check (``nll``, ``xent``, ``embedding``) set a flag on the device and, with their ``on_error``
callback, copy it to the launching thread's error buffer and to the host without waiting, as CUDA's device-side
asserts report late: ``check_pending()`` (pending.py) looks at the copies at that thread's next host read or
``synchronize()`` and raises the first failed op's error (torch's IndexError), naming any others. Waiting for the flag at once cost a full wait per loss (the host could not queue the
backward pass while the forward ran): the MNIST step took 7.9 ms with it, 5.5 without.
"""
from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from ... import dtypes as D
from ..common import INT32_MAX, pow2, view
from . import capture, looplimit, programs
from .launch import WG, Args, Launcher, coalesce, index_type, launch_size  # WG: most work-items of a per-row work-group
from .pending import MAX_PENDING, check_pending, defer_slot, error_slot  # noqa: F401 (check_pending, MAX_PENDING: re-exported)

SERIAL_K = 32  # rows this short get one work-item each
# operands of the loss modes that have K elements per row (the others are per-row values expanded along it)
_ROW_OPERANDS = {"xent": ("x",), "xent_backward": ("x", "out"), "nll_backward": ("out",)}


def acc_of(dt: D.dtype) -> D.dtype:
    """The dtype row statistics accumulate in: float32 for float16, else the dtype itself."""
    return D.float32 if dt in D.HALF_FLOATS else dt


def rows_plan(dev, R: int, K: int, row_contig: bool) -> int:
    """Work-items per row: 1 (a loop per work-item) or a power of two (a work-group per row).

    Short rows get one work-item each, and so does everything on a CPU device once there are enough rows
    for every core (a loop beats a tree there). On a GPU, many rows along a non-last dim are read
    coalesced by one work-item per row (neighbouring work-items read neighbouring addresses).
    """
    if K <= SERIAL_K:
        return 1
    target = 4 * dev.props.compute_units
    budget = looplimit.budget(dev)
    # a device that stops a work-item's loops early (looplimit.py) loops over whole rows only when they are short
    whole = budget is None or _row_loops(K, 1) <= budget
    if dev.rank >= 2 and R >= target and whole:
        return 1
    if not row_contig and R >= 64 * target and whole:
        return 1
    wg = min(WG, 1 << (dev.props.max_work_group_size.bit_length() - 1))
    L = min(wg, pow2(K))
    looplimit.check(dev, _row_loops(K, L), f"a row of {K} elements")
    return L


def _row_loops(K: int, L: int) -> int:
    """Loop iterations of one work-item of a row kernel: up to three passes over its share of the row (the
    softmax family, the moments), plus the vector loops' scalar tails."""
    return 3 * -(-K // L) + 48


def _along(t, shape, dim: int):
    """A per-row tensor (``shape`` without ``dim``, or 0-dim) as a view of ``shape``, expanded along ``dim``."""
    if t.dim() == 0:
        return view(t, tuple(shape), (0,) * len(shape))
    strides = list(t._strides)
    strides.insert(dim, 0)
    return view(t, tuple(shape), tuple(strides))


class CLNN:
    PRIMITIVES = ("softmax", "xent", "xent_backward", "nll", "embedding", "embedding_backward", "moments")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher

    def _new_flag(self, dev, device):
        flag = self.be.empty(device, D.int32, 1)
        capture.fill(dev.queue, flag.data, np.int32(0), 0, 4)
        return flag

    @staticmethod
    def _note(dev, flag, on_error, what: str) -> None:
        """Copy the check's ``flag`` into a slot of the thread's error buffer (pending.py; one work-item) and have
        the host read it later, without waiting."""
        buf, slot = error_slot(dev)
        kernel = programs.get_kernel(dev, "errors", "note_error", (None, None, np.int32), {})
        kernel(dev.queue, (1,), (1,), flag.data, buf, np.int32(slot))
        defer_slot(dev, slot, on_error, what, keep=flag)

    @staticmethod
    def _run(dev, template, name, args: Args, params, n: int, local: int = 1) -> None:
        """Launch one work-item per ``n`` (local == 1) or one work-group of ``local`` per ``n``."""
        kernel = programs.get_kernel(dev, template, name, tuple(args.types), params)
        if local > 1:
            kernel(dev.queue, (n * local,), (local,), *args.values)
        else:
            gsize, lsize = launch_size(dev, n, 64)
            kernel(dev.queue, gsize, lsize, *args.values)

    def softmax(self, mode: str, out, inputs, dim: int) -> None:
        """Row-wise ``mode`` along ``dim``: 'softmax' / 'log_softmax' of inputs=(x,), or
        'softmax_backward' / 'log_softmax_backward' of inputs=(grad, output). ``out`` has the inputs'
        shape; its dtype sets the computation's (float32 for float16)."""
        names = ("x",) if len(inputs) == 1 else ("g", "y")
        self._rows(mode, list(zip(names, inputs)), [("out", out)], dim, acc_of(out.dtype))

    def xent(self, loss, wt, lse, x, target, weight, ignore_index: int, on_error) -> bool:
        """Fused cross-entropy for class indices: per sample ``loss = -w[t] * log_softmax(x)[t]``, ``wt = w[t]``
        (both 0 where t == ignore_index) and ``lse = logsumexp(x)`` over the class dim 1 of x [N, C, d...];
        loss, wt and lse are shaped like target [N, d...]. A target outside [0, C) calls ``on_error`` at the next host
        read or synchronize (check_pending); returns True."""
        if loss.numel() == 0:
            return True
        dev = self.rt.dev(loss)
        rows = [(n, _along(t, x.shape, 1)) for n, t in (("t", target), ("wt", wt), ("lse", lse))]
        flag = self._new_flag(dev, loss.device)
        self._rows("xent", [("x", x), rows[0]], [("out", _along(loss, x.shape, 1))] + rows[1:], 1, acc_of(x.dtype),
                   ignore_index=ignore_index, weight=weight, flag=flag)
        self._note(dev, flag, on_error, "cross_entropy")
        return True

    def xent_backward(self, out, x, target, wt, lse, grad, total, ignore_index: int) -> None:
        """The gradient of cross-entropy (``x`` given: ``c * (softmax(x) - onehot(t))``) or of nll_loss (``x`` None:
        ``-c * onehot(t)``) into ``out`` [N, C, d...], where ``c = wt * grad`` (``/ total`` unless ``total`` is
        None) per sample and 0 for ignored targets. ``grad`` is 0-dim or shaped like target; ``total`` 0-dim."""
        shape = out.shape
        ins = [("x", x)] if x is not None else []
        ins += [("t", _along(target, shape, 1)), ("wt", _along(wt, shape, 1)), ("g", _along(grad, shape, 1))]
        if x is not None:
            ins.append(("lse", _along(lse, shape, 1)))
        if total is not None:
            ins.append(("total", _along(total, shape, 1)))
        mode = "xent_backward" if x is not None else "nll_backward"
        self._rows(mode, ins, [("out", out)], 1, acc_of(out.dtype), ignore_index=ignore_index, mean=total is not None)

    def _rows(self, mode: str, ins: list, outs: list, dim: int, acc, ignore_index=None, weight=None, flag=None,
              mean=False) -> None:
        """Launch the softmax template's ``mode``: one row per position of the dims other than ``dim``, K
        elements along it. ``ins`` / ``outs`` are (kernel name, tensor) pairs, all of ``outs[0]``'s shape
        (per-row operands expanded along ``dim`` with stride 0)."""
        out = outs[0][1]
        if out.numel() == 0:
            return
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, acc)
        K = out.shape[dim]
        R = out.numel() // K
        ops = [t for _, t in ins + outs]
        others = [d for d in range(out.dim()) if d != dim]
        shape, strides = coalesce([out.shape[d] for d in others], [[t._strides[d] for d in others] for t in ops])
        big = max([out.numel()] + [t._storage.size for t in ops]) > INT32_MAX
        idx_np, idx_t = index_type(big)
        rowed = [t for n, t in ins + outs if n in _ROW_OPERANDS.get(mode, (n,))]  # the operands read along rows
        L = rows_plan(dev, R, K, all(t._strides[dim] == 1 for t in rowed))
        # explicit vectors on CPU devices when no row operand needs a conversion (see softmax.cl.mako)
        vec = 16 // (acc.itemsize // 4) if L == 1 and dev.rank >= 2 and K >= 16 and mode != "nll_backward" and all(
            t._strides[dim] == 1 and t.dtype is acc for t in rowed) else 1
        params = dict(
            mode=mode, ins=tuple((n, t.dtype.ctype) for n, t in ins), outs=tuple((n, t.dtype.ctype) for n, t in outs),
            acc=acc.ctype, nd=len(shape), group=L > 1, idx_t=idx_t, vec=vec, weighted=weight is not None, mean=mean,
            fp64=any(t.dtype is D.float64 for t in ops) or acc is D.float64,
        )
        args = Args(idx_np)
        for t in ops:
            args.buf(t._storage.data)
            args.idx(t._offset, t._strides[dim])
        for d, n in enumerate(shape):
            args.idx(n, *(st[d] for st in strides))
        if ignore_index is not None:
            args.scalar(np.int64, ignore_index)
        if weight is not None:
            args.buf(weight._storage.data)
            args.idx(weight._offset, weight._strides[0])
        if flag is not None:
            args.buf(flag.data)
        args.idx(R, K)
        if L > 1:
            args.buf(cl.LocalMemory(acc.itemsize * L), cl.LocalMemory(acc.itemsize * L))
        self._run(dev, "softmax", f"{mode}_{out.dtype.ctype}", args, params, R, L)

    def nll(self, loss, wt, x, target, weight, ignore_index: int, on_error) -> bool:
        """Per-sample nll pieces: ``loss[s] = -w[t] * x[s, t]``, ``wt[s] = w[t]`` (0 where t == ignore_index),
        for x [N, C, d...], target [N, d...], loss and wt contiguous like target. A target
        outside [0, C) (other than ignore_index) calls ``on_error`` later, as in ``xent``; returns True."""
        S = loss.numel()
        if S == 0:
            return True
        dev = self.rt.dev(loss)
        acc = acc_of(x.dtype)
        self.rt.check_dtype(dev, acc)
        xs = [x._strides[0]] + list(x._strides[2:])
        shape, (xst, tst) = coalesce(list(target.shape), [xs, list(target._strides)])
        big = max(S, x._storage.size, target._storage.size) > INT32_MAX
        idx_np, idx_t = index_type(big)
        params = dict(in_ctype=x.dtype.ctype, t_ctype=target.dtype.ctype, out_ctype=loss.dtype.ctype,
                      acc=acc.ctype, weighted=weight is not None, nd=len(shape), idx_t=idx_t,
                      fp64=acc is D.float64)
        flag = self._new_flag(dev, loss.device)
        args = Args(idx_np)
        args.buf(x._storage.data)
        args.idx(x._offset, x._strides[1])
        args.buf(target._storage.data)
        args.idx(target._offset)
        if weight is not None:
            args.buf(weight._storage.data)
            args.idx(weight._offset, weight._strides[0])
        for d, n in enumerate(shape):
            args.idx(n, xst[d], tst[d])
        args.buf(loss._storage.data, wt._storage.data)
        args.scalar(np.int64, ignore_index, x.shape[1])
        args.idx(S)
        args.buf(flag.data)
        self._run(dev, "nll", f"nll_{x.dtype.ctype}", args, params, S)
        self._note(dev, flag, on_error, "nll_loss")
        return True

    def embedding(self, out, weight, idx, on_error) -> bool:
        """``out[n, :] = weight[idx[n], :]`` for contiguous 1-D ``idx`` and contiguous ``out`` [N, D].
        An index outside [0, V) writes its row as 0 and calls ``on_error`` later, as in ``xent``."""
        N, Dm = out.shape
        if N * Dm == 0:
            return True
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, weight.dtype)
        big = max(N * Dm, weight._storage.size, idx._storage.size) > INT32_MAX
        idx_np, idx_t = index_type(big)
        params = dict(kind="gather", idx_ctype=idx.dtype.ctype, val_ctype=weight.dtype.ctype,
                      acc=acc_of(weight.dtype).ctype, idx_t=idx_t, fp64=weight.dtype is D.float64)
        flag = self._new_flag(dev, out.device)
        args = Args(idx_np)
        args.buf(idx._storage.data)
        args.idx(idx._offset)
        args.buf(weight._storage.data)
        args.idx(weight._offset, *weight._strides)
        args.buf(out._storage.data)
        args.idx(N, Dm)
        args.scalar(np.int64, weight.shape[0])
        args.buf(flag.data)
        self._run(dev, "embedding", f"embedding_{weight.dtype.ctype}", args, params, N * Dm)
        self._note(dev, flag, on_error, "embedding")
        return True

    def embedding_backward(self, acc, grad, idx, padding_idx: int) -> None:
        """``acc[idx[n], :] += grad[n, :]`` for every n with ``idx[n] != padding_idx`` (-1: none), duplicates
        included; ``acc`` [V, D] is contiguous, zero-filled, float32 for a float16 ``grad``."""
        N, Dm = grad.shape
        if N * Dm == 0:
            return
        dev = self.rt.dev(acc)
        self.rt.check_dtype(dev, acc.dtype)
        if acc.dtype is D.float64 and "cl_khr_int64_base_atomics" not in dev.cl_device.extensions:
            raise NotImplementedError(
                f"embedding backward in float64 needs cl_khr_int64_base_atomics, which opencl:{dev.index} "
                f"({dev.props.name}) lacks. Use float32."
            )
        big = max(N * Dm, acc._storage.size, grad._storage.size, idx._storage.size) > INT32_MAX
        idx_np, idx_t = index_type(big)
        params = dict(kind="accumulate", idx_ctype=idx.dtype.ctype, val_ctype=grad.dtype.ctype, acc=acc.dtype.ctype,
                      idx_t=idx_t, fp64=D.float64 in (acc.dtype, grad.dtype))
        args = Args(idx_np)
        args.buf(idx._storage.data)
        args.idx(idx._offset)
        args.buf(grad._storage.data)
        args.idx(grad._offset, *grad._strides)
        args.buf(acc._storage.data)
        args.idx(N, Dm)
        args.scalar(np.int64, acc.shape[0], padding_idx)
        self._run(dev, "embedding", f"embedding_backward_{grad.dtype.ctype}", args, params, N * Dm)

    def moments(self, mean, var, x, dims) -> None:
        """Mean and biased variance of ``x`` over ``dims`` into contiguous ``mean`` / ``var`` (x's shape with
        1 on ``dims``; float32 for float16 ``x``)."""
        M = mean.numel()
        if M == 0:
            return
        dev = self.rt.dev(mean)
        acc = mean.dtype
        self.rt.check_dtype(dev, acc)
        K = math.prod(x.shape[d] for d in dims)
        outer = [d for d in range(x.dim()) if d not in dims]
        oshape, (ostr,) = coalesce([x.shape[d] for d in outer], [[x._strides[d] for d in outer]])
        ishape, (istr,) = coalesce([x.shape[d] for d in dims], [[x._strides[d] for d in dims]])
        big = max(x._storage.size, M * K) > INT32_MAX
        idx_np, idx_t = index_type(big)
        L = rows_plan(dev, M, K, istr[-1] == 1)
        # a CPU work-item per row walks the contiguous last dim in vectors (the template's ``vec`` form)
        vec = 8 if acc is D.float64 else 16
        if not (L == 1 and istr[-1] == 1 and ishape[-1] >= 2 * vec and x.dtype.ctype in ("float", "double", "half")
                and "CPU" in dev.props.type and looplimit.loop_limit(dev) is None):
            vec = 1
        params = dict(in_ctype=x.dtype.ctype, acc=acc.ctype, outer_nd=len(oshape), inner_nd=len(ishape),
                      group=L > 1, idx_t=idx_t, fp64=acc is D.float64, vec=vec)
        args = Args(idx_np)
        args.buf(x._storage.data)
        args.idx(x._offset)
        for n, s in list(zip(oshape, ostr)) + list(zip(ishape, istr)):
            args.idx(n, s)
        args.idx(M, K)
        args.buf(mean._storage.data, var._storage.data)
        if L > 1:
            args.buf(*(cl.LocalMemory(acc.itemsize * L) for _ in range(3)))
        self._run(dev, "norm", f"moments_{x.dtype.ctype}", args, params, M, L)
