"""``clgrad.save`` / ``clgrad.load``: checkpoints in the safetensors format. Loading never runs code.

File layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N, N bytes
of JSON (``{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}``, padded with
spaces to a multiple of 8), then the raw little-endian tensor bytes, packed in order. The header's
``__metadata__`` string map holds:

- ``"format": "pt"``, so tools that expect PyTorch's safetensors files accept ours;
- ``"clgrad"``: a JSON description of the saved object (see ``_Encoder``). Containers are one-key
  objects (``{"dict": [[key, value], ...]}``, ``{"odict": ...}``, ``{"list": [...]}``, ``{"tuple": [...]}``),
  a tensor is ``{"tensor": name, "device": "opencl:2"}``, ``None``/bools/ints/strings/finite floats are
  plain JSON, and a non-finite float is ``{"float": "nan"}``;
- ``"clgrad.sha256"``: a digest of the rest of the metadata, the tensor entries and the data, so a bit flip
  anywhere in a clgrad checkpoint is an error rather than silently wrong weights.

Tensors are named by their path in the object (``"state.0.exp_avg"``), so a flat ``state_dict`` keeps its
keys and loads in PyTorch with ``safetensors.torch.load_file``. A file without the ``"clgrad"`` entry (one
written by ``safetensors.torch.save_file``) loads as a flat ``dict`` of tensors; such files carry no
digest, so only their structure is checked. Views are saved as their values, and tensors that share
storage are saved as separate copies (loading does not restore the sharing).
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import secrets
from collections import OrderedDict

import numpy as np

from . import dtypes as D
from .device import device as _device
from .device import resolve
from .ops.creation import tensor
from .tensor import is_tensor

__all__ = ["save", "load", "CheckpointError"]

TREE_KEY = "clgrad"
DIGEST_KEY = "clgrad.sha256"
VERSION = 1
MAX_HEADER = 100_000_000  # the safetensors library's own limit on the JSON header
MAX_DEPTH = 100  # containers nested deeper than this are refused both ways (JSON parsing recurses)

_ST_DTYPE = {
    "BOOL": D.bool, "U8": D.uint8, "I8": D.int8, "I16": D.int16, "I32": D.int32, "I64": D.int64,
    "F16": D.float16, "F32": D.float32, "F64": D.float64,
}
_ST_NAME = {dt.name: code for code, dt in _ST_DTYPE.items()}
_SCALARS = (type(None), bool, int, float, str)


class CheckpointError(RuntimeError):
    """A file ``clgrad.load`` refuses: truncated, corrupted, not a safetensors file, or hostile."""


# ---- save -------------------------------------------------------------------------------------


def save(obj, f) -> None:
    """Write ``obj`` (nested dicts, OrderedDicts, lists and tuples of tensors, numbers, strings, bools and
    None) to ``f``, a path or a binary file object: ``clgrad.save(model.state_dict(), "model.pt")``.

    Writing to a path is atomic: the data goes to a temporary file in the same directory, which is
    fsynced and renamed over ``f``, so a crash leaves either the old or the new checkpoint, never half of one.
    """
    encoder = _Encoder()
    tree = encoder.node(obj, (), 0)
    chunks = _payload(tree, encoder.arrays)
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(os.fspath(f), chunks)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"save(): f must be a path or a binary file object, not {type(f).__name__}")
    for chunk in chunks:
        f.write(chunk)
    if hasattr(f, "flush"):
        f.flush()


def _location(t) -> str:
    return str(t.device)


class _Encoder:
    """Turns an object into its JSON description, collecting tensors as little-endian host arrays."""

    def __init__(self):
        self.arrays: dict[str, tuple[list[int], D.dtype, np.ndarray]] = {}

    def node(self, obj, path: tuple, depth: int):
        if depth > MAX_DEPTH:
            raise ValueError(f"save(): objects nested more than {MAX_DEPTH} levels deep are not supported")
        if is_tensor(obj):
            return self.tensor(obj, path)
        if isinstance(obj, (np.bool_, np.integer, np.floating)):
            obj = obj.item()
        if isinstance(obj, _SCALARS):
            return _scalar(obj)
        if isinstance(obj, D.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, _device):
            return {"device": str(obj)}
        if isinstance(obj, dict):
            pairs = [[_key(k, path), self.node(v, path + (k,), depth + 1)] for k, v in obj.items()]
            return {"odict" if isinstance(obj, OrderedDict) else "dict": pairs}
        if isinstance(obj, (list, tuple)):
            items = [self.node(v, path + (i,), depth + 1) for i, v in enumerate(obj)]
            return {"tuple" if isinstance(obj, tuple) else "list": items}
        where = ".".join(map(str, path)) or "the top level"
        raise TypeError(
            f"save(): can't save an object of type {type(obj).__name__} (at {where}); clgrad checkpoints hold "
            "tensors, dicts, lists, tuples, numbers, strings, bools and None"
        )

    def tensor(self, t, path: tuple) -> dict:
        name = ".".join(map(str, path)) or "tensor"
        if name in self.arrays or name == "__metadata__":
            name = next(f"{name}#{i}" for i in range(1, len(self.arrays) + 2) if f"{name}#{i}" not in self.arrays)
        host = np.ascontiguousarray(t.detach().cpu().numpy())  # a view's values, not its whole storage
        self.arrays[name] = (list(t.shape), t.dtype, host.astype(host.dtype.newbyteorder("<"), copy=False))
        node = {"tensor": name, "device": _location(t)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node


def _scalar(x):
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": repr(x)}  # 'nan', 'inf', '-inf': JSON has no spelling for them
    return x


def _key(k, path: tuple):
    if isinstance(k, (np.bool_, np.integer, np.floating)):
        k = k.item()
    if isinstance(k, _SCALARS):
        return _scalar(k)
    if isinstance(k, tuple):
        return {"tuple": [_key(x, path) for x in k]}
    raise TypeError(f"save(): can't save a dict key of type {type(k).__name__} (at {'.'.join(map(str, path))})")


def _digest(meta: dict, entries: dict, buffers) -> str:
    """sha256 of the metadata (but the digest), the tensor entries and the data: any bit flip shows."""
    h = hashlib.sha256()
    for part in (meta, entries):
        h.update(json.dumps(part, sort_keys=True, separators=(",", ":")).encode() + b"\0")
    for buf in buffers:
        h.update(buf)
    return h.hexdigest()


def _payload(tree, arrays: dict) -> list:
    tree_text = json.dumps({"version": VERSION, "tree": tree}, allow_nan=False, separators=(",", ":"))
    return _assemble(tree_text, arrays)


def _assemble(tree_text: str, arrays: dict) -> list:
    """The file's bytes as chunks: length, header, then each tensor's data."""
    entries, offset = {}, 0
    for name, (shape, dt, host) in arrays.items():
        entries[name] = {"dtype": _ST_NAME[dt.name], "shape": shape, "data_offsets": [offset, offset + host.nbytes]}
        offset += host.nbytes
    buffers = [host.reshape(-1).view(np.uint8) for _, _, host in arrays.values()]
    meta = {"format": "pt", TREE_KEY: tree_text}
    meta[DIGEST_KEY] = _digest(meta, entries, buffers)
    header = json.dumps({"__metadata__": meta, **entries}, allow_nan=False, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)  # keeps the data 8-byte aligned, as safetensors does
    return [len(header).to_bytes(8, "little"), header, *buffers]


def _atomic_write(path: str, chunks: list) -> None:
    path = os.path.realpath(path)  # through a symlink to its target, as open(path, "wb") would write
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    # os.open with 0o666 (not tempfile's 0o600) so the checkpoint gets the same permissions as a plain open()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    # makes the rename itself durable; not possible on every platform (Windows can't open a directory)
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- load -------------------------------------------------------------------------------------


def load(f, map_location=None, *, weights_only=None, mmap=None):
    """Read an object written by ``save`` (or any safetensors file) from a path or binary file object.

    Tensors go to ``map_location`` (a device or string, a dict mapping saved device strings to new ones,
    or a callable ``fn(cpu_tensor, saved_device_str)`` returning a tensor or None), else to the device they
    were saved from when it exists here, else to cpu. ``weights_only`` and ``mmap`` are accepted for
    PyTorch compatibility; loading is always weights-only. A bad file raises ``CheckpointError``.
    """
    with _opened(f) as (fh, size, fname):
        entries, meta, header_len = _read_header(fh, size, fname)
        body = _read_exact(fh, size - 8 - header_len, fname, "the tensor data")
    place = _Placer(map_location)
    if TREE_KEY not in meta and DIGEST_KEY not in meta:  # a plain safetensors file, e.g. from PyTorch
        return {name: place(_array(body, e), None) for name, e in entries.items()}
    signed = {k: v for k, v in meta.items() if k != DIGEST_KEY}
    if meta.get(DIGEST_KEY) != _digest(signed, entries, [body]):
        raise _bad(fname, "checksum mismatch: the file is corrupted")
    doc = _json(meta.get(TREE_KEY, ""), fname, "the object description")
    if not isinstance(doc, dict) or doc.get("version") != VERSION or set(doc) != {"version", "tree"}:
        raise _bad(fname, "unknown clgrad checkpoint version")
    decoder = _Decoder(fname, entries, body, place)
    obj = decoder.node(doc["tree"], 0)
    if decoder.unused:
        raise _bad(fname, f"tensor {sorted(decoder.unused)[0]!r} is not referenced by the object description")
    return obj


def _bad(fname: str, msg: str) -> CheckpointError:
    return CheckpointError(f"can't load checkpoint '{fname}': {msg}")


@contextlib.contextmanager
def _opened(f):
    """(binary file, bytes from the current position to the end, name for messages)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            yield fh, os.fstat(fh.fileno()).st_size, os.fspath(f)
        return
    if not hasattr(f, "read"):
        raise TypeError(f"load(): f must be a path or a binary file object, not {type(f).__name__}")
    fname = str(getattr(f, "name", "<file object>"))
    if not (hasattr(f, "seekable") and f.seekable()):
        data = f.read()
        yield io.BytesIO(data), len(data), fname
        return
    start = f.tell()
    size = f.seek(0, io.SEEK_END) - start
    f.seek(start)
    yield f, size, fname


def _read_exact(fh, n: int, fname: str, what: str) -> bytes:
    data = fh.read(n)
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"load(): the file must be opened in binary mode ('rb'), got {type(data).__name__} data")
    if len(data) != n:
        raise _bad(fname, f"the file is truncated (reading {what})")
    return data


def _read_header(fh, size: int, fname: str):
    if size < 8:
        raise _bad(fname, f"the file is truncated or empty ({size} bytes); a checkpoint starts with an 8-byte header")
    head = _read_exact(fh, 8, fname, "the header length")
    n = int.from_bytes(head, "little")
    plausible = n <= size - 8 and n <= MAX_HEADER
    # A real header's JSON follows its length. The pickle / zip signatures are checked only when it does not:
    # a length such as 128 or 384 starts with the byte 0x80, like a pickle, and must still load.
    raw = _read_exact(fh, n, fname, "the header") if plausible else b""
    if raw[:1] != b"{":
        if _looks_pickled(head):
            raise _bad(fname, "this looks like a pickle / torch.save file, which clgrad never loads because "
                       "unpickling can run arbitrary code; re-save it with safetensors (safetensors.torch.save_file)")
        if not plausible:
            raise _bad(fname, f"not a safetensors file, or truncated: header length {n} but the file has {size} bytes")
        raise _bad(fname, "not a safetensors file (the header is not a JSON object)")
    header = _json(raw, fname, "the header")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _bad(fname, "__metadata__ must map strings to strings")
    entries = {name: _entry(name, e, fname) for name, e in header.items()}
    _check_layout(entries, size - 8 - n, fname)
    return entries, meta, n


def _looks_pickled(head: bytes) -> bool:
    """A pickle of protocol 2 or later (PROTO opcode 0x80, then the protocol), or a zip (torch.save's format)."""
    return (head[:1] == b"\x80" and 2 <= head[1] <= 5) or head[:4] == b"PK\x03\x04"


def _unique_keys(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        raise ValueError(f"duplicate key {next(k for k, _ in pairs if k in seen or seen.add(k))[:80]!r}")
    return out


def _reject_constant(name):
    raise ValueError(f"invalid JSON constant {name}")


def _json(text, fname: str, what: str):
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except RecursionError:
        raise _bad(fname, f"{what} is nested too deeply") from None
    except ValueError as e:  # includes UnicodeDecodeError and json.JSONDecodeError
        raise _bad(fname, f"{what} is not valid JSON ({e})") from None


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _entry(name: str, e, fname: str) -> dict:
    if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
        raise _bad(fname, f"tensor {name!r} must have exactly 'dtype', 'shape' and 'data_offsets'")
    if not isinstance(e["dtype"], str) or e["dtype"] not in _ST_DTYPE:
        raise _bad(fname, f"tensor {name!r} has unsupported dtype {str(e['dtype'])[:20]!r}; clgrad reads "
                   + ", ".join(_ST_DTYPE))
    shape, offsets = e["shape"], e["data_offsets"]
    if not isinstance(shape, list) or len(shape) > 64 or not all(_is_int(s) and s >= 0 for s in shape):
        raise _bad(fname, f"tensor {name!r} has an invalid shape")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))
            and 0 <= offsets[0] <= offsets[1]):
        raise _bad(fname, f"tensor {name!r} has invalid data_offsets")
    itemsize = _ST_DTYPE[e["dtype"]].itemsize
    if math.prod(s for s in shape if s) * itemsize >= 2**62:  # numpy refuses such shapes, even if empty
        raise _bad(fname, f"tensor {name!r} has an impossibly large shape")
    if offsets[1] - offsets[0] != math.prod(shape) * itemsize:
        raise _bad(fname, f"tensor {name!r}: data_offsets {offsets} don't match shape {shape} of {e['dtype']}")
    return e


def _check_layout(entries: dict, data_size: int, fname: str) -> None:
    """The tensors must tile the data exactly, in order: no overlap, no gap, nothing past the end."""
    end = 0
    for name, e in sorted(entries.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        begin, stop = e["data_offsets"]
        if stop > data_size:
            raise _bad(fname, f"the file is truncated: tensor {name!r} ends at byte {stop} of {data_size}")
        if begin != end:
            raise _bad(fname, f"tensor {name!r} " + ("overlaps another" if begin < end else "leaves a gap"))
        end = stop
    if end != data_size:
        raise _bad(fname, f"{data_size - end} bytes after the last tensor")


def _array(body: bytes, e: dict) -> tuple[np.ndarray, D.dtype]:
    dt = _ST_DTYPE[e["dtype"]]
    begin, end = e["data_offsets"]
    if begin == end:
        return np.zeros(e["shape"], dt.np), dt
    raw = np.frombuffer(body, np.uint8, end - begin, begin)
    if dt is D.bool:
        return (raw != 0).reshape(e["shape"]), dt  # a hostile byte like 0x02 still becomes a real bool
    return raw.view(dt.np.newbyteorder("<")).reshape(e["shape"]), dt


class _Placer:
    """Puts a loaded array on the device ``map_location`` chooses."""

    def __init__(self, map_location):
        if isinstance(map_location, dict):  # keys may be devices or strings: compare them as strings
            map_location = {str(_device(k)): v for k, v in map_location.items()}
        self.map_location = map_location
        self.cache: dict = {}

    def __call__(self, loaded: tuple[np.ndarray, D.dtype], saved: str | None):
        arr, dt = loaded
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, _device, dict)):
            out = ml(tensor(arr, dtype=dt, device="cpu"), saved if saved is not None else "cpu")
            if out is not None:
                return out
            ml = None
        if isinstance(ml, dict):  # {saved device: new device}; devices it doesn't name load as by default
            ml = ml.get(saved)
        return tensor(arr, dtype=dt, device=self.target(ml, saved))

    def target(self, ml, saved):
        if ml is not None:
            return resolve(ml)  # the user's choice: a bad one is the user's error, raised as is
        if saved not in self.cache:
            try:
                self.cache[saved] = resolve(saved) if saved is not None else resolve("cpu")
            except RuntimeError:  # saved on a device this machine doesn't have
                self.cache[saved] = resolve("cpu")
        return self.cache[saved]


class _Decoder:
    """Rebuilds the object from its JSON description; every reference and type is checked."""

    def __init__(self, fname: str, entries: dict, body: bytes, place: _Placer):
        self.fname, self.entries, self.body, self.place = fname, entries, body, place
        self.unused = set(entries)

    def bad(self, msg: str) -> CheckpointError:
        return _bad(self.fname, f"bad object description: {msg}")

    def node(self, x, depth: int):
        if depth > MAX_DEPTH:
            raise self.bad("nested too deeply")
        if isinstance(x, (type(None), bool, int, float, str)):
            return x
        if isinstance(x, list) or not isinstance(x, dict) or not x:
            raise self.bad("unexpected JSON value")
        if "tensor" in x:
            return self.tensor(x)
        tag, value = next(iter(x.items())) if len(x) == 1 else (None, None)
        if tag in ("list", "tuple") and isinstance(value, list):
            items = [self.node(v, depth + 1) for v in value]
            return items if tag == "list" else tuple(items)
        if tag in ("dict", "odict") and isinstance(value, list):
            if not all(isinstance(p, list) and len(p) == 2 for p in value):
                raise self.bad("dict items must be [key, value] pairs")
            pairs = [(self.key(k, depth + 1), self.node(v, depth + 1)) for k, v in value]
            return dict(pairs) if tag == "dict" else OrderedDict(pairs)
        return self.leaf(tag, value)

    def leaf(self, tag, value):
        if tag == "float" and value in ("nan", "inf", "-inf"):
            return float(value)
        if tag == "dtype" and isinstance(value, str) and value in _ST_NAME:
            return D.as_dtype(value)
        if tag == "device" and isinstance(value, str):
            try:
                return _device(value)
            except (RuntimeError, TypeError):
                raise self.bad(f"invalid device {value[:40]!r}") from None
        raise self.bad(f"unknown node {str(tag)[:40]!r}")

    def key(self, k, depth: int):
        if depth > MAX_DEPTH:
            raise self.bad("nested too deeply")
        if isinstance(k, (type(None), bool, int, float, str)):
            return k
        if isinstance(k, dict) and len(k) == 1 and isinstance(k.get("tuple"), list):
            return tuple(self.key(v, depth + 1) for v in k["tuple"])
        if isinstance(k, dict) and len(k) == 1 and "float" in k:
            return self.leaf("float", k["float"])
        raise self.bad("invalid dict key")

    def tensor(self, x: dict):
        name, saved = x.get("tensor"), x.get("device")
        if not set(x) <= {"tensor", "device", "requires_grad"} or not isinstance(saved, str):
            raise self.bad("a tensor needs exactly a name and a device")
        if name not in self.unused:
            raise self.bad(f"tensor {str(name)[:80]!r} " + ("is referenced twice" if name in self.entries
                                                              else "is not in the file"))
        try:
            saved = str(_device(saved))
        except (RuntimeError, TypeError):
            raise self.bad(f"invalid device {saved[:40]!r}") from None
        self.unused.discard(name)
        t = self.place(_array(self.body, self.entries[name]), saved)
        if x.get("requires_grad") is True and t.dtype.is_floating_point:
            t.requires_grad_(True)
        return t
