"""``clgrad.save`` / ``clgrad.load``: checkpoints in the safetensors format, and PyTorch's weights-only loading.

What ``save`` writes depends on the object (the layout is in ``_format.py``):

- nested dicts, OrderedDicts, lists and tuples of tensors, numbers, strings, bools, None, dtypes and devices (a
  ``state_dict``, an optimizer's, a training checkpoint of those) become a JSON tree in the header's metadata. Such
  a file never needs unpickling; a flat ``state_dict`` loads in PyTorch with ``safetensors.torch.load_file``;
- anything else (a Module, an optimizer, a custom class) is pickled as ``torch.save`` does, with the tensors
  stored as safetensors entries that the pickle refers to by name. ``load`` reads such a file only with
  ``weights_only=False`` or when every global it names is allow-listed (``add_safe_globals``, ``safe_globals``),
  with PyTorch 2.6's default and messages.

Tensors are named by their path in a JSON tree (``"state.0.exp_avg"``), and numbered in a pickled object. A file
without clgrad's metadata (one written by ``safetensors.torch.save_file``) loads as a flat ``dict`` of tensors.
Views are saved as their values. In a JSON tree, tensors that share storage are saved as separate copies; in a
pickled object, a tensor referenced twice is saved once and loads as one tensor.
"""
from __future__ import annotations

import os
import pickle
import warnings

import numpy as np

from . import _files
from . import _format as F
from . import _pickled as P
from ._format import CheckpointError
from ._pickled import DEFAULT_PROTOCOL, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "DEFAULT_PROTOCOL"]

PICKLE_ENTRY = "pickle"


def save(obj, f, pickle_module=pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` to ``f``, a path or a binary file object: ``clgrad.save(model.state_dict(), "model.pt")``.

    Writing to a regular file's path is atomic: the data goes to a temporary file in the same directory, which is
    fsynced and renamed over ``f`` (keeping its mode), so a crash leaves either the old or the new checkpoint. A
    FIFO or a device (``/dev/stdout``) is written in place. ``pickle_module`` and ``pickle_protocol`` pickle
    objects the JSON tree can't express; the last two arguments are accepted for PyTorch compatibility.
    """
    chunks = F.tree_payload(obj)
    if chunks is None:
        chunks = _pickle_payload(obj, pickle_module, pickle_protocol)
    if isinstance(f, (str, os.PathLike)):
        _files.write_path(f, chunks)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"save(): f must be a path or a binary file object, not {type(f).__name__}")
    for chunk in chunks:
        f.write(chunk)
    if hasattr(f, "flush"):
        f.flush()


def _pickle_payload(obj, pickle_module, protocol: int) -> list:
    data, tensors = P.pickle_object(obj, pickle_module, protocol)
    arrays = F.host_arrays(tensors)
    arrays[PICKLE_ENTRY] = ([len(data)], F.D.uint8, np.frombuffer(data, np.uint8))
    return F.assemble(f'{{"version":{F.PICKLE_VERSION},"pickle":"{PICKLE_ENTRY}"}}', arrays)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read an object written by ``save`` (or any safetensors file) from a path or binary file object.

    Tensors go to ``map_location`` (a device or string, a dict mapping saved device strings to new ones,
    or a callable ``fn(cpu_tensor, saved_device_str)`` returning a tensor or None), else to the device they
    were saved from when it exists here, else to cpu. As in PyTorch >= 2.6, ``weights_only`` defaults to True
    (False when a ``pickle_module`` is given): a pickled object loads only through the allow-list, and
    ``weights_only=False`` is for trusted files. Files of containers and tensors never need unpickling.
    ``mmap`` is accepted and ignored (the data is read into memory); ``pickle_load_args`` (``encoding``...) go to
    the unpickler when ``weights_only=False``. A bad file raises ``CheckpointError``.
    """
    weights_only = _weights_only(weights_only, pickle_module, pickle_load_args)
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    with _files.opened(f) as (fh, size, fname):
        raw = _files.read_checkpoint(fh, size, fname)
        entries, meta, data_size = F.parse_header(raw, size, fname)
        body = _files.read_exact(fh, data_size, fname, "the tensor data", known=size is not None)
    place = F.Placer(map_location)
    doc = F.read_doc(meta, entries, body, fname)
    if doc is None:  # a plain safetensors file, e.g. from PyTorch
        return {name: place(F.array(body, e), None) for name, e in entries.items()}
    tensors = F.Tensors(fname, entries, body, place)
    if "tree" in doc:
        obj = F.Decoder(fname, tensors).node(doc["tree"], 0)
    else:
        obj = _unpickle(doc["pickle"], tensors, weights_only, pickle_module or pickle, pickle_load_args)
    tensors.check_all_used()
    return obj


def _weights_only(weights_only, pickle_module, pickle_load_args: dict) -> bool:
    """PyTorch's rules: True by default, False by default with a pickle_module, and never both."""
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if weights_only and pickle_load_args:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=3)
    pickle_load_args.setdefault("encoding", "utf-8")
    return bool(weights_only)


def _unpickle(name, tensors: F.Tensors, weights_only: bool, pickle_module, load_args: dict):
    e = tensors.entries.get(name) if isinstance(name, str) else None
    if e is None or e["dtype"] != "U8" or len(e["shape"]) != 1:
        raise F.bad(tensors.fname, "bad object description: the pickle entry is missing or not bytes")
    tensors.unused.discard(name)
    begin, end = e["data_offsets"]
    data = memoryview(tensors.body)[begin:end]
    if not weights_only:
        return P.unpickle(data, tensors, False, pickle_module, load_args)
    try:
        return P.unpickle(data, tensors, True, pickle_module, {"encoding": load_args["encoding"]})
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(P.weights_only_message(str(e))) from None
    except CheckpointError:
        raise
    except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError) as e:
        raise F.bad(tensors.fname, f"the pickled object is invalid ({type(e).__name__}: {str(e)[:200]})") from None
