"""``clgrad.nn``: functional API now; Modules come with the nn issue."""
from __future__ import annotations

from . import functional  # noqa: F401
