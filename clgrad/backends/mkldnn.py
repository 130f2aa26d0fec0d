"""``torch.backends.mkldnn``: clgrad's cpu backend is numpy and does not use oneDNN, so ``is_available()`` is
False; ``enabled`` is accepted and changes nothing."""
from __future__ import annotations

enabled = True
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False
