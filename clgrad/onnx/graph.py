"""Building the ONNX graph: nodes, constants, the values of traced tensors, and the opset-dependent forms.

``GraphBuilder`` turns tensors into ONNX value names: a traced tensor gets the name its node's symbolic gave it,
a parameter or buffer becomes an initializer under its ``named_parameters()`` name, an untracked contiguous view
of a traced tensor (``input.reshape(-1)`` on an integer input) becomes a ``Reshape`` of it, and anything else is a
constant. Each constant is compared with the same argument in the second run of the model (inputs changed), so
a tensor computed from the inputs by ops autograd does not record cannot be frozen into the graph silently.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import dtypes as D
from ..tensor import is_tensor
from .errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError
from .tracer import key, unexpanded

INT64_MAX = 2**63 - 1

_ONNX_TYPES = {D.bool: TensorProto.BOOL, D.uint8: TensorProto.UINT8, D.int8: TensorProto.INT8,
               D.int16: TensorProto.INT16, D.int32: TensorProto.INT32, D.int64: TensorProto.INT64,
               D.float16: TensorProto.FLOAT16, D.float32: TensorProto.FLOAT, D.float64: TensorProto.DOUBLE}


def onnx_type(dt: D.dtype) -> int:
    return _ONNX_TYPES[dt]


def reshape_target(in_a, in_b, out_a, out_b, what: str = "reshape") -> list:
    """ONNX Reshape's shape argument for a reshape traced as ``in_a -> out_a`` (and ``in_b -> out_b`` in the
    second run): sizes equal in both runs are written as they are; a size that changed (it follows a dynamic
    axis) becomes 0 (copy the input's size) where the input has it at the same place, or -1 (inferred)."""
    target, free = [], []
    for i, (a, b) in enumerate(zip(out_a, out_b)):
        if a == b:
            target.append(a)
        elif i < len(in_a) and in_a[i] == a and in_b[i] == b:
            target.append(0)
        else:
            target.append(-1)
            free.append(i)
    if len(free) > 1:
        raise SymbolicValueError(f"{what}: cannot export a reshape of {list(in_a)} to {list(out_a)}: dims {free} "
                                 "all depend on dynamic axes, and ONNX can infer only one (-1)")
    return target


class GraphBuilder:
    """The nodes, initializers and value names of the graph being exported."""

    def __init__(self, opset: int, trace, alt_trace, params: dict):
        self.opset, self.trace, self.alt_trace = opset, trace, alt_trace
        self.params = params  # id(tensor) -> (name, tensor): parameters and buffers
        self.nodes: list = []
        self.initializers: dict = {}  # name -> TensorProto
        self.used_params: dict = {}  # name -> tensor
        self.input_names: list = []
        self.values: dict = {}  # key(t) -> ONNX name
        self._consts: dict = {}
        self._counts: dict = {}
        self._keep: list = []

    # ---- names and nodes -----------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        return f"{base}_{n}"

    def op(self, op_type: str, *inputs, outputs: int = 1, **attrs):
        """Add a node; returns its output name (or the list of names when ``outputs`` > 1)."""
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        ins = ["" if i is None else i for i in inputs]
        while ins and ins[-1] == "":
            ins.pop()
        self.nodes.append(helper.make_node(op_type, ins, names, name=self.fresh(f"/{op_type}"), **attrs))
        return names[0] if outputs == 1 else names

    def const(self, value, dtype=None) -> str:
        """An initializer holding ``value`` (numpy array or scalar); small ones are shared."""
        arr = np.asarray(value, dtype=dtype)
        small = arr.size <= 64
        ck = (arr.dtype.str, arr.shape, arr.tobytes()) if small else None
        if ck is not None and ck in self._consts:
            return self._consts[ck]
        name = self.fresh("onnx::Constant")
        self.initializers[name] = numpy_helper.from_array(arr, name)
        if ck is not None:
            self._consts[ck] = name
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(list(values), dtype=np.int64))

    def scalar(self, value, dt: D.dtype) -> str:
        return self.const(np.asarray(value, dtype=dt.np))

    # ---- tensors to values ---------------------------------------------------------------------
    def bind(self, k, name: str) -> None:
        """Tensors known by ``k`` (see ``tracer.key``) are the ONNX value ``name``."""
        self.values[k] = name

    def value(self, t, alt=None, where: str = "", k=None) -> str:
        """The ONNX name of tensor ``t`` (``alt``: the same argument in the second run, for the checks; ``k``:
        what ``t`` was known by when the op read it, when that differs from now)."""
        k = key(t) if k is None else k
        name = self.values.get(k)
        if name is not None:
            if not name:
                raise UnsupportedOperatorError(f"{where} (reading an output its producer exports without: max "
                                               "pooling's indices)", self.opset, None)
            return name
        if id(t) in self.params:
            pname, p = self.params[id(t)]
            self.used_params[pname] = p
            self.values[k] = pname
            return pname
        base = self.trace.base_of(t) if id(t._storage) in self.trace.storages else None
        if base is not None:
            name = self._view_of(base, t, alt, where)
        elif id(t._storage) in self.trace.storages:
            raise SymbolicValueError(f"{where}: an argument is a strided view of a traced tensor made without "
                                     "autograd recording; clgrad.onnx cannot follow it")
        else:
            self._check_constant(t, alt, where)
            name = self.const(t._host())
        self._keep.append(t)
        self.values[k] = name
        return name

    def _view_of(self, base, t, alt, where: str) -> str:
        """A Reshape (and an Expand, for broadcast dims) of traced tensor ``base`` that ``t`` views."""
        src = self.value(base, None, where)
        dense_a = unexpanded(t)
        in_b, dense_b, out_b = base.shape, dense_a, t.shape
        if alt is not None and self.alt_trace is not None and self.alt_trace.base_of(alt) is not None:
            in_b, dense_b, out_b = self.alt_trace.base_of(alt).shape, unexpanded(alt), alt.shape
        if tuple(base.shape) != dense_a or tuple(in_b) != dense_b:
            src = self.op("Reshape", src, self.ints(reshape_target(base.shape, in_b, dense_a, dense_b, where)))
        if dense_a == tuple(t.shape) and dense_b == tuple(out_b):
            return src
        sizes = []
        for d, a, b in zip(dense_a, t.shape, out_b):
            if d == a:
                sizes.append(1)
            elif a == b:
                sizes.append(a)
            else:
                raise SymbolicValueError(f"{where}: an untracked broadcast to a size that depends on a dynamic axis")
        return self.op("Expand", src, self.ints(sizes))

    def _check_constant(self, t, alt, where: str) -> None:
        if alt is None or not is_tensor(alt):
            return
        same = tuple(alt.shape) == tuple(t.shape) and np.array_equal(alt._host(), t._host(),
                                                                     equal_nan=t.dtype.is_floating_point)
        if not same:
            raise OnnxExporterError(
                f"{where}: an argument of shape {list(t.shape)} ({t.dtype}) was computed from the model's inputs by "
                "ops that autograd does not record (ops on integer or bool tensors only, argmax/argmin/sort indices, "
                ".item()/.tolist() values), so the export would freeze it as a constant. Compute it from a "
                "float input, pass it as an input, or make it independent of the inputs")

    # ---- opset-dependent forms -----------------------------------------------------------------
    def reduce(self, op_type: str, x: str, axes, keepdims: bool) -> str:
        """A Reduce* op over ``axes`` (None: all); axes are an input from opset 18 (ReduceSum: 13)."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.op(op_type, x, keepdims=keep)
        axes = list(axes)
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, x, self.ints(axes), keepdims=keep)
        return self.op(op_type, x, axes=axes, keepdims=keep)

    def unsqueeze(self, x: str, axes) -> str:
        return self.op("Unsqueeze", x, self.ints(axes))

    def squeeze(self, x: str, axes) -> str:
        return self.op("Squeeze", x, self.ints(axes))

    def cast(self, x: str, src: D.dtype, dst: D.dtype) -> str:
        return x if src is dst else self.op("Cast", x, to=onnx_type(dst))

    def slice(self, x: str, starts, ends, axes, steps=None) -> str:
        return self.op("Slice", x, self.ints(starts), self.ints(ends), self.ints(axes),
                       None if steps is None else self.ints(steps))

    # ---- the model -----------------------------------------------------------------------------
    def value_info(self, name: str, dt: D.dtype, shape) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, onnx_type(dt), list(shape))

    def rename(self, old: str, new: str) -> None:
        """Call value ``old`` ``new`` everywhere (graph outputs take the names the user gave)."""
        for node in self.nodes:
            for seq in (node.input, node.output):
                for i, n in enumerate(seq):
                    if n == old:
                        seq[i] = new
        for k, v in list(self.values.items()):
            if v == old:
                self.values[k] = new
