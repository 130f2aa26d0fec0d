"""The exporter's errors, with ``torch.onnx.errors``' names and hierarchy (all are RuntimeErrors)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "SymbolicValueError", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op the model ran has no ONNX mapping (at this opset); the message names it and what is supported."""

    def __init__(self, name: str, version: int, supported_version: int | None = None, supported=()):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. Support for "
                   f"this operator was added in version {supported_version}, try exporting with this version")
        else:
            msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not supported"
        if supported:
            msg += f". clgrad.onnx exports these operators: {', '.join(sorted(supported))}"
        super().__init__(msg)
        self.name = name


class SymbolicValueError(OnnxExporterError):
    """An op's arguments can't be expressed in ONNX (for example a shape that depends on a dynamic axis in a way
    the exporter cannot write down)."""
