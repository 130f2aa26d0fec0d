"""``repr`` of tensors, character for character as PyTorch's ``torch/_tensor_str.py`` prints them.

The data is read from the device once (a contiguous numpy copy); everything after that is host-side string
work on numpy arrays. Floats are formatted as Python floats (float64), as torch's ``tolist()`` does.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from . import backends
from . import dtypes as D


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

# profile -> (precision, threshold, edgeitems, linewidth), as torch.set_printoptions
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print, as ``torch.set_printoptions``: ``clgrad.set_printoptions(precision=2)``.

    ``profile`` is 'default', 'short' or 'full' (never summarize); explicit arguments override it.
    ``sci_mode`` True/False forces or forbids scientific notation; None (also what omitting it means,
    as in torch) lets the values decide.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Unknown profile {profile!r}; expected one of {', '.join(_PROFILES)}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold,
         PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth) = _PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments ``set_printoptions`` accepts."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change print options: ``with printoptions(precision=2): print(t)``."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one notation and one column width for all elements, from the (summarized) values."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        values = values.reshape(-1)
        if not floating:
            self.width = max([1] + [len(str(v)) for v in values.tolist()])
            return
        finite = values[np.isfinite(values) & (values != 0)]
        if finite.size == 0:  # only zeros, nan and inf: they print as '0.', 'nan', 'inf'
            return
        mags = np.abs(finite)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        if self.sci_mode:
            lengths = (len(f"{v:.{p}e}") for v in finite.tolist())
        elif self.int_mode:  # '+ 1' for the '.' that marks a float
            lengths = (len(f"{v:.0f}") + 1 for v in finite.tolist())
        else:
            lengths = (len(f"{v:.{p}f}") for v in finite.tolist())
        self.width = max(lengths)

    def format(self, v) -> str:
        p = PRINT_OPTS.precision
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = f"{v:{self.width}.{p}e}"
        elif self.int_mode:
            s = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            s = f"{v:.{p}f}"
        return s.rjust(self.width)


class _ComplexFormatter:
    """torch's pair of formatters for complex values: one for the real parts, one for the imaginary parts."""

    def __init__(self, values: np.ndarray):
        self.re, self.im = _Formatter(values.real, True), _Formatter(values.imag, True)
        self.width = self.re.width + self.im.width + 1  # torch counts the 'j' in a column's width

    def format(self, v) -> str:
        imag = (self.im.format(v.imag) + "j").lstrip()
        return self.re.format(v.real) + ("" if imag[0] in "+-" else "+") + imag


def _summarized(a: np.ndarray) -> np.ndarray:
    """Only the elements a summarized print shows: the first and last ``edgeitems`` along every dim."""
    e = PRINT_OPTS.edgeitems
    if a.ndim and not e:  # nothing but '...' is printed
        return a[:0]
    for axis, n in enumerate(a.shape):
        if n > 2 * e:
            a = np.take(a, np.r_[0:e, n - e:n], axis=axis)
    return a


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    e = PRINT_OPTS.edgeitems
    per_line = max(1, (PRINT_OPTS.linewidth - indent) // (fmt.width + 2))  # + 2 for ', '
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [fmt.format(v) for v in a[:e].tolist()] + [" ..."] + [fmt.format(v) for v in a[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e, n = PRINT_OPTS.edgeitems, a.shape[0]
    if summarize and n > 2 * e:
        rows = [*range(e), None, *range(n - e, n)]
    else:
        rows = range(n)
    parts = ["..." if i is None else _nested_str(a[i], indent + 1, summarize, fmt) for i in rows]
    # sub-tensors of a k-dim tensor are separated by k - 1 newlines
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    # torch's arithmetic, including its off-by-two for the last line's length. Suffixes are measured as
    # torch spells them ('dtype=torch.int32'), so lines break exactly where torch's do.
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        size = len(suffix.replace("clgrad.", "torch."))
        if last_line_len + size + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + size
        else:
            out.append(", " + suffix)
            last_line_len += size + 2
    return "".join(out) + ")"


def tensor_repr(t) -> str:
    """``repr(t)`` as PyTorch prints it, with ``clgrad.`` where torch prints ``torch.``."""
    name = type(t).__name__
    prefix = "tensor(" if name in ("Tensor", "Parameter") else f"{name}("
    indent = len(prefix)
    host = t._host() if t.dtype.kind == "c" else backends.get(t.device).read(t)
    shape = tuple(t.shape)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if host.size == 0:
        body = "[]"
        if len(shape) != 1:
            suffixes.append(f"size={shape}")
        # nothing to infer the dtype from, so even int64 and bool are named
        if t.dtype is not D.get_default_dtype():
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={shape}")
        if t.dtype not in (D.get_default_dtype(), D.int64, D.bool, D.complex_of(D.get_default_dtype())):
            suffixes.append(f"dtype={t.dtype!r}")
        floating = t.dtype.is_floating_point
        if floating:
            host = host.astype(np.float64)  # format what torch's tolist() gives: Python floats
        summarize = host.size > PRINT_OPTS.threshold
        if t.dtype.kind == "c":
            host = host.astype(np.complex128)
            fmt = _ComplexFormatter(_summarized(host) if summarize else host)
        else:
            fmt = _Formatter(_summarized(host) if summarize else host, floating)
        body = _nested_str(host, indent, summarize, fmt)
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif getattr(t, "requires_grad", False):
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
