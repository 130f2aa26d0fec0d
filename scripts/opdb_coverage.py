"""Measure clgrad's coverage of PyTorch's op database (OpInfo ``op_db``) against torch itself.

For every op_db entry that applies to a CPU, find clgrad's callable by the same dotted name under ``clgrad``
(``linalg.norm`` -> ``clgrad.linalg.norm``; a method-only op -> ``clgrad.Tensor.<name>``), run up to ``-n``
of its float64 samples (PyTorch's own ``sample_inputs``) with the inputs copied to clgrad on ``--device``,
and compare the forward outputs and the gradients of the sum of the floating outputs with torch's.

    python scripts/opdb_coverage.py --device cpu --out /tmp/opdb_cpu        # writes .json and .md
    python scripts/opdb_coverage.py --device opencl --ops abs,linalg.norm -n 2

Needs torch and expecttest (op_db's module imports it). How the numbers are made:

- "applicable": entries with any CPU dtype (699 in torch 2.13, complex-only ones included); "present": those
  whose name resolves in clgrad (an op_db lambda that reorders arguments runs with ``torch`` meaning clgrad).
- Samples are float64 (an entry without float64 uses its first supported dtype), the first ``-n`` per entry;
  ``--float32`` takes float32 samples (complex64 over complex128) with float32 tolerances, for devices without fp64.
  Seeded random ops (``wrapper_set_seed``), ``empty*`` and ops that differ under two torch seeds are compared by
  shape and dtype only; samples torch itself raises on are not counted.
- Forward: every output's shape, dtype and values (rtol = atol = 1e-6, or the entry's float64 overrides).
  Backward: the gradients of the sum of the floating outputs w.r.t. the inputs that require grad.
- A sample slower than ``--seconds`` (the first of each entry gets 10x, for kernel compilation) is retried once,
  then ends its entry's run as "slow".
"""
from __future__ import annotations

import argparse
import collections
import json
import signal
import sys
import time
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this script is in, not an installed one
import clgrad  # noqa: E402

RTOL, ATOL = 1e-6, 1e-6  # float64, unless the entry overrides them; torch's own float64 default is 1e-7 both ways
SAMPLE_SECONDS = 2.0  # a sample slower than this ends the op's run (reported as "slow")
WARMUP = 10.0  # the first sample of each op may take this many times longer: it compiles the op's kernels
DTYPES = (torch.float64, torch.float32, torch.int64, torch.int32, torch.bool)
# --float32 (devices without cl_khr_fp64, e.g. rusticl): float32 samples, complex64 over complex128, and float32
# tolerances (the entry's float32 overrides, at least these)
FLOAT32_DTYPES = (torch.float32, torch.int64, torch.int32, torch.bool, torch.complex64)
RTOL32, ATOL32 = 1e-4, 1e-4
PRECISION = torch.float64


class TorchRejects(Exception):
    """torch itself raises on the sample (``resize_`` of a tensor that requires grad): it is not counted."""


class SampleTimeout(BaseException):
    """Raised by the alarm when one sample runs past its limit (a BaseException: no ``except Exception`` eats it)."""


@dataclass
class OpResult:
    name: str
    variant: str
    found: bool
    how: str = ""  # "function", "method", "attribute" or "inplace" (only Tensor.<name>_ exists: uniform_)
    samples: int = 0
    fwd_ok: int = 0
    bwd_total: int = 0
    bwd_ok: int = 0
    torch_rejects: int = 0  # samples torch itself raises on: not counted
    errors: dict = field(default_factory=dict)  # error kind -> count
    first_error: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name


def applicable(op) -> bool:
    """True for OpInfo entries that run on a CPU."""
    return bool(op.supported_dtypes("cpu"))


def sample_dtype(op):
    """float64 where the op supports it, else the first supported of DTYPES (integer/bool-only ops)."""
    dts = op.supported_dtypes("cpu")
    order = DTYPES if PRECISION is torch.float64 else FLOAT32_DTYPES
    return next((d for d in order if d in dts), None) or sorted(dts, key=str)[0]  # complex-only ops


def resolve(op):
    """clgrad's callable for an OpInfo and how it was found: ("function"|"method"|"attribute", fn) or None.

    The entry's name decides whether clgrad has the op. Where torch's ``op.op`` is a lambda that reorders
    arguments (``where``, ``polygamma``, ``einsum``, the seeded random ops), that lambda is run with ``torch``
    meaning ``clgrad``, as the entry itself resolves it."""
    found = _by_name(op)
    if found is not None and getattr(op.op, "__name__", "") == "<lambda>":
        return found[0], rebind(op.op)
    return found


def rebind(fn):
    """A copy of the lambda ``fn`` whose global ``torch`` is clgrad (and ``wrapper_set_seed`` seeds clgrad)."""
    names = dict(fn.__globals__, torch=clgrad, wrapper_set_seed=_seeded)
    return types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)


def _seeded(op, *args, **kwargs):
    clgrad.manual_seed(42)
    return op(*args, **kwargs)


def _by_name(op):
    obj = clgrad
    # torch.ops.aten.<name>.default is clgrad.<name>; torch.<name> is clgrad.<name>
    dotted = op.name.removeprefix("torch.ops.aten.").removesuffix(".default").removeprefix("torch.")
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None and callable(obj) and not isinstance(obj, type(clgrad)):
        return "function", obj
    name = op.name
    attr = getattr(clgrad.Tensor, name, None)
    if attr is None and op.inplace_variant is not None and hasattr(clgrad.Tensor, name + "_"):
        return "inplace", lambda t, *a, **k: getattr(t.clone(), name + "_")(*a, **k)  # uniform, cauchy ...
    if attr is None:
        return None
    if isinstance(attr, property):
        return "attribute", lambda t: getattr(t, name)
    return "method", lambda t, *a, **k: getattr(t, name)(*a, **k)


# ---- torch -> clgrad conversion ------------------------------------------------------------------

def to_clgrad(x, device, memo):
    """Copy torch values (tensors, dtypes, devices, nested containers) to their clgrad counterparts."""
    if isinstance(x, torch.Tensor):
        if id(x) not in memo:
            arr = x.detach().resolve_conj().cpu().numpy().copy()
            req = bool(x.requires_grad and x.is_floating_point())
            memo[id(x)] = clgrad.tensor(arr, dtype=convert_dtype(x.dtype), device=device, requires_grad=req)
        return memo[id(x)]
    if isinstance(x, torch.dtype):
        return convert_dtype(x)
    if isinstance(x, torch.device):
        return clgrad.device(device)
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.memory_format):
        return getattr(clgrad, str(x).split(".")[-1], x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_clgrad(v, device, memo) for v in x) if type(x) in (list, tuple) else \
            [to_clgrad(v, device, memo) for v in x]
    if isinstance(x, dict):
        return {k: to_clgrad(v, device, memo) for k, v in x.items()}
    if isinstance(x, torch.nn.Module):
        return to_clgrad_module(x)
    if callable(x) and getattr(x, "__module__", "") and x.__module__.startswith("torch"):
        return torch_callable(x)
    return x


def to_clgrad_module(m):
    """clgrad's module of the same class with the same plain attributes (PairwiseDistance(p=2) as an argument)."""
    cls = getattr(clgrad.nn, type(m).__name__, None)
    if cls is None or any(True for _ in m.parameters()):
        return m
    out = cls.__new__(cls)
    clgrad.nn.Module.__init__(out)
    for k, v in vars(m).items():
        if not k.startswith("_"):
            object.__setattr__(out, k, v)
    return out


def torch_callable(fn):
    """clgrad's function of the same name as a torch function passed as an argument (distance_function=)."""
    for space in (clgrad.nn.functional, clgrad):
        found = getattr(space, getattr(fn, "__name__", ""), None)
        if found is not None:
            return found
    return fn


def convert_dtype(d):
    name = str(d).split(".")[-1]
    found = getattr(clgrad, name, None)
    if not isinstance(found, clgrad.dtype):
        raise NotImplementedError(f"dtype {name}")
    return found


def leaves(x, kind):
    """Flat list of the values of type ``kind`` in a nested output (tuples, lists, namedtuples)."""
    if isinstance(x, kind):
        return [x]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in leaves(item, kind)]
    if isinstance(x, dict):
        return [v for item in x.values() for v in leaves(item, kind)]
    return []


def flat_outputs(x):
    """Torch or clgrad outputs as a flat list of numpy arrays or Python scalars."""
    if isinstance(x, torch.Tensor):
        if x._is_zerotensor():  # the gradient of sgn and friends
            return [np.zeros(tuple(x.shape), str(x.dtype).split(".")[-1])]
        if x.dtype == torch.bfloat16:  # numpy() refuses bfloat16: the bits, as clgrad's (ml_dtypes) type
            return [x.detach().cpu().view(torch.int16).numpy().view(clgrad.bfloat16.np)]
        return [x.detach().resolve_conj().cpu().numpy()]
    if isinstance(x, clgrad.Tensor):
        return [x.detach().cpu()._host() if x.dtype is clgrad.bfloat16 else x.detach().cpu().numpy()]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in flat_outputs(item)]
    return [x]


# ---- comparison ----------------------------------------------------------------------------------

def tolerances(op) -> tuple[float, float]:
    """(rtol, atol) for float64: the defaults, or larger where the entry's toleranceOverride (tol(atol, rtol))
    or precisionOverride (an atol) decorators say so."""
    rtol, atol = (RTOL, ATOL) if PRECISION is torch.float64 else (RTOL32, ATOL32)
    for info in getattr(op, "decorators", ()) or ():
        for dec in getattr(info, "decorators", None) or [info]:
            t = getattr(dec, "d", {}).get(PRECISION)
            if type(dec).__name__ == "toleranceOverride" and t is not None:
                rtol, atol = max(rtol, t.rtol), max(atol, t.atol)
            elif type(dec).__name__ == "precisionOverride" and t is not None:
                atol = max(atol, t)
    return rtol, atol


def compare(expected, actual, rtol=RTOL, atol=ATOL) -> str:
    """'' when two flat output lists agree, else the kind of mismatch."""
    if len(expected) != len(actual):
        return "n_outputs"
    for e, a in zip(expected, actual):
        if isinstance(e, np.ndarray):
            if not isinstance(a, np.ndarray):
                return "not_tensor"
            if e.shape != a.shape:
                return "shape"
            if e.dtype != a.dtype:
                return "dtype"
            if e.dtype.kind in "fc" and not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
                return "values"
            if e.dtype.kind not in "fc" and not np.array_equal(a, e):
                return "values"
        elif isinstance(e, (bool, int, float)) and not isinstance(e, type(None)):
            if not isinstance(a, (bool, int, float, np.generic)):
                return "not_scalar"
            if not np.allclose(float(a), float(e), rtol=rtol, atol=atol, equal_nan=True):
                return "values"
    return ""


def shapes_only(expected, actual, rtol=RTOL, atol=ATOL) -> str:
    """Comparison for random ops: shapes and dtypes only."""
    if len(expected) != len(actual):
        return "n_outputs"
    for e, a in zip(expected, actual):
        if isinstance(e, np.ndarray) and (not isinstance(a, np.ndarray) or e.shape != a.shape):
            return "shape"
        if isinstance(e, np.ndarray) and e.dtype != a.dtype:
            return "dtype"
    return ""


def is_random(op, sample) -> bool:
    """True for seeded random ops (OpInfo wraps them in ``wrapper_set_seed``), uninitialized ``empty`` results,
    and ops whose torch outputs differ under two seeds."""
    if "wrapper_set_seed" in getattr(getattr(op.op, "__code__", None), "co_names", ()) or "empty" in op.name:
        return True
    outs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        with torch.no_grad():
            outs.append(flat_outputs(op(sample.input, *sample.args, **sample.kwargs)))
    return compare(outs[0], outs[1]) != ""


def torch_grads(op, sample, out):
    """Gradients of the sum of torch's float outputs w.r.t. its float inputs that require grad."""
    ins = [t for t in leaves([sample.input, sample.args, sample.kwargs], torch.Tensor) if t.requires_grad]
    outs = [o for o in leaves(sample.output_process_fn_grad(out), torch.Tensor)
            if o.requires_grad and o.is_floating_point()]
    if not ins or not outs:
        return ins, None
    loss = sum(o.sum() for o in outs)
    return ins, torch.autograd.grad(loss, ins, allow_unused=True)


def clgrad_grads(ins, memo, out, process):
    """The same gradients in clgrad; ``process`` is the sample's output_process_fn_grad."""
    try:
        out = process(out)
    except Exception:  # noqa: BLE001 - these functions call torch methods; fall back to the raw output
        pass
    outs = [o for o in leaves(out, clgrad.Tensor) if o.requires_grad and o.dtype.is_floating_point]
    cl_ins = [memo[id(t)] for t in ins]
    if not outs:  # clgrad leaves requires_grad off where the output ignores the input (an empty result, A**0)
        return [None] * len(cl_ins)  # torch's gradients there are zeros
    for t in cl_ins:
        t.grad = None
    loss = outs[0].sum()
    for o in outs[1:]:
        loss = loss + o.sum()
    loss.backward()
    return [t.grad for t in cl_ins]


# ---- running ------------------------------------------------------------------------------------

def _alarm(signum, frame):
    raise SampleTimeout()


def error_kind(exc: BaseException) -> str:
    msg = str(exc).split("\n")[0][:60]
    return f"{type(exc).__name__}: {msg}"


def run_sample(op, fn, sample, device) -> tuple[str, str | None]:
    """(forward verdict, backward verdict or None); a verdict is '' when it matches, else the reason."""
    try:
        random = is_random(op, sample)
        torch.manual_seed(0)
        expected = op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001
        raise TorchRejects(error_kind(e)) from e
    memo: dict = {}
    cl_input = to_clgrad(sample.input, device, memo)
    cl_args = to_clgrad(sample.args, device, memo)
    cl_kwargs = to_clgrad(sample.kwargs, device, memo)
    actual = fn(cl_input, *cl_args, **cl_kwargs)
    check = shapes_only if random else compare
    rtol, atol = tolerances(op)
    fwd = check(flat_outputs(expected), flat_outputs(actual), rtol, atol)
    if random or not op.supports_autograd:
        return fwd, None
    ins, grads = torch_grads(op, sample, expected)
    if grads is None:
        return fwd, None
    try:
        cl_grads = clgrad_grads(ins, memo, actual, sample.output_process_fn_grad)
    except Exception as e:  # noqa: BLE001 - every failure is a finding, reported by kind
        return fwd, "backward " + error_kind(e)
    exp = [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, ins)]
    act = [g if g is not None else clgrad.zeros(tuple(t.shape), dtype=getattr(clgrad, str(t.dtype)[6:]))
           for g, t in zip(cl_grads, ins)]  # a missing gradient is zeros of the input's dtype, as torch's above
    bwd = compare(flat_outputs(exp), flat_outputs(act), rtol, atol)
    return fwd, ("grad " + bwd if bwd else "")


def run_op(op, device: str, n: int, seconds: float = SAMPLE_SECONDS) -> OpResult:
    res = OpResult(op.name, op.variant_test_name, False)
    found = resolve(op)
    if found is None:
        return res
    res.found, (res.how, fn) = True, found
    dtype = sample_dtype(op)
    try:
        grad = dtype.is_floating_point and op.supports_autograd
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))[:n]
    except Exception as e:  # noqa: BLE001
        res.errors["samples " + error_kind(e)] = 1
        return res
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i, sample in enumerate(samples):
            if not _run_one(op, fn, sample, device, seconds * (WARMUP if i == 0 else 1.0), res):
                break
    finally:
        signal.signal(signal.SIGALRM, previous)
    return res


def _run_one(op, fn, sample, device, limit: float, res: OpResult) -> bool:
    """Run one sample under a time limit and add its verdicts to ``res``; False when it ran too long."""
    for _attempt in range(2):  # a second try: the first may have spent its time compiling kernels, now cached
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            fwd, bwd = run_sample(op, fn, sample, device)
        except SampleTimeout:
            fwd, bwd = "slow", None
        except TorchRejects:
            res.torch_rejects += 1
            return True
        except Exception as e:  # noqa: BLE001 - every failure is a finding, reported by kind
            fwd, bwd = error_kind(e), None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if fwd != "slow":
            break
    res.samples += 1
    res.fwd_ok += fwd == ""
    for verdict in (fwd, bwd):
        if verdict:
            res.errors[verdict] = res.errors.get(verdict, 0) + 1
            res.first_error = res.first_error or verdict
    if bwd is not None:
        res.bwd_total += 1
        res.bwd_ok += bwd == ""
    return fwd != "slow" and time.perf_counter() - start <= limit


def select(op_db, names=None):
    ops = [op for op in op_db if applicable(op)]
    if names:
        ops = [op for op in ops if op.name in names]
    return ops


def totals(results) -> dict:
    found = [r for r in results if r.found]
    samples = sum(r.samples for r in found)
    bwd = sum(r.bwd_total for r in found)
    return {
        "applicable": len(results), "present": len(found),
        "present_pct": 100.0 * len(found) / max(len(results), 1),
        "samples": samples, "fwd_ok": sum(r.fwd_ok for r in found),
        "fwd_pct": 100.0 * sum(r.fwd_ok for r in found) / max(samples, 1),
        "bwd_samples": bwd, "bwd_ok": sum(r.bwd_ok for r in found),
        "bwd_pct": 100.0 * sum(r.bwd_ok for r in found) / max(bwd, 1),
    }


def describe(device: str) -> str:
    """``device`` and, for OpenCL, its platform and name."""
    if device == "cpu":
        return "cpu"
    p = clgrad.opencl.get_device_properties(device)
    return f"{device} ({p.platform}: {p.name})"


def markdown(results, tot, device) -> str:
    lines = [f"# clgrad op_db coverage on `{describe(device)}`", "",
             f"torch {torch.__version__}; {str(PRECISION)[6:]} samples (the first supported dtype where an entry has "
             f"none), up to the first N per entry; forward and backward tolerances "
             f"rtol={RTOL if PRECISION is torch.float64 else RTOL32}, atol={ATOL if PRECISION is torch.float64 else ATOL32} "
             f"or the entry's own {str(PRECISION)[6:]} overrides.", "",
             f"- entries present: {tot['present']} of {tot['applicable']} ({tot['present_pct']:.1f}%)",
             f"- samples matching forward: {tot['fwd_ok']} of {tot['samples']} ({tot['fwd_pct']:.1f}%)",
             f"- samples matching backward: {tot['bwd_ok']} of {tot['bwd_samples']} ({tot['bwd_pct']:.1f}%)",
             "", "## Failure kinds (samples)", ""]
    kinds = collections.Counter()
    for r in results:
        kinds.update(r.errors)
    lines += [f"- {n} x `{k}`" for k, n in kinds.most_common(40)]
    lines += ["", "## Present ops with mismatches", "", "| op | how | fwd | bwd | first error |", "|---|---|---|---|---|"]
    for r in results:
        if r.found and (r.fwd_ok < r.samples or r.bwd_ok < r.bwd_total):
            err = r.first_error.replace("|", "/")
            lines.append(f"| {r.key} | {r.how} | {r.fwd_ok}/{r.samples} | {r.bwd_ok}/{r.bwd_total} | {err} |")
    lines += ["", "## Missing", "", ", ".join(sorted({r.name for r in results if not r.found})), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", help="clgrad device: cpu, opencl or opencl:N")
    p.add_argument("-n", type=int, default=8, help="samples per op (default 8)")
    p.add_argument("--ops", default="", help="comma-separated op_db names (default all)")
    p.add_argument("--out", default="", help="path prefix for <out>.json and <out>.md")
    p.add_argument("--seconds", type=float, default=SAMPLE_SECONDS,
                   help="a sample slower than this ends its op's run (the first gets 10x: kernel compilation)")
    p.add_argument("--float32", action="store_true",
                   help=f"float32 samples and tolerances rtol={RTOL32}, atol={ATOL32} (for devices without fp64)")
    args = p.parse_args(argv)
    global PRECISION
    PRECISION = torch.float32 if args.float32 else torch.float64
    from torch.testing._internal.common_methods_invocations import op_db

    ops = select(op_db, set(args.ops.split(",")) if args.ops else None)
    results = []
    for op in ops:
        results.append(run_op(op, args.device, args.n, args.seconds))
    tot = totals(results)
    print(json.dumps(tot, indent=1))
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(
            {"device": describe(args.device), "totals": tot, "ops": [asdict(r) for r in results]}, indent=1))
        Path(args.out + ".md").write_text(markdown(results, tot, args.device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
