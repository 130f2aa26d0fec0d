"""``torch.backends.cudnn``'s flags, so programs that set them run unchanged. clgrad has no cuDNN
(``is_available()`` is False), and none of the flags changes what clgrad computes:

- ``benchmark``: torch times cuDNN's convolution algorithms per shape. clgrad's convolutions are im2col plus its
  GEMM kernel, whose tiles ``clgrad.backends.opencl.autotune.autotune(device)`` tunes once per device, opt-in (it
  builds a kernel per candidate); tuned tiles are used whether or not ``benchmark`` is set.
- ``deterministic``: already true of clgrad's convolutions and pooling: they use no atomics, so their sums run in a
  fixed order (``clgrad.backends.flags`` lists the ops that do not).
- ``allow_tf32``: clgrad has no TF32 mode; float32 convolutions compute in float32.
- ``enabled``: there is no cuDNN to switch off.

``torch.backends.cudnn.benchmark = True`` sets the module attribute, as in torch.
"""
from __future__ import annotations

import contextlib
import sys

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: clgrad never uses cuDNN."""
    return False


def version() -> None:
    """None, as torch reports where cuDNN is absent."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor``: never, in clgrad."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a ``with`` block and restore them after, like ``torch.backends.cudnn.flags``."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    module = sys.modules[__name__]
    before = {name: getattr(module, name) for name in names}
    values = dict(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        for name, value in values.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in before.items():
            setattr(module, name, value)
