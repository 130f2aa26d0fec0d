"""The per-thread autocast state (a leaf module: ``clgrad.amp`` sets it, the autograd engine suspends it)."""
from __future__ import annotations

import threading

# what autocast regions are open on this thread: {device type: dtype}; "inside" > 0 while an autocast op (or a
# backward pass) runs, so the ops it calls run in the dtypes they are given, as below PyTorch's Autocast key
STATE = threading.local()


def active() -> dict | None:
    """The enabled autocast device types and dtypes, or None when no cast may happen now."""
    regions = getattr(STATE, "regions", None)
    if not regions or getattr(STATE, "inside", 0):
        return None
    return regions


class suspended:
    """No autocast casts while this is open (an autocast op's own calls, a backward pass)."""

    def __enter__(self):
        STATE.inside = getattr(STATE, "inside", 0) + 1

    def __exit__(self, *exc):
        STATE.inside -= 1
