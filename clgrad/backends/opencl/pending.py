"""Device-side bounds checks reported late, as CUDA's device-side asserts are: a launcher with such a check sets a
flag on the device and ``defer``s a non-blocking copy of it; ``check_pending`` looks at the copies at the next host
read or ``synchronize()`` and calls the first failed op's callback (which raises torch's IndexError). Waiting for
the flag at once cost a full wait per loss (the host could not queue the backward pass while the forward ran): the
MNIST step took 7.9 ms with it, 5.5 without. This module does not import pyopencl, so ``clgrad.opencl`` can check
without it.
"""
from __future__ import annotations

import threading

import numpy as np

from . import runtime

_pending: list = []  # (copy event, host int, flag storage, on_error) of bounds checks not looked at yet
_pending_lock = threading.Lock()
MAX_PENDING = 32  # look at them once this many wait (each holds a 4-byte buffer and its op's target)


def check_pending() -> None:
    """Look at the deferred bounds flags (waiting for their copies; after a host read or a synchronize they are
    done); if one is set, forget them all and call the first failed op's callback, which raises."""
    if not _pending:
        return
    with _pending_lock:
        checks = _pending[:]
        _pending.clear()
    for event, host, flag, on_error in checks:
        with runtime.waiting(runtime.get(flag.device.index)):
            event.wait()
        if host[0]:
            on_error()
            return


def defer(dev, flag, on_error) -> None:
    """Copy ``flag`` to the host behind the kernel that sets it, without waiting for either."""
    cl = runtime.pyopencl()
    host = np.zeros(1, np.int32)
    event = cl.enqueue_copy(dev.queue, host, flag.data, is_blocking=False)
    done = cl.command_execution_status.COMPLETE
    with _pending_lock:
        # checks whose copy is done and found no error are finished: drop them (and their buffers) now; a failed
        # one stays until the next host read or synchronize reports it
        _pending[:] = [c for c in _pending if c[0].command_execution_status != done or c[1][0]]
        _pending.append((event, host, flag, on_error))
        full = len(_pending) >= MAX_PENDING
    if full or runtime.LAUNCH_BLOCKING:  # blocking launches: the op that failed raises
        check_pending()
