"""``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, as torch.multiprocessing does.

A child that raises writes its traceback to a file its parent reads, and ``ProcessContext.join`` raises it in the
parent as a ``ProcessRaisedException`` (a child killed or exiting non-zero: ``ProcessExitedException``), after
terminating the other children.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import traceback


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A child process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i: int, args: tuple, error_file: str) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is handling it
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started; ``join()`` waits and re-raises a child's failure."""

    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the processes; True once all exited cleanly. Raises when one
        failed (the others are terminated first)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            if not self.sentinels:
                self._remove_files()
            return not self.sentinels
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        self._raise(failed)

    def _remove_files(self) -> None:
        for path in self.error_files:
            if os.path.exists(path):
                os.unlink(path)

    def _raise(self, index: int):
        process, path = self.processes[index], self.error_files[index]
        text = ""
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        self._remove_files()
        if text:
            raise ProcessRaisedException(f"\n\n-- Process {index} terminated with the following error:\n{text}",
                                         index, process.pid)
        code = process.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {index} terminated with signal {name}", index, process.pid,
                                         code, name)
        raise ProcessExitedException(f"process {index} terminated with exit code {code}", index, process.pid, code)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; join them unless ``join`` is
    False, in which case the ProcessContext is returned."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="clgrad-spawn-", suffix=".err")
        os.close(fd)
        process = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """``clgrad.multiprocessing.spawn(train, args=(model,), nprocs=2)``: torch's spawn (``fn`` gets the process
    index first)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
