"""Public linalg ops."""
from __future__ import annotations

__all__: list[str] = []


def install(T) -> None:
    """Attach this module's ops to Tensor as methods."""
