"""The safetensors layout clgrad checkpoints use: the JSON tree of containers, the header, the digest.

File layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N, N bytes
of JSON (``{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}``, padded with
spaces to a multiple of 8), then the raw little-endian tensor bytes, packed in order. The header's
``__metadata__`` string map holds:

- ``"format": "pt"``, so tools that expect PyTorch's safetensors files accept ours;
- ``"clgrad"``: a JSON document describing the saved object. Version 1 (``{"version": 1, "tree": ...}``) is a tree
  of containers (see ``Encoder``): one-key objects (``{"dict": [[key, value], ...]}``, ``{"odict": ...}``,
  ``{"list": [...]}``, ``{"tuple": [...]}``), a tensor is ``{"tensor": name, "device": "opencl:2"}``,
  ``None``/bools/ints/strings/finite floats are plain JSON, and a non-finite float is ``{"float": "nan"}``.
  Version 2 (``{"version": 2, "pickle": entry}``) names a uint8 entry holding a pickle of the object whose
  tensors are persistent ids naming the other entries (see ``_pickled.py``);
- ``"clgrad.sha256"``: a digest of the rest of the metadata, the tensor entries and the data, so a bit flip
  anywhere in a clgrad checkpoint is an error rather than silently wrong weights.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict

import numpy as np

from .. import dtypes as D
from ..device import device as _device
from ..device import resolve
from ..ops.creation import tensor
from ..tensor import Tensor, is_tensor

TREE_KEY = "clgrad"
DIGEST_KEY = "clgrad.sha256"
VERSION = 1  # a tree of containers
PICKLE_VERSION = 2  # a pickle with persistent tensor ids
# The JSON header: a ResNet-50 state_dict's is 49 KB, its Adam state's 77 KB, both together 141 KB. 16 MiB leaves
# a 100x margin; the safetensors library allows 100 MB, and a 90 MB header of one JSON list cost 364 MB to parse.
MAX_HEADER = 16 * 2**20
MAX_DEPTH = 100  # containers nested deeper than this are refused by the JSON tree (JSON parsing recurses)
MAX_MESSAGE = 1000  # error messages quote at most this much of a file's content

_ST_DTYPE = {
    "BOOL": D.bool, "U8": D.uint8, "I8": D.int8, "I16": D.int16, "I32": D.int32, "I64": D.int64,
    "F16": D.float16, "BF16": D.bfloat16, "F32": D.float32, "F64": D.float64,
}
_ST_NAME = {dt.name: code for code, dt in _ST_DTYPE.items()}
_SCALARS = (type(None), bool, int, float, str)


class CheckpointError(RuntimeError):
    """A file ``clgrad.load`` refuses: truncated, corrupted, not a safetensors file, or hostile."""


class NotATree(TypeError):
    """The object holds something the JSON tree can't express (a Module, a set, ...): it is pickled instead."""


def bad(fname: str, msg: str) -> CheckpointError:
    if len(msg) > MAX_MESSAGE:
        msg = msg[:MAX_MESSAGE] + "... (message cut)"
    return CheckpointError(f"can't load checkpoint '{fname}': {msg}")


def short(name) -> str:
    """A name from the file, quoted and cut short for an error message."""
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


# ---- save -------------------------------------------------------------------------------------


def _location(t) -> str:
    return str(t.device)


class Encoder:
    """Turns an object into its JSON description, collecting the tensors it names."""

    def __init__(self):
        self.tensors: dict[str, Tensor] = {}

    def node(self, obj, path: tuple, depth: int):
        if depth > MAX_DEPTH:
            raise NotATree(f"objects nested more than {MAX_DEPTH} levels deep")
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
        if isinstance(obj, dict):  # subclasses (defaultdict, ...) are saved as their base, as before pickling
            pairs = [[_key(k, path), self.node(v, path + (k,), depth + 1)] for k, v in obj.items()]
            return {"odict" if isinstance(obj, OrderedDict) else "dict": pairs}
        if isinstance(obj, (list, tuple)):  # so are namedtuples and clgrad.Size
            items = [self.node(v, path + (i,), depth + 1) for i, v in enumerate(obj)]
            return {"tuple" if isinstance(obj, tuple) else "list": items}
        raise NotATree(type(obj).__name__)

    def tensor(self, t, path: tuple) -> dict:
        name = ".".join(map(str, path)) or "tensor"
        if name in self.tensors or name == "__metadata__":
            name = next(f"{name}#{i}" for i in range(1, len(self.tensors) + 2) if f"{name}#{i}" not in self.tensors)
        self.tensors[name] = t
        node = {"tensor": name, "device": _location(t)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node


def host_arrays(tensors: dict) -> dict:
    """{name: (shape, dtype, little-endian host array)}: a view's values, not its whole storage."""
    out = {}
    for name, t in tensors.items():
        host = np.ascontiguousarray(t.detach().cpu()._host())  # _host: bfloat16 too (numpy() refuses it)
        out[name] = (list(t.shape), t.dtype, host.astype(host.dtype.newbyteorder("<"), copy=False))
    return out


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
    raise NotATree(f"a dict key of type {type(k).__name__}")


def tree_payload(obj) -> list | None:
    """The file's bytes as chunks when the JSON tree expresses ``obj``, else None."""
    encoder = Encoder()
    try:
        tree = encoder.node(obj, (), 0)
    except NotATree:
        return None
    text = json.dumps({"version": VERSION, "tree": tree}, allow_nan=False, separators=(",", ":"))
    return assemble(text, host_arrays(encoder.tensors))


def _digest(meta: dict, entries: dict, buffers) -> str:
    """sha256 of the metadata (but the digest), the tensor entries and the data: any bit flip shows."""
    h = hashlib.sha256()
    for part in (meta, entries):
        h.update(json.dumps(part, sort_keys=True, separators=(",", ":")).encode() + b"\0")
    for buf in buffers:
        h.update(buf)
    return h.hexdigest()


def assemble(doc_text: str, arrays: dict) -> list:
    """The file's bytes as chunks: length, header, then each tensor's data."""
    entries, offset = {}, 0
    for name, (shape, dt, host) in arrays.items():
        entries[name] = {"dtype": _ST_NAME[dt.name], "shape": shape, "data_offsets": [offset, offset + host.nbytes]}
        offset += host.nbytes
    buffers = [host.reshape(-1).view(np.uint8) for _, _, host in arrays.values()]
    meta = {"format": "pt", TREE_KEY: doc_text}
    meta[DIGEST_KEY] = _digest(meta, entries, buffers)
    header = json.dumps({"__metadata__": meta, **entries}, allow_nan=False, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)  # keeps the data 8-byte aligned, as safetensors does
    return [len(header).to_bytes(8, "little"), header, *buffers]


# ---- load: the header ---------------------------------------------------------------------------------


def parse_header(raw, size: int | None, fname: str):
    """(entries, metadata, size of the data) from the JSON header.

    ``size`` is the file's size from the header on, or None for a stream whose size the header declares.
    """
    header = _json(raw, fname, "the header")
    if not isinstance(header, dict):
        raise bad(fname, "not a safetensors file (the header is not a JSON object)")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise bad(fname, "__metadata__ must map strings to strings")
    entries = {name: _entry(name, e, fname) for name, e in header.items()}
    data_size = size - 8 - len(raw) if size is not None else max(
        (e["data_offsets"][1] for e in entries.values()), default=0)
    _check_layout(entries, data_size, fname)
    return entries, meta, data_size


def header_fits(n: int, size: int | None) -> bool:
    """Whether a header of ``n`` bytes is worth reading (``size``: the file's, None for a stream)."""
    return n <= MAX_HEADER and (size is None or n <= size - 8)


def refusal(head: bytes, n: int, size: int | None) -> str:
    """Why a file whose first 8 bytes are ``head`` and whose header does not start with '{' is refused.

    The pickle / zip signatures are checked only then: a real header length such as 128 or 384 starts with the
    byte 0x80, like a pickle, and must still load."""
    if _looks_pickled(head):
        return ("this looks like a pickle / torch.save file, which clgrad.load does not read (its checkpoints are "
                "safetensors files); re-save it with safetensors (safetensors.torch.save_file)")
    if size is not None and n > size - 8:
        return f"not a safetensors file, or truncated: header length {n} but the file has {size} bytes"
    if n > MAX_HEADER:
        return (f"header length {n} is over clgrad's limit of {MAX_HEADER} bytes (16 MiB; real checkpoints need far "
                "less: a ResNet-50 state_dict with its Adam state has a 141 KB header): not a clgrad checkpoint")
    return "not a safetensors file (the header is not a JSON object)"


def _looks_pickled(head: bytes) -> bool:
    """A pickle of protocol 2 or later (PROTO opcode 0x80, then the protocol), or a zip (torch.save's format)."""
    return (head[:1] == b"\x80" and 2 <= head[1] <= 5) or head[:4] == b"PK\x03\x04"


def _unique_keys(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        raise ValueError(f"duplicate key {short(next(k for k, _ in pairs if k in seen or seen.add(k)))}")
    return out


def _reject_constant(name):
    raise ValueError(f"invalid JSON constant {name}")


def _json(text, fname: str, what: str):
    try:
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8")
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except RecursionError:
        raise bad(fname, f"{what} is nested too deeply") from None
    except ValueError as e:  # includes UnicodeDecodeError and json.JSONDecodeError
        raise bad(fname, f"{what} is not valid JSON ({str(e)[:200]})") from None


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _entry(name: str, e, fname: str) -> dict:
    if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
        raise bad(fname, f"tensor {short(name)} must have exactly 'dtype', 'shape' and 'data_offsets'")
    if not isinstance(e["dtype"], str) or e["dtype"] not in _ST_DTYPE:
        raise bad(fname, f"tensor {short(name)} has unsupported dtype {str(e['dtype'])[:20]!r}; clgrad reads "
                  + ", ".join(_ST_DTYPE))
    shape, offsets = e["shape"], e["data_offsets"]
    if not isinstance(shape, list) or len(shape) > 64 or not all(_is_int(s) and s >= 0 for s in shape):
        raise bad(fname, f"tensor {short(name)} has an invalid shape")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))
            and 0 <= offsets[0] <= offsets[1]):
        raise bad(fname, f"tensor {short(name)} has invalid data_offsets")
    itemsize = _ST_DTYPE[e["dtype"]].itemsize
    if math.prod(s for s in shape if s) * itemsize >= 2**62:  # numpy refuses such shapes, even if empty
        raise bad(fname, f"tensor {short(name)} has an impossibly large shape")
    if offsets[1] - offsets[0] != math.prod(shape) * itemsize:
        raise bad(fname, f"tensor {short(name)}: data_offsets {offsets} don't match shape {shape} of {e['dtype']}")
    return e


def _check_layout(entries: dict, data_size: int, fname: str) -> None:
    """The tensors must tile the data exactly, in order: no overlap, no gap, nothing past the end."""
    end = 0
    for name, e in sorted(entries.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        begin, stop = e["data_offsets"]
        if stop > data_size:
            raise bad(fname, f"the file is truncated: tensor {short(name)} ends at byte {stop} of {data_size}")
        if begin != end:
            raise bad(fname, f"tensor {short(name)} " + ("overlaps another" if begin < end else "leaves a gap"))
        end = stop
    if end != data_size:
        raise bad(fname, f"{data_size - end} bytes after the last tensor")


# ---- load: the object ---------------------------------------------------------------------------------


def read_doc(meta: dict, entries: dict, body, fname: str):
    """The object document of a clgrad file after its digest is checked; None for a plain safetensors file."""
    if TREE_KEY not in meta and DIGEST_KEY not in meta:  # a plain safetensors file, e.g. from PyTorch
        return None
    signed = {k: v for k, v in meta.items() if k != DIGEST_KEY}
    if meta.get(DIGEST_KEY) != _digest(signed, entries, [body]):
        raise bad(fname, "checksum mismatch: the file is corrupted")
    doc = _json(meta.get(TREE_KEY, ""), fname, "the object description")
    fields = {VERSION: {"version", "tree"}, PICKLE_VERSION: {"version", "pickle"}}
    if not isinstance(doc, dict) or fields.get(doc.get("version")) != set(doc) or doc["version"] is True:
        raise bad(fname, "unknown clgrad checkpoint version")
    return doc


def array(body, e: dict) -> tuple[np.ndarray, D.dtype]:
    dt = _ST_DTYPE[e["dtype"]]
    begin, end = e["data_offsets"]
    if begin == end:
        return np.zeros(e["shape"], dt.np), dt
    raw = np.frombuffer(body, np.uint8, end - begin, begin)
    if dt is D.bool:
        return (raw != 0).reshape(e["shape"]), dt  # a hostile byte like 0x02 still becomes a real bool
    return raw.view(dt.np.newbyteorder("<")).reshape(e["shape"]), dt


class Placer:
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


class Tensors:
    """The file's tensors by name, each loaded once and placed by ``Placer``; names are checked."""

    def __init__(self, fname: str, entries: dict, body, place: Placer):
        self.fname, self.entries, self.body, self.place = fname, entries, body, place
        self.unused = set(entries)
        self.loaded: dict = {}

    def get(self, name, saved, requires_grad, shared: bool = False):
        if not isinstance(name, str) or name not in self.entries:
            raise bad(self.fname, f"bad object description: tensor {short(name)} is not in the file")
        if name not in self.unused and not (shared and name in self.loaded):
            raise bad(self.fname, f"bad object description: tensor {short(name)} is referenced twice")
        if name in self.loaded:
            return self.loaded[name]
        try:
            saved = str(_device(saved))
        except (RuntimeError, TypeError):
            raise bad(self.fname, f"bad object description: invalid device {str(saved)[:40]!r}") from None
        self.unused.discard(name)
        t = self.place(array(self.body, self.entries[name]), saved)
        if requires_grad is True and t.dtype.is_floating_point:
            t.requires_grad_(True)
        if shared:
            self.loaded[name] = t
        return t

    def check_all_used(self) -> None:
        if self.unused:
            raise bad(self.fname, f"tensor {short(sorted(self.unused)[0])} is not referenced by the object description")


class Decoder:
    """Rebuilds the object from its JSON tree; every reference and type is checked."""

    def __init__(self, fname: str, tensors: Tensors):
        self.fname, self.tensors = fname, tensors

    def bad(self, msg: str) -> CheckpointError:
        return bad(self.fname, f"bad object description: {msg}")

    def node(self, x, depth: int):
        if depth > MAX_DEPTH:
            raise self.bad("nested too deeply")
        if isinstance(x, (type(None), bool, int, float, str)):
            return x
        if isinstance(x, list) or not isinstance(x, dict) or not x:
            raise self.bad("unexpected JSON value")
        if "tensor" in x:
            if not set(x) <= {"tensor", "device", "requires_grad"} or not isinstance(x.get("device"), str):
                raise self.bad("a tensor needs exactly a name and a device")
            return self.tensors.get(x["tensor"], x["device"], x.get("requires_grad"))
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
