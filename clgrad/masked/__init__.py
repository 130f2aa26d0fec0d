"""``clgrad.masked``: PyTorch's ``torch.masked`` reductions and normalizations (``mask=`` keyword), strided only."""
from __future__ import annotations

from ._ops import *  # noqa: F401,F403
from ._ops import __all__  # noqa: F401
