"""Random numbers: Philox4x32-10 generators and sampling ops."""
from __future__ import annotations

__all__: list[str] = []


def install(T) -> None:
    """Attach in-place sampling methods (uniform_, normal_, ...) to Tensor."""
