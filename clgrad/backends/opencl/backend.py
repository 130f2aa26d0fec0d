"""The OpenCL backend: the primitives as launches of kernels rendered from ``clgrad/kernels``."""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ...device import device
from ...storage import Storage
from ...registry.elementwise import OPS, EwOp
from . import programs, runtime
from .conv import CLConv
from .index import CLIndex
from .matmul import CLMatmul
from .nn import CLNN, check_pending
from .optim import CLOptim
from .random import CLRandom
from .reduce import CLReduce
from .rnn import CLRNN
from .scan import CLScan

INT32_MAX = 2**31 - 1
# numpy types of kernel scalar arguments, by the C type the kernel declares. Kernels are cached on their
# render parameters, so a scalar's packing must follow from the C type alone (bool and uint8 share uchar).
_SCALAR_NP = {"uchar": np.uint8, "char": np.int8, "short": np.int16, "int": np.int32, "long": np.int64,
              "float": np.float32, "double": np.float64, "bool": np.uint8}


def coalesce(shape, strides_list):
    """Drop size-1 dims and merge dims that are contiguous for every operand.

    Returns (shape, strides_list) with as few dims as possible (at least one), so that kernels are
    rendered for few distinct ``ndim`` values and index math stays cheap.
    """
    dims = [d for d, n in enumerate(shape) if n != 1]
    new_shape = [shape[d] for d in dims] or [1]
    new_strides = [[st[d] for d in dims] or [1] for st in strides_list]
    d = len(new_shape) - 1
    while d > 0:
        if all(st[d - 1] == st[d] * new_shape[d] for st in new_strides):
            new_shape[d - 1] *= new_shape[d]
            del new_shape[d]
            for st in new_strides:
                st[d - 1] = st[d]
                del st[d]
        d -= 1
    return new_shape, new_strides


def _is_contig(shape, strides) -> bool:
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


SMALL_LAUNCH = 1 << 16


def launch_size(dev: runtime.CLDevice, n: int, local: int = 256):
    """One work-item per element. CPU devices pick their own local size (PoCL is fastest that way);
    GPUs get a fixed work-group and a rounded-up global size (kernels guard the tail)."""
    if dev.rank >= 2:
        if n >= SMALL_LAUNCH:
            return (n,), None
        # small launches: one fixed work-group size and a guarded tail. PoCL generates a work-group function per
        # local size, and left to choose it picks a different one for nearly every size
        return (-(-n // 64) * 64,), (64,)
    local = min(local, dev.props.max_work_group_size)
    return (-(-n // local) * local,), (local,)


_LAUNCHERS: dict = {}
programs.add_cache_listener(_LAUNCHERS.clear)  # launchers hold kernels and queues (the profiler swaps both)
_MAX_LAUNCHERS = 4096  # distinct layouts seen; the cache starts over beyond this (shapes that keep changing)


def _out_cast(out_dt: D.dtype, compute: D.dtype, entry) -> str:
    """How the kernel stores its result: half and bool need conversions, and float results stored into
    small ints go through int (C leaves float->char undefined out of range; PyTorch wraps)."""
    if out_dt is D.float16:
        return "half"
    if out_dt is D.bool:
        return "bool"
    if compute.kind == "f" and not entry.predicate and out_dt.kind in "iu" and out_dt is not D.int64:
        return "float_to_small_int"
    return "plain"


def _to_scalar(x, scalar_np: np.dtype):
    """A Python scalar as the kernel's argument type, wrapping out-of-range ints as a C cast does."""
    with np.errstate(all="ignore"):
        return np.array(x).astype(scalar_np)[()]


class OpenCLBackend(CLReduce, CLMatmul, CLRandom, CLIndex, CLScan, CLConv, CLNN, CLOptim, CLRNN):
    name = "opencl"

    @staticmethod
    def dev(t) -> runtime.CLDevice:
        return runtime.get(t.device.index)

    def check_dtype(self, dev: runtime.CLDevice, dt: D.dtype) -> None:
        if dt is D.float64 and not dev.props.fp64:
            raise TypeError(
                f"float64 is not supported on opencl:{dev.index} ({dev.props.name}): the device lacks the "
                "cl_khr_fp64 extension. Use float32, or a device that has cl_khr_fp64."
            )

    def empty(self, d: device, dt: D.dtype, size: int) -> Storage:
        dev = runtime.get(d.index)
        self.check_dtype(dev, dt)
        if size == 0:
            return Storage(d, dt, 0, None)
        alloc = dev.allocator
        buf, rounded = alloc.malloc(size * dt.itemsize)
        return Storage(d, dt, size, buf, lambda: alloc.free(buf, rounded))

    def write(self, storage: Storage, host: np.ndarray, offset: int = 0) -> None:
        """Copy ``host`` (converted to the storage's dtype, C order) into the storage from element ``offset``."""
        import pyopencl as cl

        if host.size == 0:
            return
        if offset < 0 or offset + host.size > storage.size:
            raise RuntimeError(f"write of {host.size} elements at offset {offset} overflows a storage of {storage.size}")
        if programs.tracing is not None:
            programs.tracing.transfers += 1
        dev = runtime.get(storage.device.index)
        data = np.ascontiguousarray(host, dtype=storage.dtype.np)
        # blocking: the caller may reuse or mutate its host array as soon as we return
        with runtime.waiting(dev):
            cl.enqueue_copy(dev.queue, storage.data, data, dst_offset=offset * storage.dtype.itemsize, is_blocking=True)

    def read(self, t) -> np.ndarray:
        import pyopencl as cl

        if not t.is_contiguous():
            t = t.contiguous()
        host = np.empty(t.shape, t.dtype.np)
        if programs.tracing is not None:
            programs.tracing.transfers += 1
        if host.size:
            dev = self.dev(t)
            with runtime.waiting(dev):
                cl.enqueue_copy(dev.queue, host, t._storage.data, src_offset=t._offset * t.dtype.itemsize,
                                is_blocking=True)
        check_pending()  # a deferred bounds check failed: raise before anyone uses what was computed
        return host

    def synchronize(self, d: device | None = None) -> None:
        devs = [runtime.get(d.index)] if d is not None else runtime.devices()
        for dev in devs:
            if dev._queue is not None:
                with runtime.waiting(dev):
                    dev.queue.finish()
        check_pending()

    def elementwise(self, op: str, out, inputs, compute: D.dtype) -> None:
        if out.numel() == 0:
            return
        self.elementwise_launcher(op, out, inputs, compute)(out, inputs)

    def elementwise_launcher(self, op: str, out, inputs, compute: D.dtype):
        """A ``launch(out, inputs)`` for every call whose operands have the dtypes, shape and strides of these.

        Launchers are cached on exactly that, so the per-op Python work of a repeated op is filling in buffers,
        offsets and scalars: the kernel, its geometry and the layout arguments are worked out once.
        """
        big = max([out.numel()] + [x._storage.size for x in inputs if hasattr(x, "_storage")]
                  + [out._storage.size]) > INT32_MAX
        key = (op, compute, out.dtype, out._shape, out._strides, big, out.device.index,
               *[(x.dtype, x._strides) if hasattr(x, "_storage") else type(x) for x in inputs])
        launch = _LAUNCHERS.get(key)
        if launch is None:
            if len(_LAUNCHERS) >= _MAX_LAUNCHERS:
                _LAUNCHERS.clear()
            launch = _LAUNCHERS[key] = self._build_launcher(op, out, inputs, compute, big)
        return launch

    def fused_launcher(self, name: str, expr: str, prelude: tuple, out, inputs, compute: D.dtype):
        """A ``launch(out, inputs)`` of one generated kernel: ``prelude`` statements, then ``out = expr``, over up
        to 8 inputs (a..h, loaded in the compute type; broadcast views or Python scalars), ``out`` in ``compute``."""
        big = max([out.numel(), out._storage.size] + [x._storage.size for x in inputs if hasattr(x, "_storage")]) \
            > INT32_MAX
        fused = EwOp(len(inputs), expr, None)
        return self._build_launcher(name, out, inputs, compute, big, fused=(fused, prelude))

    def _build_launcher(self, op: str, out, inputs, compute: D.dtype, big: bool, fused=None):
        n = out.numel()
        dev = self.dev(out)
        self.check_dtype(dev, compute)
        entry = OPS[op] if fused is None else fused[0]
        tensors = [x for x in inputs if hasattr(x, "_storage")]
        shape, strides = coalesce(out.shape, [out._strides] + [x._strides for x in tensors])
        idx_np = np.int64 if big else np.int32
        compute_ctype = compute.compute_ctype
        ndim = len(shape)

        # values[slot] is filled per call: a buffer (and its offset at slot + 1), or a converted scalar
        arg_desc, arg_dtypes, values, slots = [], [None, idx_np], [None, 0], []
        out_contig = _is_contig(shape, strides[0])
        if not out_contig:
            arg_dtypes += [idx_np] * ndim
            values += strides[0]
        ti = 1
        for k, x in enumerate(inputs):
            load_t = "bool" if k in entry.bool_args else compute_ctype
            if hasattr(x, "_storage"):
                st = strides[ti]
                ti += 1
                contig = _is_contig(shape, st)
                arg_desc.append((False, x.dtype.ctype, load_t, contig))
                slots.append((k, len(values), None))
                arg_dtypes += [None, idx_np]
                values += [None, 0]
                if not contig:
                    arg_dtypes += [idx_np] * ndim
                    values += st
            else:
                scalar_np = np.dtype(_SCALAR_NP[load_t])
                arg_desc.append((True, None, load_t, True))
                slots.append((k, len(values), scalar_np))
                arg_dtypes.append(scalar_np)
                values.append(None)
        strided = (not out_contig) or any(not a[0] and not a[3] for a in arg_desc)
        # CPU devices run strided kernels on an ndim-D grid: no integer division per element (a transposed
        # a*b+c on 16M floats ran at 0.8 GB/s with the division, against 8 GB/s for contiguous operands)
        grid = strided and dev.rank >= 2 and 2 <= ndim <= 3
        # the grid kernel's innermost stride as a constant where it is 0 or 1: with a runtime stride PoCL gathers
        # every vector lane, with a constant one it loads a contiguous run (a broadcast row) or one value
        inner = tuple(st[-1] if grid and st[-1] in (0, 1) else None for st in strides)
        if strided:
            arg_dtypes += [idx_np] * ndim
            values += shape
        arg_dtypes.append(idx_np)
        values.append(n)

        integral = compute.kind != "f"
        # a table op names itself and its bundle (the kernel list is computed at render: programs.render_params)
        kernels = dict(op=op, op_dtype=compute.name, bundle=True) if fused is None else dict(
            kernels=((f"{op}_{compute_ctype}", entry.c),))
        params = dict(
            compute=compute_ctype, integral=integral, **kernels, prelude=() if fused is None else fused[1],
            half_compute=compute is D.float16, args=tuple(arg_desc),
            out_ctype=out.dtype.ctype, out_contig=out_contig, grid=grid, inner=inner, guard=launch_size(dev, n)[0][0] != n, out_cast=_out_cast(out.dtype, compute, entry), ndim=ndim,
            idx_t="long" if big else "int", fp64=D.float64 in (compute, out.dtype) or any(x.dtype is D.float64 for x in tensors),
        )
        name = f"{op}_{compute_ctype}"
        try:
            kernel = programs.get_kernel(dev, "elementwise", name, tuple(arg_dtypes), params)
        except RuntimeError:  # a bundle member this compiler rejects must not take the op down with it
            if fused is not None or len(programs.bundle_of(op, compute)) == 1:
                raise
            params["bundle"] = False
            kernel = programs.get_kernel(dev, "elementwise", name, tuple(arg_dtypes), params)
        gsize, lsize = (tuple(reversed(shape)), None) if grid else launch_size(dev, n)
        queue = dev.queue

        def launch(out, inputs):
            if programs.tracing is not None and fused is None:
                programs.tracing.elementwise.append((op, out, inputs, compute))
            vals = values.copy()
            vals[0], vals[1] = out._storage.data, out._offset
            for k, slot, scalar_np in slots:
                x = inputs[k]
                if scalar_np is None:
                    vals[slot], vals[slot + 1] = x._storage.data, x._offset
                else:
                    vals[slot] = _to_scalar(x, scalar_np)
            kernel(queue, gsize, lsize, *vals)

        return launch
