"""Utilities mirroring ``torch.utils``."""
from __future__ import annotations

from . import data  # noqa: F401
