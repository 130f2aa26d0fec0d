"""Random numbers: Philox4x32-10 generators and sampling ops.

A generator's state is just ``(seed, offset)`` on the host. A sampling call of ``n`` elements takes the
generator's offset and advances it by ``n``; element ``i`` (row-major) comes from the Philox counter
``offset + i`` keyed by the seed. So the stream does not depend on the device: after
``clgrad.manual_seed(0)``, ``clgrad.rand(5)`` is bit-identical on cpu and on every OpenCL device, and one
generator may drive tensors on any device. ``clgrad/backends/philox.py`` defines the stream.
"""
from __future__ import annotations

import os
import threading
import warnings
from numbers import Integral

import numpy as np

from . import backends
from . import dtypes as D
from .backends import philox
from .backends.opencl import capture
from .backends.opencl.random import philox_args
from .device import resolve
from .ops import pointwise as P
from .ops.creation import _creation_args, _finish
from .ops.creation import tensor as _tensor
from .ops.guard import tensor_first, user_stacklevel
from .ops.views import broadcast_shapes
from .tensor import Tensor, is_tensor

__all__ = [
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli", "normal",
    "multinomial",
]

DEFAULT_SEED = 67280421310721  # PyTorch's default cpu seed
_MASK64 = 2**64 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# float dtypes hold every integer up to 2**digits exactly
_DIGITS = {"float16": 11, "float32": 24, "float64": 53, "bfloat16": 8}


def _g(x) -> str:
    """A number as C++'s ostream prints it (PyTorch's messages): 2, 1.5, 3e+38, nan."""
    return str(int(x)) if isinstance(x, Integral) else f"{float(x):g}"


def _not_implemented(what: str, dt: D.dtype) -> NotImplementedError:
    return NotImplementedError(f"\"{what}\" not implemented for '{dt.scalar_name}'")


# ---- generators ------------------------------------------------------------------------------
def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not _INT64_MIN <= seed <= _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64  # negative seeds wrap, as in PyTorch


class Generator:
    """A Philox4x32-10 random stream: ``g = clgrad.Generator().manual_seed(0); clgrad.rand(3, generator=g)``.

    The state lives on the host, so a generator drives tensors on any device (PyTorch instead requires the
    generator's device to match); ``device`` is kept for compatibility.
    """

    def __init__(self, device="cpu"):
        self.device = resolve(device)
        self._seed, self._offset = DEFAULT_SEED, 0
        self._lock = threading.Lock()

    def manual_seed(self, seed) -> Generator:
        """Restart the stream from ``seed``; returns the generator."""
        seed = _check_seed(seed)
        with self._lock:
            self._seed, self._offset = seed, 0
        return self

    def seed(self) -> int:
        """Reseed from the OS entropy pool and return the new seed."""
        new = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(new)
        return new

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The state as a cpu uint8 tensor of 16 bytes: seed and offset, little-endian uint64 each."""
        with self._lock:
            words = np.array([self._seed, self._offset], dtype="<u8")
        return _tensor(words.view(np.uint8), device="cpu")

    def set_state(self, new_state) -> Generator:
        """Restore a state returned by ``get_state``."""
        if not is_tensor(new_state):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not D.uint8 or new_state.device.type != "cpu":
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != 16:
            raise RuntimeError("RNG state is wrong size")
        seed, offset = (int(w) for w in np.ascontiguousarray(new_state.numpy()).reshape(-1).view("<u8"))
        with self._lock:
            self._seed, self._offset = seed, offset
        return self

    def _take(self, n: int) -> tuple[int, int]:
        """(seed, offset) for a request of ``n`` elements; advances the offset past them."""
        with self._lock:
            offset = self._offset
            self._offset = (offset + n) & _MASK64
            return self._seed, offset

    def __reduce__(self):
        return (_rebuild_generator, (str(self.device), self._seed, self._offset))


def _rebuild_generator(dev: str, seed: int, offset: int) -> Generator:
    g = Generator(dev)
    g._seed, g._offset = seed, offset
    return g


default_generator = Generator("cpu")


def manual_seed(seed) -> Generator:
    """Seed the default generator (used by every device): ``clgrad.manual_seed(0)``."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Seed the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state (a 16-byte uint8 cpu tensor); restore it with ``set_rng_state``."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from ``get_rng_state()``."""
    default_generator.set_state(new_state)


def _generator(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a Generator, but got {type(generator).__name__}")
    return generator


# ---- the one sampling path -------------------------------------------------------------------
def _sample(out, dist: str, p0, p1, generator):
    """Fill ``out`` in place from the next ``out.numel()`` counters of the generator."""
    gen, n = _generator(generator), out.numel()
    rec = capture.current()
    if rec is not None and n:  # each graph replay draws the next counters, as this call would
        rec.dynamic(lambda: philox_args(*gen._take(n)))
        seed_, offset = gen._seed, gen._offset  # the capture itself draws nothing (replays set these)
    else:
        seed_, offset = gen._take(n)
    backends.get(out.device).random(dist, out, seed_, offset, p0, p1)
    return out


def _check_writable(t) -> None:
    if any(n > 1 and s == 0 for n, s in zip(t._shape, t._strides)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )


def _float_limits(dt: D.dtype) -> float:
    return float(np.finfo(dt.np).max)


def _check_int64(value, arg: str, fn: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}(): argument '{arg}' must be int, not {type(value).__name__}")
    if not _INT64_MIN <= int(value) <= _INT64_MAX:
        raise ValueError("Overflow when unpacking long long")
    return int(value)


# ---- in-place methods ------------------------------------------------------------------------
def _from_kw(kwargs, default, fn: str):
    """``from`` is a Python keyword, so PyTorch's ``from=`` argument arrives through ``**kwargs``."""
    extra = set(kwargs) - {"from"}
    if extra:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{sorted(extra)[0]}'")
    return kwargs.get("from", default)


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with samples from U[from, to): ``t.uniform_(-1, 1)``."""
    from_ = _from_kw(kwargs, from_, "uniform_")
    dt = self.dtype
    if dt.kind == "c":  # real and imaginary parts each uniform, as torch
        uniform_(self._pairs(), from_, to, generator=generator)
        return self
    if dt.kind != "f":
        raise _not_implemented("check_uniform_bounds", dt)
    lim = _float_limits(dt)
    for name, v in (("from", from_), ("to", to)):
        if not -lim <= v <= lim:
            raise RuntimeError(f"{name} is out of bounds for {dt.cpp_name}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(from_)} > to={_g(to)}")
    if to - from_ > lim:
        raise RuntimeError(
            f"uniform_ expects to-from <= std::numeric_limits<{dt.scalar_name}>::max(), but found "
            f"to={_g(to)} and from={_g(from_)} which result in to-from to exceed the limit"
        )
    _check_writable(self)
    return _sample(self, "uniform", float(from_), float(to), generator)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std**2): ``t.normal_(0, 0.02)``."""
    if self.dtype.kind == "c":  # real and imaginary parts each N(mean, std**2 / 2), as torch
        normal_(self._pairs(), mean, std / 2**0.5, generator=generator)
        return self
    if self.dtype.kind != "f":
        raise _not_implemented("normal_kernel_cpu", self.dtype)
    _check_std(std)
    _check_writable(self)
    return _sample(self, "normal", float(mean), float(std), generator)


def _check_std(std) -> None:
    if not std >= 0.0:  # also rejects nan
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")


def _random_args(args, kwargs) -> tuple:
    """PyTorch's overloads ``random_()``, ``random_(to)``, ``random_(from, to)`` (``to`` may be None)."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    bound = dict(zip(("from", "to") if len(args) == 2 else ("to",), args))
    for key, value in kwargs.items():
        if key not in ("from", "to") or key in bound:
            raise TypeError(f"random_() got an unexpected keyword argument '{key}'")
        bound[key] = value
    from_ = _check_int64(bound.get("from", 0), "from", "random_")
    to = bound.get("to")
    return from_, None if to is None else _check_int64(to, "to", "random_")


def _check_in_range(from_: int, to_inc: int, dt: D.dtype) -> None:
    if dt.kind == "f":
        lo, hi = -_float_limits(dt), _float_limits(dt)
    elif dt is D.bool:
        lo, hi = 0, 1
    else:
        info = np.iinfo(dt.np)
        lo, hi = int(info.min), int(info.max)
    for name, v in (("from", from_), ("to - 1", to_inc)):
        if not lo <= v <= hi:
            raise RuntimeError(f"{name} is out of bounds for {dt.cpp_name}")
    if dt.kind == "f":
        digits = _DIGITS[dt.name]
        for name, v in (("from", from_), ("to - 1", to_inc)):
            if abs(v) > 2**digits:
                warnings.warn(
                    f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                    f"{dt.cpp_name} can support discrete uniform distribution only within this range.",
                    stacklevel=user_stacklevel(),
                )


def _random_range(dt: D.dtype, from_: int, to: int | None) -> tuple[int, int]:
    """The half-open range [low, high) that ``random_(from, to)`` draws from, checked as PyTorch does."""
    if to is not None:
        if not from_ < to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
        _check_in_range(from_, to - 1, dt)
        return from_, to
    if from_ == _INT64_MIN:
        return _INT64_MIN, 2**63  # every int64 value
    if dt.kind == "f":
        to_inc = 2 ** _DIGITS[dt.name]
        if not from_ < to_inc:
            raise RuntimeError(
                "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, "
                f"but got from={from_} > to_inc={to_inc}"
            )
    else:
        to_inc = 1 if dt is D.bool else int(np.iinfo(dt.np).max)
    _check_in_range(from_, to_inc, dt)
    return from_, to_inc + 1


def _randint_into(out, low: int, high: int, generator):
    if out.dtype is D.bool:  # the kernel has no bool randint: draw 0/1 as uint8 and convert
        tmp = out.__class__._empty(out.shape, D.uint8, out.device)
        return P.cast_into(out, _sample(tmp, "randint", low, high, generator))
    return _sample(out, "randint", low, high, generator)


def random_(self, *args, generator=None, **kwargs):
    """Fill with integers from [from, to); without ``to`` up to the dtype's largest exact integer:
    ``t.random_(10)``, ``t.random_(-5, 5)``, ``t.random_()``."""
    low, high = _random_range(self.dtype, *_random_args(args, kwargs))
    _check_writable(self)
    return _randint_into(self, low, high, generator)


def bernoulli_(self, p=0.5, *, generator=None):
    """Set each element to 1 with probability ``p`` (a number or a tensor of probabilities), else 0."""
    _check_writable(self)
    if not is_tensor(p):
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
        return _sample(self, "bernoulli", float(p), 0.0, generator)
    if p.dtype.kind != "f":
        raise _not_implemented("bernoulli_tensor_cpu_p_", p.dtype)
    probs = np.asarray(p)  # PyTorch also checks on the host (a device sync)
    if not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
            "If so, please report an enhancement request to PyTorch.)"
        )
    p = p.expand(self.shape)
    # u < p with the float32 uniform the scalar-p kernel uses; the comparison is exact in the promoted dtype
    u = _sample(self.__class__._empty(self.shape, D.float32, self.device), "uniform", 0.0, 1.0, generator)
    return P.apply("lt", u, p.detach(), out=self)  # samples carry no gradient, even of a p that requires grad


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from the exponential distribution of rate ``lambd``: ``-log(1 - U) / lambd``."""
    if self.dtype.kind != "f":
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a floating point "
            f"but you specified {self.dtype.scalar_name}"
        )
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    uniform_(self, generator=generator)
    P.apply("neg", self, out=self)
    P.apply("log1p", self, out=self)  # 1 - U is in (0, 1]: always finite
    return P.apply("mul", self, -1.0 / lambd, out=self)


# ---- functions -------------------------------------------------------------------------------
def _size_arg(fn: str, size: tuple, kwargs: dict) -> tuple:
    """``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))`` (a keyword ``size`` cannot sit next to ``*size``)."""
    extra = set(kwargs) - {"size"}
    if extra:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{sorted(extra)[0]}'")
    if "size" in kwargs:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        return (kwargs["size"],)
    return size


def rand(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
         **kwargs):
    """Uniform samples in [0, 1): ``clgrad.rand(2, 3, device="opencl")``."""
    shape, dt, dev = _creation_args(_size_arg("rand", size, kwargs), dtype, device)
    out = uniform_(_empty(shape, dt, dev), generator=generator)
    return _finish(out, requires_grad)


def randn(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          **kwargs):
    """Standard normal samples: ``clgrad.randn(64, 10)``."""
    shape, dt, dev = _creation_args(_size_arg("randn", size, kwargs), dtype, device)
    return _finish(normal_(_empty(shape, dt, dev), generator=generator), requires_grad)


def _empty(shape, dt: D.dtype, dev):
    return Tensor._empty(shape, dt, dev)


def _is_size(x) -> bool:
    return isinstance(x, (tuple, list)) or (hasattr(x, "__iter__") and not is_tensor(x))


def randint(*args, size=None, low=None, high=None, generator=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False):
    """Integers uniform on [low, high): ``randint(10, (3,))``, ``randint(-5, 5, (2, 2))``; dtype int64."""
    pos = list(args)
    if size is None and pos and _is_size(pos[-1]):
        size = pos.pop()
    if len(pos) > 2:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args)} given)")
    if len(pos) == 2:
        low, high = pos
    elif len(pos) == 1:
        low, high = (pos[0], high) if high is not None else (low, pos[0])
    if size is None:
        got = type(pos[-1]).__name__ if pos else "nothing"
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {got}")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low = _check_int64(0 if low is None else low, "low", "randint")
    high = _check_int64(high, "high", "randint")
    shape, dt, dev = _creation_args((size,), dtype, device, default=D.int64)
    out = _empty(shape, dt, dev)
    low, high = _random_range(dt, low, high)
    return _finish(_randint_into(out, low, high, generator), requires_grad)


def _like_args(input, dtype, device):
    return input.shape, (dtype if dtype is not None else input.dtype), (device if device is not None else input.device)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """``rand`` with the shape, dtype and device of ``input`` (each overridable): ``rand_like(x)``."""
    shape, dt, dev = _like_args(input, dtype, device)
    return rand(shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    """``randn`` with the shape, dtype and device of ``input`` (each overridable): ``randn_like(x)``."""
    shape, dt, dev = _like_args(input, dtype, device)
    return randn(shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None):
    """``randint_like(x, high)`` or ``randint_like(x, low, high)``: the shape, dtype and device of ``x``."""
    if high is None:
        low, high = 0, low
    shape, dt, dev = _like_args(input, dtype, device)
    return randint(low, high, shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


_PERM_FLOAT_MAX = {"float16": (2**11 + 1, "2049"), "float32": (2**24 + 1, "2^24+1"), "float64": (2**53 + 1, "2^53+1")}


def randperm(n, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A random permutation of 0..n-1: ``clgrad.randperm(10)``. Drawn on the host from the generator's
    Philox stream (argsort of 64-bit keys), so it is the same on every device."""
    n = _check_int64(n, "n", "randperm")
    dt = D.as_dtype(dtype) if dtype is not None else D.int64
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dt is D.bool:
        raise _not_implemented("randperm", dt)
    if dt.name in _PERM_FLOAT_MAX and n > _PERM_FLOAT_MAX[dt.name][0]:  # PyTorch checks no bfloat16 limit
        raise RuntimeError(f"n cannot be greater than {_PERM_FLOAT_MAX[dt.name][1]} for {dt.scalar_name} type.")
    if dt.kind in "iu" and n - 1 > np.iinfo(dt.np).max:
        raise RuntimeError(f"value cannot be converted to type {dt.c_int_name} without overflow")
    seed_, offset = _generator(generator)._take(n)
    counters = np.arange(n, dtype=np.uint64) + np.uint64(offset)  # wraps mod 2**64, like the kernels
    w0, w1, _, _ = philox.philox4x32(counters, seed_)
    keys = (w1.astype(np.uint64) << np.uint64(32)) | w0.astype(np.uint64)
    perm = np.argsort(keys, kind="stable")  # uniform: distinct keys in random order (ties ~ n**2 / 2**65)
    return _finish(_tensor(perm, dtype=dt, device=resolve(device)), requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples: each element is 1 with probability ``input[i]`` (or ``p``); dtype and shape of ``input``."""
    out = _empty(input.shape, input.dtype, input.device)
    if p is None:
        if input.dtype.kind != "f":
            raise _not_implemented("bernoulli_tensor_cpu_p_", input.dtype)
        return bernoulli_(out, input, generator=generator)
    return bernoulli_(out, p, generator=generator)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    """Normal samples: ``normal(0., 1., (3,))`` or elementwise from tensors ``normal(means, stds)``."""
    tensors = [x for x in (mean, std) if is_tensor(x)]
    if not tensors:
        if size is None:
            raise TypeError("normal() missing required argument 'size' for float mean and std")
        shape, dt, dev = _creation_args((size,), dtype, device)
        return _finish(normal_(_empty(shape, dt, dev), mean, std, generator=generator), requires_grad)
    if size is not None:
        raise TypeError("normal() takes no 'size' when mean or std is a tensor")
    if is_tensor(std):
        if not (np.asarray(std) >= 0).all():  # PyTorch also reads std back to check it
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        _check_std(std)
    dt = tensors[0].dtype  # PyTorch: mean's dtype when it is a tensor, else std's
    dev = P.common_device(tensors)
    shape = broadcast_shapes(*(t.shape for t in tensors))
    if dt.kind != "f":
        raise _not_implemented("normal_kernel_cpu", dt)
    out = normal_(_empty(shape, dt, dev), generator=generator)
    P.apply("mul", out, std, out=out)
    return _finish(P.apply("add", out, mean, out=out), requires_grad)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Category indices drawn from each row of non-negative weights: ``clgrad.multinomial(probs, 2)``.

    Without replacement, the ``num_samples`` largest ``input / q`` with ``q ~ Exp(1)`` (PyTorch's algorithm);
    with replacement, the inverse CDF at uniform draws. The weights are read back once to check them, as
    PyTorch does."""
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.scalar_name}")
    n_cat = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n_cat > 2**24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    probs = input if input.dim() == 2 else input.unsqueeze(0)
    host = np.asarray(probs.detach().cpu().numpy(), dtype=np.float64)
    if not np.isfinite(host).all() or (host < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (host.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and ((host > 0).sum(axis=1) < num_samples).any():
        raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough non-negative "
                           "category to sample)")
    probs = probs.detach()
    if replacement:
        cdf = probs.cumsum(-1)
        u = rand(probs.shape[0], num_samples, 1, generator=generator, dtype=probs.dtype, device=probs.device)
        # the index i with cdf[i-1] <= u < cdf[i] is the count of cdf entries <= u (zero weights are skipped)
        picks = (cdf.unsqueeze(1) <= u * cdf[:, -1:].unsqueeze(1)).sum(-1).clamp_(max=n_cat - 1)
    else:
        q = _empty(probs.shape, probs.dtype, probs.device)
        exponential_(q, 1.0, generator=generator)
        picks = (probs / q).topk(num_samples, dim=-1).indices
    return picks if input.dim() == 2 else picks.squeeze(0)


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


def install(T) -> None:
    """Attach in-place sampling methods (uniform_, normal_, ...) to Tensor."""
    T.uniform_, T.normal_, T.random_ = uniform_, normal_, random_
    T.bernoulli_, T.exponential_, T.bernoulli = bernoulli_, exponential_, _bernoulli_method
    T.multinomial = _multinomial_method


# a list or a number where a tensor belongs raises PyTorch's TypeError (see ops/guard.py)
tensor_first(globals(), __all__)
