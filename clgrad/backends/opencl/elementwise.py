"""The ``elementwise`` primitive on OpenCL (an op family of OpenCLBackend): n-ary table ops over broadcast operands
of any layout, and the generated kernels of ``clgrad.compile``, from ``kernels/elementwise.cl.mako``."""
from __future__ import annotations

import numpy as np

from ... import dtypes as D
from ...registry.elementwise import OPS, EwOp
from .. import common
from ..common import INT32_MAX, is_scalar, pow2
from . import pending, programs, runtime
from .launch import Launcher, coalesce, is_contig, launch_size

# numpy types of kernel scalar arguments, by the C type the kernel declares. Kernels are cached on their
# render parameters, so a scalar's packing must follow from the C type alone (bool and uint8 share uchar).
_SCALAR_NP = {"uchar": np.uint8, "char": np.int8, "short": np.int16, "int": np.int32, "long": np.int64,
              "float": np.float32, "double": np.float64, "bool": np.uint8}




def _out_cast(out_dt: D.dtype, compute: D.dtype, entry) -> str:
    """How the kernel stores its result: half and bool need conversions, and float results stored into
    small ints go through int (C leaves float->char undefined out of range; PyTorch wraps)."""
    if out_dt in D.HALF_FLOATS:
        return out_dt.ctype  # "half" or "bfloat16": the prelude's store converts
    if out_dt is D.bool:
        return "bool"
    if compute.kind == "f" and not entry.predicate and out_dt.kind in "iu" and out_dt is not D.int64:
        return "float_to_small_int"
    return "plain"


def _grid_size(shape, across: bool = False, max_group: int = 1024) -> tuple:
    """(global, local) sizes of an ndim-D launch over ``shape`` (innermost dim first): work-groups along the
    innermost dim, of a power of two up to 64 (a guarded tail), so that PoCL, which generates code per
    local size, meets at most 7 of them however the shapes vary (left to choose, it picked one per shape).
    ``across`` (an operand read across rows, e.g. transposed): 16 columns (one vector of lanes) by up to 256 rows
    (the most of 256, 128, ..., 16 that divide the rows and fit ``max_group``). The lanes of a gather then touch
    only 16 rows of the transposed operand (16 pages, where 64 lanes had touched 64: its TLB misses, not the
    bytes, bounded the kernel), each page reused along the group's rows: a transposed a*b+c on 4096x4096 went
    6.6 -> 9.7 GB/s with 64 x 16 groups and to ~20 GB/s with 16 x 256 on PoCL (AMD EPYC). Where a local-memory
    tile removes the gather (_tile_side), these groups serve the rest: other devices, short sides, outputs."""
    if across and len(shape) >= 2:
        for rows in (256, 128, 64, 32, 16):
            if shape[-2] % rows == 0 and 16 * rows <= max_group:
                local = min(16, pow2(shape[-1]))
                return ((-(-shape[-1] // local) * local, *reversed(shape[:-1])),
                        (local, rows) + (1,) * (len(shape) - 2))
    local = min(64, pow2(shape[-1]))
    return ((-(-shape[-1] // local) * local, *reversed(shape[:-1])), (local,) + (1,) * (len(shape) - 1))


def _tile_side(dev) -> int:
    """The side of the local-memory tile through which a CPU grid kernel reads a transposed operand, 0 for none.

    A transposed operand (unit stride down the rows, a long one across) is read along its rows into a
    ``__local`` tile, a barrier, then each work-item takes its element from the tile, while the output and the
    other operands are read and written as they lie. On PoCL 3.1 (AMD EPYC, AVX-512) ``a.T * b`` on 4096x4096
    fp32 took 8.5 ms with 64 x 64 tiles against 20 ms on the 16 x 256 gather groups (_grid_size) in the same
    run; 32 x 32 tiles were 1.0-1.4x the gather, 16 x 16 and anything with several elements a work-item slower
    (PoCL vectorizes across dim 0 of a work-group, and only a work-group of 64 columns kept LLVM from unrolling
    it and vectorizing across rows instead). rusticl (llvmpipe) ran 32 x 32 tiles at 0.5x its gather, so it
    keeps that. The simulator takes the largest tile its work-groups allow (Oclgrind: 32), so that it checks
    the tile kernel's accesses and barrier."""
    p = dev.props
    if p.platform != "Portable Computing Language" and not p.is_simulator:
        return 0
    return next((t for t in (64, 32) if t * t <= p.max_work_group_size), 0)


def _tiled(shape, out_strides, strides: dict, sizes: dict, side: int, local_memory: int) -> tuple:
    """The inputs (their positions) read through a tile: those read with a unit stride down the rows and a
    long one across them, while their tiles (``sizes``: bytes of one element) fit half the local memory. Both
    of the last two dims must be at least a tile long: a short side leaves most of each tile's work-items idle.
    An output written across its rows keeps the gather groups too: scattered from 64 x 64 groups, add(a.T, b,
    out=c.T) on 2048x2048 took 3x as long."""
    if not side or min(shape[-2:]) < side or out_strides[-1] not in (0, 1):
        return ()
    tiled, used = [], 0
    for k, st in strides.items():
        need = side * (side + 1) * sizes[k]
        if st[-2] == 1 and st[-1] not in (0, 1) and used + need <= local_memory // 2:
            tiled.append(k)
            used += need
    return tuple(tiled)


def _zero_division():
    """Integer division by zero, as PyTorch's CPU raises it (``RuntimeError: ZeroDivisionError``)."""
    raise pending.IntegerDivisionByZero("ZeroDivisionError")


def _to_scalar(x, scalar_np: np.dtype):
    """A Python scalar as the kernel's argument type, wrapping out-of-range ints as a C cast does."""
    with np.errstate(all="ignore"):
        return np.array(x).astype(scalar_np)[()]


class CLElementwise:
    PRIMITIVES = ("elementwise", "elementwise_launcher", "fused_launcher")

    def __init__(self, backend, launcher: Launcher):
        self.be, self.rt = backend, launcher
        self._launchers = launcher.cache()  # launch functions by op, dtypes, shape and strides

    def elementwise(self, op: str, out, inputs, compute: D.dtype) -> None:
        if out.numel() == 0:
            return
        self.elementwise_launcher(op, out, inputs, compute)(out, inputs)

    def elementwise_launcher(self, op: str, out, inputs, compute: D.dtype):
        """A ``launch(out, inputs)`` for every call whose operands have the dtypes, shape and strides of these.

        Launchers are cached on exactly that, so the per-op Python work of a repeated op is filling in buffers,
        offsets and scalars: the kernel, its geometry and the layout arguments are worked out once.
        """
        most = max(out.numel(), out._storage.size)
        layout = []
        for x in inputs:  # one pass, one type test per operand: this runs for every op
            if isinstance(x, common.SCALAR_TYPES):  # read at call time: bfloat16's scalar joins on first use
                layout.append(type(x))
            else:
                most = max(most, x._storage.size)
                layout.append((x.dtype, x._strides))
        big = most > INT32_MAX
        key = (op, compute, out.dtype, out._shape, out._strides, big, out.device.index, *layout)
        launch = self._launchers.get(key)
        if launch is None:
            launch = self._launchers[key] = self._build_launcher(op, out, inputs, compute, big)
        return launch

    def fused_launcher(self, name: str, expr: str, prelude: tuple, out, inputs, compute: D.dtype):
        """A ``launch(out, inputs)`` of one generated kernel: ``prelude`` statements, then ``out = expr``, over up
        to 8 inputs (a..h, loaded in the compute type; broadcast views or Python scalars), ``out`` in ``compute``."""
        big = max([out.numel(), out._storage.size] + [x._storage.size for x in inputs if not is_scalar(x)]) \
            > INT32_MAX
        fused = EwOp(len(inputs), expr, None)
        return self._build_launcher(name, out, inputs, compute, big, fused=(fused, prelude))

    def _build_launcher(self, op: str, out, inputs, compute: D.dtype, big: bool, fused=None):
        n = out.numel()
        dev = self.rt.dev(out)
        self.rt.check_dtype(dev, compute)
        entry = OPS[op] if fused is None else fused[0]
        tensors = [x for x in inputs if not is_scalar(x)]
        shape, strides = coalesce(out.shape, [out._strides] + [x._strides for x in tensors])
        idx_np = np.int64 if big else np.int32
        compute_ctype = compute.compute_ctype
        ndim = len(shape)

        # values[slot] is filled per call: a buffer (and its offset at slot + 1), or a converted scalar
        arg_desc, arg_dtypes, values, slots = [], [None, idx_np], [None, 0], []
        out_contig = is_contig(shape, strides[0])
        if not out_contig:
            arg_dtypes += [idx_np] * ndim
            values += strides[0]
        ti = 1
        tensor_strides, tile_bytes = {}, {}  # by input position: what _tiled chooses from
        for k, x in enumerate(inputs):
            load_t = "bool" if k in entry.bool_args else compute_ctype
            if not is_scalar(x):
                st = tensor_strides[k] = strides[ti]
                tile_bytes[k] = np.dtype(_SCALAR_NP[load_t]).itemsize
                ti += 1
                contig = is_contig(shape, st)
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
        across = grid and any(st[-1] not in (0, 1) for st in strides)  # an operand (or out) read across rows
        side = _tile_side(dev) if across else 0
        tiles = _tiled(shape, strides[0], tensor_strides, tile_bytes, side, dev.props.local_memory) if side else ()
        if tiles:  # one work-item per element of a side x side tile; the tails are guarded
            gsize = (-(-shape[-1] // side) * side, -(-shape[-2] // side) * side, *shape[:-2])
            lsize = (side, side) + (1,) * (ndim - 2)
            guard = shape[-1] % side != 0 or shape[-2] % side != 0
        else:
            gsize, lsize = _grid_size(shape, across, dev.props.max_work_group_size) if grid else launch_size(dev, n)
            guard = gsize[0] != (shape[-1] if grid else n)
        if strided:
            arg_dtypes += [idx_np] * ndim
            values += shape
        arg_dtypes.append(idx_np)
        values.append(n)
        checked = fused is None and entry.int_div_check and compute.kind in "iu"
        if checked:  # the error buffer and slot of a zero-divisor check (pending.py), filled per call
            arg_dtypes += [None, np.int32]

        integral = compute.kind != "f"
        # a registry op names itself and its bundle (the kernel list is computed at render: programs.render_params)
        kernels = dict(op=op, op_dtype=compute.name, bundle=True) if fused is None else dict(
            kernels=((f"{op}_{compute_ctype}", entry.c),))
        params = dict(
            compute=compute_ctype, integral=integral, **kernels, prelude=() if fused is None else fused[1],
            half_compute=compute.ctype if compute in D.HALF_FLOATS else False, args=tuple(arg_desc),
            out_ctype=out.dtype.ctype, out_contig=out_contig, grid=grid, inner=inner, guard=guard,
            tile=side if tiles else 0, tiles=tiles, out_cast=_out_cast(out.dtype, compute, entry), ndim=ndim,
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
        queue = dev.queue
        if not checked and fused is None and type(kernel) is programs.LockedKernel and not runtime.LAUNCH_BLOCKING:
            return _direct_launch(kernel, queue, gsize, lsize, values, arg_dtypes, slots, op, compute)

        def launch(out, inputs):
            if programs.tracing is not None and fused is None:
                programs.tracing.elementwise.append((op, out, inputs, compute))
            kernel(queue, gsize, lsize, *_fill(values, slots, out, inputs))

        if not checked:
            return launch

        def checked_launch(out, inputs):
            if programs.tracing is not None:
                programs.tracing.elementwise.append((op, out, inputs, compute))
            err, slot = pending.error_slot(dev)
            kernel(queue, gsize, lsize, *_fill(values, slots, out, inputs), err, np.int32(slot))
            pending.defer_slot(dev, slot, _zero_division, op)

        return checked_launch


def _fill(values: list, slots, out, inputs) -> list:
    """The launch's argument list: ``values`` with this call's buffers, offsets and scalars filled in."""
    vals = values.copy()
    vals[0], vals[1] = out._storage.data, out._offset
    for k, slot, scalar_np in slots:
        x = inputs[k]
        if scalar_np is None:
            vals[slot], vals[slot + 1] = x._storage.data, x._offset
        else:
            vals[slot] = _to_scalar(x, scalar_np)
    return vals


def _direct_launch(locked, queue, gsize, lsize, values, arg_dtypes, slots, op, compute):
    """The cached eager path: a private clone of the kernel with the constant arguments (strides, shape, size) set
    once, so a call sets only the buffers and whatever offset or scalar changed, then enqueues (about 1 us less
    than pyopencl's packing invoker, and no argument list built). A graph capture, a ``clgrad.compile`` trace and
    the profiler take the shared kernel's ordinary call (``programs.LockedKernel``), which records the launch."""
    bound = programs.Bound(locked, [None if v is None else t(v) for v, t in zip(values, arg_dtypes)])
    kernel, enqueue, lock, dev = bound.kernel, bound.enqueue, bound.lock, locked.dev
    set_arg = kernel.set_arg
    last = [None] * len(values)  # the value each per-call argument slot holds now (offsets, scalars)
    idx_np = arg_dtypes[1]
    tensor_slots = tuple((k, slot) for k, slot, scalar_np in slots if scalar_np is None)
    scalar_slots = tuple((k, slot, scalar_np) for k, slot, scalar_np in slots if scalar_np is not None)

    def slow(out, inputs):
        if programs.tracing is not None:
            programs.tracing.elementwise.append((op, out, inputs, compute))
        locked(queue, gsize, lsize, *_fill(values, slots, out, inputs))

    def launch(out, inputs):
        if programs.direct_off():
            return slow(out, inputs)
        with lock:
            set_arg(0, out._storage.data)
            if out._offset != last[1]:
                set_arg(1, idx_np(out._offset))
                last[1] = out._offset
            for k, slot in tensor_slots:
                x = inputs[k]
                set_arg(slot, x._storage.data)
                if x._offset != last[slot + 1]:
                    set_arg(slot + 1, idx_np(x._offset))
                    last[slot + 1] = x._offset
            for k, slot, scalar_np in scalar_slots:
                x = inputs[k]
                if not _same_scalar(x, last[slot]):
                    set_arg(slot, _to_scalar(x, scalar_np))
                    last[slot] = (type(x), x)
            enqueue(queue, kernel, gsize, lsize)
        dev.last_kernel = locked.name

    return launch


def _same_scalar(x, seen) -> bool:
    """Whether scalar ``x`` is the one ``seen`` ((type, value) or None) by type and value, -0.0 apart from 0.0 (for
    every float type, numpy's included: a zero that is not an int compares by its repr)."""
    if seen is None or type(x) is not seen[0] or not x == seen[1]:
        return False
    return x != 0 or type(x) in (int, bool) or repr(x) == repr(seen[1])
