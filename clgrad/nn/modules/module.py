"""``Module``: PyTorch's base class, with registration through ``__setattr__``, state_dict and hooks."""
from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple

import numpy as np

from ... import dtypes as D
from ...autograd.grad_mode import no_grad
from ...device import device as _device
from ...ops.creation import tensor
from ...tensor import Tensor
from ..parameter import Parameter
from . import hooks as H
from .hooks import (  # noqa: F401 - PyTorch's home of the global hook functions
    RemovableHandle,
    register_module_backward_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _typename(value) -> str:
    if isinstance(value, Tensor):
        return value.type()
    module = type(value).__module__
    return type(value).__qualname__ if module == "builtins" else f"{module}.{type(value).__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


def _check_name(kind: str, name, owner) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


class Module:
    """Base class of every layer. Subclasses assign Parameters, buffers and sub-modules in ``__init__``
    and compute in ``forward``; call the module itself (``model(x)``) so hooks run."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument")
        for name in ("_parameters", "_buffers", "_modules") + _HOOK_DICTS:
            object.__setattr__(self, name, OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_is_full_backward_hook", None)
        object.__setattr__(self, "training", True)

    def __setstate__(self, state) -> None:
        """Unpickling a module saved before some hook dicts existed still gives a callable module."""
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        backward_hook = H.backward_hook(self)
        if backward_hook is not None:
            args = backward_hook.setup_inputs(args)
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        if backward_hook is not None:
            if not isinstance(output, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(output)}", stacklevel=2)
            output = backward_hook.setup_outputs(output)
        return output

    def _add_hook(self, hooks: OrderedDict, hook, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; a non-None result replaces the arguments."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend)

    def register_forward_hook(self, hook, *, prepend: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward``; a non-None result replaces the output."""
        return self._add_hook(self._forward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients w.r.t. the module's outputs are known; a
        non-None result (a tuple as long as ``grad_output``) replaces them."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs once the gradients w.r.t. the module's positional
        tensor inputs are computed; a non-None result (a tuple as long as ``grad_input``) replaces them.

        >>> lin.register_full_backward_hook(lambda m, grad_in, grad_out: tuple(g * 0.5 for g in grad_in))
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated. PyTorch hands such a hook the gradients of the last autograd node of ``forward``;
        clgrad runs it as a full backward hook, which is what that approximated."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        warnings.warn(H.LEGACY_HOOK_WARNING, FutureWarning, stacklevel=2)
        self._is_full_backward_hook = False
        return self._add_hook(self._backward_hooks, hook, False)

    # ---- registration ----------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (BatchNorm's running_mean); in state_dict when
        ``persistent``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a Parameter or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. "
                f"To express '{name}' as a function of another Tensor, compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Register ``module`` (a Module or None) as a child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name("module", name, self)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drops ``name`` from every store but ``keep``, whose entry is overwritten in place: reassigning a
        submodule or parameter keeps its position, as in PyTorch (``list(model.children())[:-1]`` after
        replacing ``model.conv1`` still drops the last layer)."""
        self.__dict__.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                getattr(self, store).pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # ---- traversal -------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """``(name, module)`` for this module and every descendant, each shared module once."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, module in mods:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, Parameter)`` pairs; a parameter shared by several modules appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def apply(self, fn) -> Module:
        """Call ``fn`` on every child (recursively), then on this module: ``model.apply(init_weights)``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients ---------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad.zero_()

    # ---- moving ----------------------------------------------------------------------------
    def _apply(self, fn) -> Module:
        """Convert every parameter in place (``param.data`` replaced, the Parameter object kept, so an
        optimizer holding it keeps working) and replace every buffer."""
        for module in self.modules():
            with no_grad():
                for p in module._parameters.values():
                    if p is None:
                        continue
                    p.data = fn(p)
                    if p.grad is not None:
                        p.grad = fn(p.grad)
                for name, b in module._buffers.items():
                    if b is not None:
                        module._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: floating parameters and
        buffers take the dtype, every one the device. Returns self."""
        dev, dt = _parse_to(args, kwargs)

        def convert(t):
            return t.to(dev, dt if dt is not None and t.is_floating_point() else None)

        return self._apply(convert)

    def cpu(self) -> Module:
        return self.to("cpu")

    def opencl(self, index=None) -> Module:
        return self.to(_device("opencl", index))

    def _cast(self, dt) -> Module:
        return self._apply(lambda t: t.to(dt) if t.is_floating_point() else t)

    def float(self) -> Module:
        return self._cast(D.float32)

    def double(self) -> Module:
        return self._cast(D.float64)

    def half(self) -> Module:
        return self._cast(D.float16)

    def bfloat16(self) -> Module:
        return self._cast(D.bfloat16)

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.type(dst_type))

    # ---- state_dict ------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of parameters and persistent buffers under PyTorch's dotted key names."""
        if args:  # the deprecated positional form state_dict(destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        destination = OrderedDict() if destination is None else destination
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, missing, unexpected, errors) -> None:
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in list(self._parameters.items()) + list(persistent.items()) if v is not None}
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                value = tensor(np.asarray(value))
            if tuple(value.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {_torch_size(value)} from "
                              f"checkpoint, the shape in current model is {_torch_size(target)}.")
                continue
            with no_grad():
                target.copy_(value)
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            head, *tail = key[len(prefix):].split(".", 1)
            if (tail and head not in self._modules) or (not tail and head not in local):
                unexpected.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict`` (clgrad tensors or array-likes, e.g. numpy) into this module's
        parameters and buffers; returns ``(missing_keys, unexpected_keys)``; shape mismatches raise."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        for prefix, module in self.named_modules(remove_duplicate=False):
            module._load_from_state_dict(state_dict, prefix + "." if prefix else "", missing, unexpected, errors)
        unexpected = list(dict.fromkeys(unexpected))
        if strict:
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing --------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def share_memory(self) -> Module:
        """Move every parameter, gradient and buffer into shared memory (cpu; ``Tensor.share_memory_``), so
        processes started by ``clgrad.multiprocessing`` train this one model (Hogwild). Returns self."""
        return self._apply(lambda t: t.share_memory_())


def _torch_size(t) -> str:
    return "torch.Size([" + ", ".join(str(n) for n in t.shape) + "])"


def _parse_to(args, kwargs):
    dev = dt = None
    kwargs = dict(kwargs)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    for key, a in [(None, a) for a in args] + list(kwargs.items()):
        if key not in (None, "device", "dtype", "tensor"):
            raise TypeError(f"to() got an unexpected keyword argument '{key}'")
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif isinstance(a, D.dtype):
            dt = a
        elif isinstance(a, (str, _device, int)):
            dev = a
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    if dt is not None and not dt.is_floating_point:
        raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dt}")
    return dev, dt
