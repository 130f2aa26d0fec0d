"""``clgrad.device``: ``cpu`` or ``opencl:N``, and the process-wide default device."""
from __future__ import annotations

_TYPES = ("cpu", "opencl")


class device:
    """A device, as ``torch.device``: ``device("opencl:1")``, ``device("opencl", 1)``, ``device("cpu")``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None):  # noqa: A002 - torch's name
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(device, index) is not allowed; pass a type string")
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or a device, but got {type!r}")
        text = type.strip()
        if ":" in text:
            if index is not None:
                raise ValueError(f"type (string) must not include an index because index was passed explicitly: {text}")
            text, _, idx = text.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if text not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if text == "cpu" and index != 0:
                raise RuntimeError(f"cpu device index must be 0 or None, got {index}")
        self.type = text
        self.index = None if text == "cpu" else index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
_default: device = CPU


def resolve(d) -> device:
    """Turn a user's device argument into a concrete device (``opencl`` gets the default index)."""
    if d is None:
        return _default
    if isinstance(d, int):
        d = device("opencl", d)
    elif not isinstance(d, device):
        d = device(d)
    if d.type == "opencl":
        from .backends.opencl import runtime

        if d.index is None:
            return device("opencl", runtime.default_index())
        runtime.get(d.index)  # raises a listing of the devices present when out of range
    return d


def set_default_device(d) -> None:
    """Make tensors created without ``device=`` live on ``d``: ``clgrad.set_default_device("opencl")``."""
    global _default
    _default = CPU if d is None else resolve(d)


def get_default_device() -> device:
    return _default
