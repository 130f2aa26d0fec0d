"""Capture of a device's work into a replayable list (the backend half of ``clgrad.graphs``, CUDA graphs' analogue).

While a ``Recorder`` is ``active``, nothing reaches the queue: every kernel launch (``programs.LockedKernel``) becomes
a clone of its kernel with the launch's arguments bound once, every fill or host upload a prepared call, and
``replay()`` enqueues them in order with nothing but the enqueue loop per launch. As in CUDA graphs, capture does not
run the work; the first replay does.

What changes from one replay to the next is refreshed before the loop by the few ``updaters`` the capture
registered (``dynamic``: the Philox offset of a random launch, the bias corrections of a fused Adam step); a host
read, a synchronize or a data-dependent size cannot be replayed, so ``refuse`` aborts the capture (the caller
releases its memory) and raises ``NotCapturable`` naming the operation.

``cl_khr_command_buffer`` would hold the same list inside the driver (PoCL 3.1 lists it), but pyopencl does not wrap
it; the pre-bound list costs one pyopencl call per launch.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from . import runtime

active = None  # the Recorder while a capture is open (one at a time, as a CUDA stream captures one graph)


def current():
    """The open capture if the calling thread opened it, else None: other threads' work runs eagerly, unrecorded
    (torch's capture_error_mode="thread_local")."""
    rec = active
    return rec if rec is not None and rec.thread == threading.get_ident() else None


class NotCapturable(RuntimeError):
    """An operation inside a graph capture that cannot be replayed (host reads, data-dependent shapes, ...)."""


_WRAPPERS = {"checked", "wrapper", "wrapped", "inner", "decorated", "_call_impl", "__call__"}


def _public_op() -> str:
    """The clgrad function the user called (the outermost clgrad frame below the first frame outside clgrad, past
    decorators' wrappers)."""
    frame, names = sys._getframe(2), []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("clgrad.") or module.startswith(("clgrad.graphs", "clgrad.captured")):
            break
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    while len(names) > 1 and names[-1] in _WRAPPERS:
        names.pop()
    return names[-1] if names else "an operation"


def refuse(what: str) -> None:
    """Abort the open capture, if any, and raise: ``what`` (a host read, a sync...) cannot be replayed."""
    rec = current()
    if rec is None:
        return
    rec.abort()
    raise NotCapturable(
        f"{_public_op()}() is not capturable: {what}. A captured graph replays device work only, with fixed sizes; "
        "the capture was aborted and its memory released. Move it out of the captured region (or run this step "
        "eagerly)."
    )


class Recorder:
    """The launches of one capture on ``dev``, in order, as (pyopencl function, arguments) pairs."""

    def __init__(self, dev, on_abort):
        cl = runtime.pyopencl()
        self.dev, self.queue, self.on_abort = dev, dev.queue, on_abort
        self.thread = threading.get_ident()
        self._enqueue, self._fill, self._copy = cl.enqueue_nd_range_kernel, cl.enqueue_fill_buffer, cl.enqueue_copy
        self._memory = cl.MemoryObjectHolder
        self.ops: list = []
        self.updaters: list = []  # run before each replay, in capture order
        self.checks: list = []  # deferred device-side checks: (dev, slot, on_error, what, keep)
        self.buffers: set = set()  # ids of the buffers the launches use
        self.keep: list = []  # buffers and host arrays the ops reference
        self._dynamic = None  # a function giving the next launch's changing arguments
        self.aborted = False

    def launch(self, locked, queue, gsize, lsize, args) -> None:
        if queue is not self.queue:
            refuse(f"it launches {locked.name} on {locked.dev.describe()} while capturing on {self.dev.describe()}")
        kernel = locked.kernel.clone()
        kernel.set_scalar_arg_dtypes(locked.arg_dtypes)
        kernel.set_args(*args)
        for a in args:
            if isinstance(a, self._memory):
                self.buffers.add(id(a))
                self.keep.append(a)
        if self._dynamic is not None:
            fn, self._dynamic = self._dynamic, None
            self.updaters.append(lambda: [kernel.set_arg(i, v) for i, v in fn().items()])
        elif locked.template == "random":
            refuse(f"{locked.name} draws random numbers without a generator the graph can advance per replay")
        self.ops.append((self._enqueue, (queue, kernel, gsize, lsize)))

    def fill(self, buf, pattern, offset: int, size: int) -> None:
        self.keep.append(buf)
        self.buffers.add(id(buf))
        self.ops.append((self._fill, (self.queue, buf, pattern, offset, size)))

    def upload(self, buf, host: np.ndarray, offset_bytes: int) -> None:
        """A host -> device copy of data known at capture (a constant): replayed from a private copy."""
        host = np.array(host, copy=True)
        self.keep += [buf, host]
        self.buffers.add(id(buf))
        self.ops.append((self._copy_to, (buf, host, offset_bytes)))

    def _copy_to(self, buf, host, offset_bytes):
        self._copy(self.queue, buf, host, dst_offset=offset_bytes, is_blocking=False)

    def dynamic(self, fn) -> None:
        """``fn() -> {argument index: value}`` gives the next launch's changing arguments at each replay."""
        self._dynamic = fn

    def before_replay(self, fn) -> None:
        """Run ``fn()`` before each replay (host bookkeeping the captured region did once, e.g. a step count)."""
        self.updaters.append(fn)

    def abort(self) -> None:
        global active
        if active is self:
            active = None
        self.aborted = True
        self.on_abort()

    def replay(self, defer) -> None:
        for fn in self.updaters:
            fn()
        for fn, args in self.ops:
            fn(*args)
        for check in self.checks:
            defer(*check)


def fill(queue, buf, pattern, offset: int, size: int) -> None:
    """``enqueue_fill_buffer``, or its record while a capture is open."""
    rec = current()
    if rec is not None:
        rec.fill(buf, pattern, offset, size)
    else:
        runtime.pyopencl().enqueue_fill_buffer(queue, buf, pattern, offset, size)
