"""``clgrad.device``: ``cpu`` or ``opencl:N``, and the process-wide default device."""
from __future__ import annotations

import re

_TYPES = ("cpu", "opencl")
_INDEX = re.compile(r"0|[1-9][0-9]*")  # torch rejects '01', '-1', '+1' and blanks


class device:
    """A device, as ``torch.device``: ``device("opencl:1")``, ``device("opencl", 1)``, ``device("cpu")``.

    A bare int is an OpenCL index, as torch reads it as an accelerator index: ``device(1)`` is ``opencl:1``.
    Unlike ``torch.device``, a device also compares equal to its string: ``x.device == "cpu"``.
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | device | int, index: int | None = None):  # noqa: A002 - torch's name
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): argument 'type' (position 1) must be str, not clgrad.device")
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            type, index = "opencl", type
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string, a device or an int, but got {type!r}")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not {_typename(index)}")
        text = type
        if ":" in text:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {text}")
            text, _, idx = text.partition(":")
            if text in _TYPES and not _INDEX.fullmatch(idx):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx) if text in _TYPES else None
        if text not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self.type = text
        self.index = index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):  # == never raises: an unparsable string is just unequal
                return False
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

    def __enter__(self) -> device:
        """``with clgrad.device("opencl"):`` makes tensors created without ``device=`` live there, as in torch."""
        _entered.append(_default)
        set_default_device(self)
        return self

    def __exit__(self, *exc_info) -> None:
        set_default_device(_entered.pop())


def _typename(x) -> str:
    return type(x).__name__


CPU = device("cpu")
_default: device = CPU
_entered: list[device] = []  # the defaults that ``with device(...)`` blocks replaced, innermost last
_current: int | None = None  # the OpenCL index ``opencl`` means once set_current_index() chose one


def resolve(d) -> device:
    """Turn a user's device argument into the concrete device a tensor lives on.

    ``None`` is the default device, ``opencl`` gets the default index (``CLGRAD_DEVICE``, else the best healthy
    device), an int is an OpenCL index, and every cpu (``cpu:0`` too) is the one host device. A missing OpenCL
    index raises a RuntimeError that lists the devices present; a device that failed the health check raises one
    that quotes why and names the healthy ones.
    """
    if d is None:
        return _default
    if not isinstance(d, device):
        d = device(d)
    if d.type == "cpu":
        return CPU
    from .backends.opencl import runtime

    if d.index is None:
        return device("opencl", current_index())
    # raises a listing of the devices present when out of range, and the reason when it failed the health check
    runtime.require(runtime.get(d.index))
    return d


def set_default_device(d) -> None:
    """Make tensors created without ``device=`` live on ``d``: ``clgrad.set_default_device("opencl")``.
    ``None`` restores cpu."""
    global _default
    _default = CPU if d is None else resolve(d)


def get_default_device() -> device:
    """The device tensors are created on when no ``device=`` is given."""
    return _default


def current_index() -> int:
    """The OpenCL index a bare ``opencl`` means: the one ``set_current_index`` (``clgrad.accelerator.set_device_index``,
    ``clgrad.opencl.set_device``) chose, else ``CLGRAD_DEVICE``, else the best healthy device."""
    if _current is not None:
        return _current
    from .backends.opencl import runtime

    return runtime.default_index()


def set_current_index(index: int | None) -> int | None:
    """Make a bare ``opencl`` mean ``opencl:index`` in this process (None: back to the default choice); returns the
    previous explicit choice. torch keeps one current device per thread; clgrad keeps one per process. The device
    must be present and healthy."""
    global _current
    previous = _current
    if index is None:
        _current = None
        return previous
    from .backends.opencl import runtime

    _current = runtime.require(runtime.get(index)).index
    return previous
