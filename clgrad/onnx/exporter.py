"""``export``'s work: trace the model twice, map each recorded call to ONNX nodes, write the model.

The second run gets the same inputs with their values changed (and the ``dynamic_axes`` dims grown by one).
Comparing the runs tells which sizes follow a dynamic axis (a reshape writes those as 0 or -1, never as the
traced number) and catches tensors computed from the inputs outside recorded ops, which would otherwise be
frozen into the graph.
"""
from __future__ import annotations

import inspect
import os
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .._version import __version__
from ..ops import creation
from ..tensor import is_tensor
from . import symbolic, symbolic_nn, symbolic_rnn  # noqa: F401 - they fill the symbolic table
from .errors import OnnxExporterError
from .graph import GraphBuilder
from .symbolic_helper import Call, lookup, module_symbolic
from .tracer import Trace, flat_tensors

MIN_OPSET, MAX_OPSET, DEFAULT_OPSET = 13, 20, 20
_IR_VERSION = {13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9}


def _map_tensors(obj, fn):
    if is_tensor(obj):
        return fn(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map_tensors(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


def split_args(args, kwargs):
    """PyTorch's forms: a tensor, or a tuple whose last element may be a dict of keyword arguments."""
    if is_tensor(args):
        args = (args,)
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kwargs = {**args[-1], **kwargs}
        args = args[:-1]
    return args, kwargs


def input_names(model, args, kwargs, given) -> list:
    """The given names, then the forward's parameter names (``name.k`` for the k-th tensor of a tuple)."""
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"input_{i}"
        ts = flat_tensors(a)
        names += [base] if len(ts) == 1 and is_tensor(a) else [f"{base}.{k}" for k in range(len(ts))]
    for k, v in kwargs.items():
        ts = flat_tensors(v)
        names += [k] if is_tensor(v) else [f"{k}.{j}" for j in range(len(ts))]
    given = list(given or [])
    return given + names[len(given):]


def normalize_dynamic_axes(dynamic_axes) -> dict:
    """{name: {dim: symbol}}; a list of dims gets PyTorch's generated names."""
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(d): str(s) for d, s in axes.items()}
        else:
            out[name] = {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(axes)}
    return out


def _perturbed(t, dims):
    """The second run's input: values changed (kept inside any interval the values lie in) and the dynamic
    dims grown by one (a copy of the first slice)."""
    arr = t.detach()._host()
    flat = np.roll(arr.reshape(-1), 1).reshape(arr.shape)
    if t.dtype.is_floating_point:  # a convex mix of neighbours: stays within the values' range
        w = np.random.default_rng(0).uniform(0.25, 0.75, arr.shape)
        arr = (w * arr + (1 - w) * flat).astype(arr.dtype)
    else:
        arr = flat
    for d in sorted(dims):
        arr = np.concatenate([arr, np.take(arr, [0], axis=d)], axis=d)
    return creation.tensor(arr, dtype=t.dtype, device=t.device)


def _trace(model, args, kwargs, fold: bool):
    trace = Trace(fold, module_symbolic)
    args, kwargs = _map_tensors((args, kwargs), trace.add_input)
    out = trace.run(model, args, kwargs)
    return trace, out


def _pair(a: Trace, b: Trace) -> None:
    if len(a.nodes) != len(b.nodes) or any(x.fn is not y.fn for x, y in zip(a.nodes, b.nodes)):
        first = next((i for i, (x, y) in enumerate(zip(a.nodes, b.nodes)) if x.fn is not y.fn),
                     min(len(a.nodes), len(b.nodes)))
        raise OnnxExporterError(
            "the model ran different ops when its inputs changed (op "
            f"{first}: {a.nodes[first].name if first < len(a.nodes) else 'end'} vs "
            f"{b.nodes[first].name if first < len(b.nodes) else 'end'}): control flow that depends on input values "
            "or sizes cannot be exported by tracing")
    for x, y in zip(a.nodes, b.nodes):
        x.alt = y


def _params(model) -> dict:
    found = {}
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        found.setdefault(id(t), (name, t))
    return found


def _build_nodes(g, trace) -> None:
    for node in trace.nodes:
        fn = lookup(node, g.opset)
        result = fn(g, Call(g, node))
        names = result if isinstance(result, (list, tuple)) else [result]
        for k, name in zip(node.out_keys, names):
            if k is not None:
                g.bind(k, name or "")


def _shape(t, alt, dyn: dict, name: str) -> list:
    """A value's shape for value_info: the named dynamic dims, then dims that changed between the runs."""
    dims = []
    for i, n in enumerate(t.shape):
        if i in dyn:
            dims.append(dyn[i])
        elif alt is not None and alt.shape[i] != n:
            dims.append(f"{name}_dim_{i}")
        else:
            dims.append(int(n))
    return dims


def _outputs(g, outs_a, outs_b, names, dyn) -> list:
    infos, taken = [], set(g.initializers) | set(g.input_names)
    for i, (t, alt) in enumerate(zip(outs_a, outs_b)):
        name = names[i] if i < len(names) else ("output" if len(outs_a) == 1 else f"output_{i}")
        v = g.value(t, alt, "output")
        if v in taken or not any(v in n.output for n in g.nodes):  # an input, parameter, constant or repeat
            g.nodes.append(helper.make_node("Identity", [v], [name], name=g.fresh("/Identity")))
        else:
            g.rename(v, name)
        taken.add(name)
        infos.append(g.value_info(name, t.dtype, _shape(t, alt, dyn.get(name, {}), name)))
    return infos


def _prune(g, outputs) -> None:
    used = {i for n in g.nodes for i in n.input} | {o.name for o in outputs}
    for name in [n for n in g.initializers if n not in used]:
        del g.initializers[name]


def export_model(model, args, kwargs, *, names_in, names_out, opset, dynamic_axes, export_params,
                 keep_initializers_as_inputs, fold, verbose) -> onnx.ModelProto:
    dyn = normalize_dynamic_axes(dynamic_axes)
    for name in dyn:
        if name not in names_in and name not in (names_out or []) and not (name == "output" and not names_out):
            warnings.warn(f"Provided key {name} for dynamic axes is not a valid input/output name", stacklevel=3)
    trace_a, out_a = _trace(model, args, kwargs, fold)
    alt_inputs = iter(_perturbed(t, dyn.get(n, {}).keys()) for t, n in zip(flat_tensors((args, kwargs)), names_in))
    alt_args, alt_kwargs = _map_tensors((args, kwargs), lambda t: next(alt_inputs))
    try:
        trace_b, out_b = _trace(model, alt_args, alt_kwargs, fold)
    except Exception as e:
        raise OnnxExporterError("the model failed when run again with its inputs changed (values, and the "
                                f"dynamic_axes dims grown by one): {type(e).__name__}: {e}") from e
    _pair(trace_a, trace_b)
    g = GraphBuilder(opset, trace_a, trace_b, _params(model))
    g.input_names = names_in
    inputs = []
    for t, k, name in zip(trace_a.inputs, trace_a.input_keys, names_in):
        g.bind(k, name)
        inputs.append(g.value_info(name, t.dtype, _shape(t, None, dyn.get(name, {}), name)))
    _build_nodes(g, trace_a)
    outputs = _outputs(g, flat_tensors(out_a), flat_tensors(out_b), list(names_out or []), dyn)
    params = [numpy_helper.from_array(p.detach()._host(), name) for name, p in g.used_params.items()]
    if not export_params or keep_initializers_as_inputs:
        inputs += [g.value_info(name, p.dtype, list(p.shape)) for name, p in g.used_params.items()]
    _prune(g, outputs)
    inits = (params if export_params else []) + list(g.initializers.values())
    graph = helper.make_graph(g.nodes, "main_graph", inputs, outputs, initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="clgrad",
                              producer_version=__version__, ir_version=_IR_VERSION[opset])
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    return proto


def write(proto, f) -> None:
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)
