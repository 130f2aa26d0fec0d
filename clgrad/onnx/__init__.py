"""``clgrad.onnx``: export a model to ONNX, with ``torch.onnx.export``'s arguments.

The model runs once on the example inputs while every autograd ``Function`` call is recorded (a hook in
``autograd/function.py`` that costs one global read when off); each recorded op maps to ONNX nodes through the
symbolic table (``symbolic.py``, ``symbolic_nn.py``), recurrent modules to ONNX's RNN/LSTM/GRU ops
(``symbolic_rnn.py``). It needs the optional ``onnx`` package (``pip install clgrad[onnx]``).

>>> clgrad.onnx.export(model, (x,), "model.onnx", input_names=["x"], dynamic_axes={"x": {0: "batch"}})
"""
from __future__ import annotations

import contextlib
import enum

from . import errors
from .errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError

__all__ = ["export", "is_in_onnx_export", "TrainingMode", "errors", "OnnxExporterError",
           "UnsupportedOperatorError", "SymbolicValueError"]

_STATE = {"exporting": False}


class TrainingMode(enum.IntEnum):
    """The mode the model is exported in (PyTorch's enum): EVAL (default), PRESERVE, or TRAINING."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export() -> bool:
    """Whether an ``export`` is running (a model may take an export-friendly path)."""
    return _STATE["exporting"]


@contextlib.contextmanager
def _exporting(model, training):
    was = model.training
    if training == TrainingMode.EVAL:
        model.eval()
    elif training == TrainingMode.TRAINING:
        model.train()
    _STATE["exporting"] = True
    try:
        yield
    finally:
        _STATE["exporting"] = False
        model.train(was)


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=False, external_data=False, export_params=True,
           keep_initializers_as_inputs=False, dynamic_axes=None, training=TrainingMode.EVAL,
           do_constant_folding=True):
    """Export ``model`` (an ``nn.Module``) run on ``args`` to ONNX, written to ``f`` (a path or a binary file
    object) if given; returns the ``onnx.ModelProto``.

    ``dynamic_axes`` ({name: {dim: "symbol"}} or {name: [dims]}) leaves those dims free; ``opset_version``
    (13 to 20, default 20); ``do_constant_folding`` folds ops on parameters and constants into initializers;
    ``export_params=False`` leaves the parameters as graph inputs. ``dynamo`` and ``external_data`` are
    accepted for PyTorch compatibility: clgrad has one exporter, and writes one self-contained file.
    """
    from .exporter import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, export_model, split_args, write
    from .exporter import input_names as names_of

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset}. clgrad.onnx exports opsets {MIN_OPSET} to "
                         f"{MAX_OPSET}")
    if not callable(getattr(model, "modules", None)):
        raise TypeError(f"clgrad.onnx.export() expects an nn.Module, got {type(model).__name__}")
    args, kwargs = split_args(args, kwargs)
    names_in = names_of(model, args, kwargs, input_names)
    with _exporting(model, training):
        proto = export_model(model, args, kwargs, names_in=names_in, names_out=output_names, opset=opset,
                             dynamic_axes=dynamic_axes, export_params=export_params,
                             keep_initializers_as_inputs=keep_initializers_as_inputs, fold=do_constant_folding,
                             verbose=verbose)
    if f is not None:
        write(proto, f)
    return proto
