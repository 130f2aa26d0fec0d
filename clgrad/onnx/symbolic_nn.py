"""Symbolic functions of the layers' ops: linear and matmul, convolutions, pooling, softmax, embedding and the
normalizations."""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..ops import conv as CV
from ..ops import linalg as LA
from ..ops import nnops as NN
from ..ops import norms as NO
from ..ops import pooling as PO
from ..ops.views import wrap_dim
from .errors import SymbolicValueError, UnsupportedOperatorError
from .graph import reshape_target
from .symbolic_helper import register


@register(LA.Linear)
def _linear(g, c):
    x, w, b = c.tensor(0), c.tensor(1), c.tensor(2)
    if len(c.shapes(0)[0]) == 2:
        return g.op("Gemm", x, w, b, transB=1)
    y = g.op("MatMul", x, g.op("Transpose", w, perm=[1, 0]))
    return y if b is None else g.op("Add", y, b)


@register(LA.Matmul)
def _matmul(g, c):
    return g.op("MatMul", c.tensor(0), c.tensor(1))


# ---- convolution and pooling ---------------------------------------------------------------------
def _geometry(win, nd: int):
    """(kernel, strides, pads before, dilations, output size) of a Window, for ``nd`` spatial dims."""
    k, s, p, d, o = (win.kh, win.kw), (win.sh, win.sw), (win.ph, win.pw), (win.dh, win.dw), (win.oh, win.ow)
    return tuple(tuple(v[2 - nd:]) for v in (k, s, p, d, o))


def _end_pads(in_size, k, s, p, d, out):
    """Padding after each spatial dim so a floor-mode window count gives ``out`` (clgrad's windows may reach
    past the end: what they reach there is padding)."""
    ends = []
    for n, kk, ss, pb, dd, oo in zip(in_size, k, s, p, d, out):
        need = (oo - 1) * ss + dd * (kk - 1) + 1 - n - pb
        ends.append(pb if (n + 2 * pb - dd * (kk - 1) - 1) // ss + 1 == oo else max(need, 0))
    return ends


@register(CV.Convolution)
def _convolution(g, c):
    win, groups, transposed, size = c.static(3), c.static(4), c.static(5), c.static(6)
    nd = len(c.shapes(1)[0]) - 2
    k, s, p, d, o = _geometry(win, nd)
    x, w, b = c.tensor(0), c.tensor(1), c.tensor(2)
    spatial = c.shapes(0)[0][2:]
    if transposed:
        natural = [(n - 1) * ss - 2 * pp + dd * (kk - 1) + 1 for n, ss, pp, dd, kk in zip(spatial, s, p, d, k)]
        extra = [want - nat for want, nat in zip(size, natural)]
        return g.op("ConvTranspose", x, w, b, kernel_shape=list(k), strides=list(s), pads=list(p) + list(p),
                    dilations=list(d), group=groups, output_padding=extra if any(extra) else None)
    pads = list(p) + _end_pads(spatial, k, s, p, d, o)
    return g.op("Conv", x, w, b, kernel_shape=list(k), strides=list(s), pads=pads, dilations=list(d), group=groups)


def _pool_attrs(c, win):
    """Kernel, strides, symmetric pads and ceil_mode reproducing clgrad's output size."""
    k, s, p, d, o = _geometry(win, 2)
    spatial = c.shapes(0)[0][-2:]
    floor = [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, pp, dd, kk, ss in zip(spatial, p, d, k, s)]
    return dict(kernel_shape=list(k), strides=list(s), pads=list(p) + list(p),
                ceil_mode=int(list(floor) != list(o))), d


def _spatial4d(g, c, x):
    """Pooling primitives take [C, H, W] too: ONNX's pooling wants the batch dim."""
    unbatched = len(c.shapes(0)[0]) == 3
    return (g.unsqueeze(x, [0]) if unbatched else x), unbatched


@register(PO.MaxPool2d)
def _max_pool(g, c):
    win = c.static(2)
    attrs, d = _pool_attrs(c, win)
    x, unbatched = _spatial4d(g, c, c.tensor(0))
    y = g.op("MaxPool", x, dilations=list(d), **attrs)
    return [g.squeeze(y, [0]) if unbatched else y, None]  # ONNX's indices are not PyTorch's: not exported


@register(PO.AvgPool2d)
def _avg_pool(g, c):
    win, include_pad, divisor = c.static(2), c.static(3), c.static(4)
    attrs, _ = _pool_attrs(c, win)
    x, unbatched = _spatial4d(g, c, c.tensor(0))
    y = g.op("AveragePool", x, count_include_pad=int(bool(include_pad)), **attrs)
    if divisor is not None:
        y = g.op("Mul", y, g.scalar(win.kh * win.kw / divisor, c.dtype(0)))
        if any(attrs["pads"]) or attrs["ceil_mode"]:
            raise SymbolicValueError(f"{c.name}: divisor_override with padding or ceil_mode")
    return g.squeeze(y, [0]) if unbatched else y


@register(PO.AdaptiveAvgPool2d)
def _adaptive_avg_pool(g, c):
    (ia, ib), oa = c.shapes(0), c.out_shapes()[0]
    x, unbatched = _spatial4d(g, c, c.tensor(0))
    if oa[-2:] == (1, 1):
        y = g.op("GlobalAveragePool", x)
    elif ia[-2:] == ib[-2:] and all(n % m == 0 for n, m in zip(ia[-2:], oa[-2:])):
        k = [n // m for n, m in zip(ia[-2:], oa[-2:])]
        y = g.op("AveragePool", x, kernel_shape=k, strides=k)
    else:
        raise SymbolicValueError(f"{c.name}: adaptive average pooling from {list(ia[-2:])} to {list(oa[-2:])} "
                                 "(ONNX needs an output size that divides the input size)")
    return g.squeeze(y, [0]) if unbatched else y


# ---- softmax, embedding --------------------------------------------------------------------------
@register(NN.Softmax)
def _softmax(g, c):
    dim, dtype = c.static(1), c.static(2)
    x = c.tensor(0, dtype or c.out_dtype())
    axis = wrap_dim(dim, max(len(c.shapes(0)[0]), 1))
    return g.op("LogSoftmax" if c.node.fn.mode == "log_softmax" else "Softmax", x, axis=axis)


@register(NN.Embedding)
def _embedding(g, c):
    base = g.trace.base_of(c.arg(1))
    if base is not None and tuple(base.shape) + (c.shapes(0)[0][1],) == c.out_shapes()[0]:
        # the indices are the input flattened without autograd: gather by the input itself (any shape)
        return g.op("Gather", c.tensor(0), g.cast(g.value(base, None, c.name), base.dtype, D.int64), axis=0)
    rows = g.op("Gather", c.tensor(0), c.tensor(1, D.int64), axis=0)
    (ia, ib), (oa, ob) = c.shapes(1), c.out_shapes()
    flat_a, flat_b = (ia[0], c.shapes(0)[0][1]), (ib[0], c.shapes(0)[1][1])
    return g.op("Reshape", rows, g.ints(reshape_target(flat_a, flat_b, oa, ob, c.name)))


# ---- normalization -------------------------------------------------------------------------------
def _affine(g, c, y, spec):
    """``y * weight + bias`` with weight and bias shaped to broadcast (the spec's ``affine`` shape)."""
    for i, kind in ((1, "Mul"), (2, "Add")):
        if c.arg(i) is not None:
            y = g.op(kind, y, g.op("Reshape", c.tensor(i), g.ints(spec.affine)))
    return y


def _normalize(g, c, x, axes, eps, dt):
    mean = g.reduce("ReduceMean", x, axes, True)
    dev = g.op("Sub", x, mean)
    var = g.reduce("ReduceMean", g.op("Mul", dev, dev), axes, True)
    return g.op("Div", dev, g.op("Sqrt", g.op("Add", var, g.scalar(eps, dt))))


@register(NO.NativeBatchNorm)
def _batch_norm(g, c):
    spec, dt = c.static(3), c.dtype(0)
    if spec.batch_stats:
        raise UnsupportedOperatorError("clgrad::NativeBatchNormBackward0 in training mode (batch statistics)",
                                       g.opset, None)
    y = g.op("Mul", g.op("Sub", c.tensor(0), c.tensor(4, dt)), c.tensor(5, dt))  # running stats are constants
    return _affine(g, c, y, spec)


@register(NO.NativeLayerNorm)
def _layer_norm(g, c):
    spec, dt = c.static(3), c.dtype(0)
    x, axes = c.tensor(0), list(spec.dims)
    if g.opset >= 17:
        scale = c.tensor(1) if c.arg(1) is not None else g.const(np.ones(spec.affine, dt.np))
        return g.op("LayerNormalization", x, scale, c.tensor(2), axis=axes[0], epsilon=float(spec.eps))
    return _affine(g, c, _normalize(g, c, x, axes, spec.eps, dt), spec)


@register(NO.NativeGroupNorm)
def _group_norm(g, c):
    spec, dt = c.static(3), c.dtype(0)
    x = c.tensor(0)
    groups = g.op("Reshape", x, g.ints([0, spec.shape[1], -1]))
    y = g.op("Reshape", _normalize(g, c, groups, [2], spec.eps, dt), g.op("Shape", x))
    return _affine(g, c, y, spec)
