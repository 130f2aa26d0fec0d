"""Every class clgrad.nn has is importable from the module path PyTorch gives it (``torch.nn.modules.<file>``),
so code written against ``torch.nn.modules.activation.MultiheadAttention`` and the like runs unchanged."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import clgrad.nn as nn

torch = pytest.importorskip("torch")


def _torch_classes() -> dict[str, list[str]]:
    """torch.nn.modules submodule name -> names of the classes it defines that clgrad.nn has too."""
    found = {}
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        if info.name.startswith("_"):  # _functions: autograd Functions (CrossMapLRN2d's), not layers
            continue
        module = importlib.import_module(f"torch.nn.modules.{info.name}")
        names = [name for name, obj in vars(module).items()
                 if inspect.isclass(obj) and obj.__module__ == module.__name__ and inspect.isclass(getattr(nn, name, None))]
        if names:
            found[info.name] = names
    return found


TORCH_CLASSES = _torch_classes()


@pytest.mark.parametrize("file", sorted(TORCH_CLASSES))
def test_same_module_path_as_torch(file):
    module = importlib.import_module(f"clgrad.nn.modules.{file}")
    for name in TORCH_CLASSES[file]:
        assert getattr(module, name, None) is getattr(nn, name), f"clgrad.nn.modules.{file}.{name}"


def test_the_walk_covers_the_layers():
    """The walk finds the files the layers live in (so an empty result can't pass silently)."""
    expected = {"activation", "batchnorm", "channelshuffle", "container", "conv", "dropout", "flatten", "fold",
                "instancenorm", "linear", "loss", "module", "normalization", "padding", "pixelshuffle", "pooling",
                "rnn", "sparse", "transformer", "upsampling"}
    assert expected <= set(TORCH_CLASSES)
    assert "MultiheadAttention" in TORCH_CLASSES["activation"]
    assert "NonDynamicallyQuantizableLinear" in TORCH_CLASSES["linear"]
    assert len(TORCH_CLASSES["transformer"]) == 5
