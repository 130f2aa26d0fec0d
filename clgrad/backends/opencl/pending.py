"""Device-side checks reported late, as CUDA's device-side asserts are: a launcher with such a check has its kernel
set a word of the launching thread's error buffer on the device and ``defer_slot``s a non-blocking copy of it;
``check_pending`` looks at the copies at that thread's next host read or ``synchronize()``. Waiting for the flag at
once cost a full wait per loss (the host could not queue the backward pass while the forward ran): the MNIST step
took 7.9 ms with it, 5.5 without. This module does not import pyopencl, so ``clgrad.opencl`` can check without it.

- Errors belong to the thread that launched the op: each thread has, per device, an error buffer of ``SLOTS`` + 1 words
  (one per check not looked at yet), and only that thread's host reads and synchronizes report them.
- Every failed check of a sync is reported: the first failed op's exception is raised, its message listing the
  others (one exception, so a loop that catches it to skip a bad batch does not get the batch's second error at the
  next batch's sync). All of them are then cleared.
- Checks never looked at (a program that ends without a sync) are printed on stderr at interpreter exit.
- Word 0 of an error buffer is set with any slot's (the summary): the fused optimizer kernels read it and skip their
  update while it is set (``error_buffer``), so a step after a failed check changes nothing, without a host sync.
  Reading the SLOTS words instead made a 4M-element Adam step 3-10x slower on PoCL (no vectorization).
"""
from __future__ import annotations

import atexit
import sys
import threading

import numpy as np

from . import capture, runtime

MAX_PENDING = 32  # look at the checks once this many wait (each holds a slot and its op's target)
SLOTS = MAX_PENDING  # per-check words of a thread's error buffer on a device (1..SLOTS; word 0: any of them)


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """PyTorch raises ``RuntimeError('ZeroDivisionError')`` for integer division by zero; this is both."""


class _Ring:
    """One thread's error buffer on one device: word 0 is set when any other is; words 1..SLOTS belong to one
    check each, 0 while it has not failed."""

    def __init__(self, dev):
        cl = runtime.pyopencl()
        self.buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 4 * (SLOTS + 1))
        cl.enqueue_fill_buffer(dev.queue, self.buf, np.int32(0), 0, 4 * (SLOTS + 1))
        self.free = list(range(SLOTS, 0, -1))
        self.reserved: set = set()  # slots a captured graph's launches write: never handed out until it is reset

    def release(self, slot: int) -> None:
        if slot not in self.reserved:
            self.free.append(slot)


class _State:
    """One thread's checks: (copy event, host int, device, slot, flag buffer kept alive, on_error, op name)."""

    def __init__(self):
        self.thread = threading.current_thread()
        self.pending: list = []
        self.rings: dict = {}  # device index -> _Ring


_local = threading.local()
_states: list = []  # every thread's state (for the report at exit); dead threads' empty ones are dropped
_states_lock = threading.Lock()


def _state() -> _State:
    state = getattr(_local, "state", None)
    if state is None:
        state = _local.state = _State()
        with _states_lock:
            _states[:] = [s for s in _states if s.thread.is_alive() or s.pending] + [state]
    return state


def _ring(state: _State, dev) -> _Ring:
    ring = state.rings.get(dev.index)
    if ring is None:
        ring = state.rings[dev.index] = _Ring(dev)
    return ring


def error_buffer(dev):
    """The calling thread's error buffer on ``dev``: word 0 is nonzero while a check of it failed unreported."""
    return _ring(_state(), dev).buf


def error_slot(dev) -> tuple:
    """(error buffer, slot) for a kernel of the calling thread that sets ``buffer[slot]`` and ``buffer[0]`` on
    failure; pass the slot to ``defer_slot`` right after the launch."""
    state = _state()
    ring = _ring(state, dev)
    if not ring.free:
        check_pending()  # every slot waits: look at them (frees them all, or raises)
    if not ring.free:
        capture.refuse(f"every one of the {SLOTS} deferred-check slots is held by captured graphs")
        raise RuntimeError(f"every one of the {SLOTS} deferred bounds-check slots of this thread is held by captured "
                           "graphs: reset() graphs you no longer replay")
    return ring.buf, ring.free.pop()


def defer_slot(dev, slot: int, on_error, what: str = "", keep=None) -> None:
    """Copy ``slot`` of the thread's error buffer to the host behind the kernel that sets it, without waiting;
    ``on_error`` raises the op's error, ``what`` names the op in the report at exit."""
    cl = runtime.pyopencl()
    state = _state()
    ring = _ring(state, dev)
    rec = capture.current()
    if rec is not None:  # the graph copies the slot after each replay; the slot stays its own
        ring.reserved.add(slot)
        rec.checks.append((dev, slot, on_error, what, keep))
        return
    host = np.zeros(1, np.int32)
    event = cl.enqueue_copy(dev.queue, host, ring.buf, src_offset=4 * slot, is_blocking=False)
    done = cl.command_execution_status.COMPLETE
    # checks whose copy is done and found no error are finished: free their slots now; a failed one stays until
    # the next host read or synchronize reports it
    keep_checks = []
    for check in state.pending:
        if check[0].command_execution_status == done and not check[1][0]:
            state.rings[check[2].index].release(check[3])
        else:
            keep_checks.append(check)
    keep_checks.append((event, host, dev, slot, keep, on_error, what))
    state.pending = keep_checks
    if len(keep_checks) >= MAX_PENDING or runtime.LAUNCH_BLOCKING:  # blocking launches: the op that failed raises
        check_pending()


def unreserve(dev, slot: int) -> None:
    """A reset graph's slot: free again (now, or when the check of its last replay is looked at)."""
    state = _state()
    ring = _ring(state, dev)
    ring.reserved.discard(slot)
    if not any(check[2] is dev and check[3] == slot for check in state.pending):
        ring.free.append(slot)


def _failed(state: _State) -> list:
    """Wait for the thread's checks, free their slots (clearing the failed ones' words) and forget them; returns
    the failed ones, in launch order."""
    checks, state.pending = state.pending, []
    cl = runtime.pyopencl()
    failed = []
    for check in checks:
        event, host, dev, slot = check[:4]
        with runtime.waiting(runtime.get(dev.index)):
            event.wait()
        if host[0]:
            failed.append(check)
            cl.enqueue_fill_buffer(dev.queue, state.rings[dev.index].buf, np.int32(0), 4 * slot, 4)
        state.rings[dev.index].release(slot)
    for dev in {check[2] for check in failed}:  # every check of the thread was looked at: the summary too
        cl.enqueue_fill_buffer(dev.queue, state.rings[dev.index].buf, np.int32(0), 0, 4)
    return failed


def _error_of(check) -> BaseException:
    try:
        check[5]()
    except Exception as exc:  # the callback raises the op's error: keep it to raise or report
        return exc
    return RuntimeError(f"{check[6] or 'a kernel'}: a device-side check failed")


def check_pending() -> None:
    """Look at the calling thread's deferred checks (waiting for their copies; after a host read or a synchronize
    they are done); if any failed, clear them all and raise the first failed op's error, naming the others."""
    state = getattr(_local, "state", None)
    if state is None or not state.pending:
        return
    failed = _failed(state)
    if not failed:
        return
    errors = [_error_of(check) for check in failed]
    first = errors[0]
    if len(errors) > 1 and first.args and isinstance(first.args[0], str):
        others = "; ".join(f"{c[6] or 'op'}: {type(e).__name__}: {e}" for c, e in zip(failed[1:], errors[1:]))
        first.args = (f"{first.args[0]} (and {len(errors) - 1} more deferred error(s) of this thread, reported "
                      f"together: {others})",) + first.args[1:]
    raise first


@atexit.register  # registered after runtime's (this module imports it), so it runs before the queues are drained
def _report_at_exit() -> None:
    """Print every deferred check that failed and was never reported (no host read or synchronize after it)."""
    with _states_lock:
        states = list(_states)
    for state in states:
        try:
            failed = _failed(state) if state.pending else []
        except Exception:  # a device gone bad at exit: nothing more can be learned
            continue
        for check in failed:
            exc = _error_of(check)
            print(f"clgrad: unreported deferred error in thread {state.thread.name!r} (no host read or synchronize() "
                  f"after it): {check[6] or 'op'}: {type(exc).__name__}: {exc}", file=sys.stderr)
