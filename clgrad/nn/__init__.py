"""``clgrad.nn``: Parameter, Module, containers, layers and losses, plus ``functional``, ``init`` and ``utils``."""
from __future__ import annotations

from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["DataParallel", "Parameter", "functional", "init", "parallel", "utils"] + _modules_all
__all__ += ["UninitializedParameter", "UninitializedBuffer"]
