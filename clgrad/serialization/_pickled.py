"""Whole objects (a Module, an optimizer, a custom class) in a checkpoint: a pickle whose tensors are persistent ids
naming safetensors entries, and the restricted unpickler ``load(weights_only=True)`` uses, as PyTorch's
``_weights_only_unpickler`` does: only allow-listed globals can be looked up, so a hostile file runs no code.

The allow-list: ``collections.OrderedDict`` / ``Counter``, ``set``, ``frozenset``, ``bytearray``, ``complex``,
``_codecs.encode`` (bytes in protocol 2), ``clgrad.nn.Parameter``, ``clgrad.Size``, ``clgrad.device`` and the
dtypes, plus the user's (``add_safe_globals`` / ``safe_globals``). Tensors never go through a global: they are
the file's entries, rebuilt by ``persistent_load``.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import io
import pickle
from collections import Counter, OrderedDict

from .. import dtypes as D
from ..device import device
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor

DEFAULT_PROTOCOL = 2  # torch.save's
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_marked_safe_globals: set = set()

UNSAFE_MESSAGE = (
    "`clgrad.load` follows PyTorch 2.6, which changed the default value of the `weights_only` argument in "
    "`torch.load` from `False` to `True`. Re-running `clgrad.load` with `weights_only` set to `False` will likely "
    "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a trusted source."
)
DOCS_MESSAGE = (
    "\n\nCheck the documentation of clgrad.load to learn more about types accepted by default with weights_only "
    "(help(clgrad.load))."
)


# ---- the allow-list -------------------------------------------------------------------------------------


def add_safe_globals(safe_globals: list) -> None:
    """Mark globals (classes or functions, or ``(obj, "module.qualname")`` pairs) as safe for a
    ``weights_only`` load: ``clgrad.serialization.add_safe_globals([MyNet, clgrad.nn.Linear])``."""
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals | set(safe_globals)


def get_safe_globals() -> list:
    """The globals the user marked safe for a ``weights_only`` load."""
    return list(_marked_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global the user marked safe."""
    global _marked_safe_globals
    _marked_safe_globals = set()


class safe_globals:  # noqa: N801 - torch's name
    """Context manager marking globals safe for ``weights_only`` loads inside it:
    ``with clgrad.serialization.safe_globals([MyNet]): model = clgrad.load(path)``."""

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _marked_safe_globals
        _marked_safe_globals = _marked_safe_globals - set(self.safe_globals)


def _bytearray(*args):
    """``bytearray`` as pickles call it (from bytes, or a string and an encoding), never ``bytearray(2**40)``."""
    if args and not isinstance(args[0], (bytes, str)):
        raise pickle.UnpicklingError(f"bytearray() from {type(args[0]).__name__} is not allowed when loading")
    return bytearray(*args)


def _default_globals() -> dict:
    allowed = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter, "builtins.set": set,
        "builtins.frozenset": frozenset, "builtins.bytearray": _bytearray, "builtins.complex": complex,
        "_codecs.encode": codecs.encode, "clgrad.nn.parameter.Parameter": Parameter, "clgrad.tensor.Size": Size,
        "clgrad.device.device": device,
    }
    allowed.update({f"clgrad.dtypes.{dt.name}": dt for dt in D.ALL})
    return allowed


_DEFAULT_GLOBALS = _default_globals()


def _user_globals() -> dict:
    allowed = {}
    for g in _marked_safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple "
                                 f"of length: {len(g)}")
            if type(g[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(g[1])}")
            allowed[g[1]] = g[0]
        else:
            allowed[f"{g.__module__}.{g.__qualname__}"] = g
    return allowed


def _refusal(full_path: str) -> str:
    if full_path.startswith("builtins."):
        full_path = full_path[len("builtins."):]
    return (f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. Please use "
            f"`clgrad.serialization.add_safe_globals([{full_path}])` or the "
            f"`clgrad.serialization.safe_globals([{full_path}])` context manager to allowlist this global if you "
            "trust this class/function.")


def weights_only_message(message: str) -> str:
    """PyTorch's wrapping of a weights-only refusal, with clgrad's names."""
    if "was not an allowed global by default" in message:
        text = ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + message)
    else:
        text = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if "is blocked" not in message:
            text += ("Please file an issue with the following so that we can make `weights_only=True` compatible "
                     "with your use case: WeightsUnpickler error: ")
        text += "\n\n" + message
    return text + DOCS_MESSAGE


# ---- pickling and unpickling ----------------------------------------------------------------------------------


class _TensorIds:
    """Pickler mixin: every plain Tensor becomes the id ``"tensor/<entry name>/<device>/<requires_grad 0|1>"``, one
    entry per tensor object (a string: protocol 0 can't hold anything else)."""

    tensors: dict

    def persistent_id(self, obj):
        if type(obj) is not Tensor:
            return None
        name = self.names.get(id(obj))
        if name is None:
            name = self.names[id(obj)] = str(len(self.tensors))
            self.tensors[name] = obj  # holds the tensor, so its id can't be reused while pickling
        return f"tensor/{name}/{obj.device}/{int(obj.requires_grad)}"


def pickle_object(obj, pickle_module, protocol: int) -> tuple[bytes, dict]:
    """(the pickle, {entry name: tensor})."""
    cls = type("Pickler", (_TensorIds, pickle_module.Pickler), {})
    buf = io.BytesIO()
    pickler = cls(buf, protocol)
    pickler.tensors, pickler.names = {}, {}
    pickler.dump(obj)
    return buf.getvalue(), pickler.tensors


class _TensorLoads:
    """Unpickler mixin: a persistent id is one of the file's tensors (see ``_format.Tensors``)."""

    def persistent_load(self, pid):
        parts = pid.split("/") if isinstance(pid, str) else ()
        if len(parts) != 4 or parts[0] != "tensor" or parts[3] not in ("0", "1"):
            raise pickle.UnpicklingError(f"unknown persistent id {str(pid)[:80]!r}")
        return self.tensors.get(parts[1], parts[2], parts[3] == "1", shared=True)


class _WeightsOnlyUnpickler(_TensorLoads, pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol 2 writes Python 2's names for builtins
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full_path = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise pickle.UnpicklingError(
                f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked.")
        allowed = _DEFAULT_GLOBALS.get(full_path)
        if allowed is None:
            allowed = _user_globals().get(full_path)
        if allowed is None:
            raise pickle.UnpicklingError(_refusal(full_path))
        return allowed


def unpickle(data, tensors, weights_only: bool, pickle_module, load_args: dict):
    """The object from its pickle; ``tensors.get`` rebuilds the persistent ids."""
    base = _WeightsOnlyUnpickler if weights_only else type("Unpickler", (_TensorLoads, pickle_module.Unpickler), {})
    unpickler = base(io.BytesIO(data), **load_args)
    unpickler.tensors = tensors
    return unpickler.load()
