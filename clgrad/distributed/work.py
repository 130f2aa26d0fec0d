"""``Work``: the handle of a collective in flight, over nonblocking MPI requests.

Every collective runs as a nonblocking MPI call; a blocking one is simply waited on at once. Waiting
polls the requests (MPI progresses them while it is asked) with a short back-off instead of blocking
inside MPI, so a rank whose peers never arrive raises a timeout error that names the operation rather
than hanging forever, and idle ranks don't spin a shared core at 100%.
"""
from __future__ import annotations

import time
from datetime import timedelta

from .process_group import ProcessGroup, _mpi

_MAX_SLEEP = 1e-3  # polling latency ceiling; MPI's own latency on one node is ~1 us, so the first polls hit


class Work:
    """What ``async_op=True`` returns: ``wait()`` blocks until the results are in the tensors,
    ``is_completed()`` asks without blocking.

        >>> work = dist.all_reduce(t, async_op=True)
        >>> ...                                     # overlap other work
        >>> work.wait()
    """

    def __init__(self, requests, finish, pg: ProcessGroup, what: str, outputs=(), statuses=None):
        self._requests = list(requests)
        self._statuses = statuses  # filled in on completion (a receive reads its sender from them)
        self._finish = finish  # copies host results into the tensors; runs once, on completion
        self._pg = pg
        self._what = what
        self._outputs = list(outputs)
        self._done = False

    def is_completed(self) -> bool:
        if not self._done and self._test():
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self._done

    def exception(self):
        return None

    def result(self) -> list:
        """The output tensors (valid after ``wait``)."""
        return list(self._outputs)

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until done; raise RuntimeError after ``timeout`` (the group's timeout when None)."""
        if self._done:
            return True
        limit = (timeout or self._pg.timeout).total_seconds()
        deadline = time.monotonic() + limit
        delay = 0.0
        while not self._test():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self._what} timed out after {limit:g} s on rank {self._pg.rank()} of {self._pg.size()}: some "
                    "rank never joined it (it failed, is stuck, or took a different path through the program)")
            if delay:
                time.sleep(delay)
            delay = min(2 * delay or 2e-5, _MAX_SLEEP)
        self._complete()
        return True

    synchronize = wait

    def _test(self) -> bool:
        MPI = _mpi()
        try:
            if self._statuses is None:
                return MPI.Request.Testall(self._requests)
            return MPI.Request.Testall(self._requests, self._statuses)
        except MPI.Exception as exc:
            raise RuntimeError(f"{self._what} failed: {exc.Get_error_string()}") from None

    def _complete(self) -> None:
        self._done = True
        finish, self._finish, self._requests = self._finish, None, []
        if finish is not None:
            finish()

    def __repr__(self) -> str:
        return f"<Work {self._what} {'completed' if self._done else 'pending'}>"
