"""``repr`` of tensors, formatted as PyTorch prints them."""
from __future__ import annotations

import numpy as np

from . import dtypes as D


def tensor_repr(t) -> str:
    from . import backends

    host = backends.get(t.device).read(t)
    body = np.array2string(host, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if t.dtype not in (D.get_default_dtype(), D.int64, D.bool) or t.numel() == 0 and t.dtype is not D.get_default_dtype():
        extras.append(f"dtype={t.dtype!r}")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
