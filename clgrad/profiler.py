"""``clgrad.profiler``: which kernels ran, how often, and for how long on the device, like ``torch.profiler``.

    with clgrad.profiler.profile() as prof:
        with clgrad.profiler.record_function("step"):
            loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")   # open in chrome://tracing or https://ui.perfetto.dev

While a profile is active every OpenCL device's queue records event timestamps and every kernel launch reports
its event (see ``programs.RecordedKernel``); the device times are read once, when the profile ends, so profiling
never synchronizes inside the profiled code. CPU time of a kernel row is the host time spent enqueueing it.
Transfers (``.to()``, ``.item()``) are not recorded. Times in the averages are microseconds, as in torch.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

from .backends.opencl import programs, runtime

__all__ = ["profile", "record_function", "ProfilerActivity"]

_active: profile | None = None


class ProfilerActivity:
    """Accepted for torch compatibility: clgrad always records host ranges and OpenCL kernels."""

    CPU = "cpu"
    OPENCL = "opencl"
    CUDA = "opencl"


@dataclass
class Event:
    """One kernel launch or ``record_function`` range. Host times are ``perf_counter_ns``; device times are the
    device clock's nanoseconds (None when the event had no timestamps)."""

    name: str
    kind: str  # "kernel" or "range"
    host_start: int
    host_end: int
    device: str = "cpu"
    thread: int = 0
    event: object = None  # the pyopencl Event, until the profile ends
    device_start: int | None = None
    device_end: int | None = None
    device_queued: int | None = None
    ranges: tuple = ()  # indices of the record_function ranges open at launch
    device_total: int = 0  # for a range: device ns of the kernels launched inside it

    @property
    def device_ns(self) -> int:
        if self.kind == "range":
            return self.device_total
        return 0 if self.device_start is None else self.device_end - self.device_start


@dataclass
class FunctionEventAvg:
    """One row of ``key_averages()``: every event of one name. Times in microseconds, as torch reports them."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    device_time_total: float = 0.0
    missing_device_times: int = 0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        return self.device_time_total / max(self.count, 1)

    # torch spells these with "cuda"
    cuda_time_total = property(lambda self: self.device_time_total)
    cuda_time = property(lambda self: self.device_time)


_SORT_KEYS = {
    "device_time_total": "device_time_total", "cuda_time_total": "device_time_total",
    "self_device_time_total": "device_time_total", "self_cuda_time_total": "device_time_total",
    "device_time": "device_time", "cuda_time": "device_time",
    "cpu_time_total": "cpu_time_total", "self_cpu_time_total": "cpu_time_total", "cpu_time": "cpu_time",
    "count": "count",
}


class EventList(list):
    """``key_averages()``'s rows; ``table()`` prints them like torch.profiler. CPU percentages are of the
    profile's wall time, device percentages of the summed kernel time."""

    wall_us: float = 0.0

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55) -> str:
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"invalid sort_by {sort_by!r}; expected one of {sorted(_SORT_KEYS)}")
            attr = _SORT_KEYS[sort_by]
            rows.sort(key=lambda r: getattr(r, attr), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        kernels = [r for r in self if not r.key.startswith("## ")]  # ranges would count their kernels twice
        cpu_all = self.wall_us or sum(r.cpu_time_total for r in kernels) or 1.0
        dev_all = sum(r.device_time_total for r in kernels) or 1.0
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows])
        heads = ["CPU total %", "CPU total", "CPU time avg", "Device total %", "Device total", "Device time avg",
                 "# of Calls"]
        rule = "-" * width + "".join("  " + "-" * max(len(h), 12) for h in heads)
        lines = [rule, f"{'Name':>{width}}" + "".join(f"  {h:>{max(len(h), 12)}}" for h in heads), rule]
        for r in rows:
            cells = [f"{100 * r.cpu_time_total / cpu_all:.2f}%", _fmt(r.cpu_time_total), _fmt(r.cpu_time),
                     f"{100 * r.device_time_total / dev_all:.2f}%", _fmt(r.device_time_total), _fmt(r.device_time),
                     str(r.count)]
            name = r.key if len(r.key) <= width else r.key[: width - 3] + "..."
            lines.append(f"{name:>{width}}" + "".join(f"  {c:>{max(len(h), 12)}}" for c, h in zip(cells, heads)))
        lines.append(rule)
        lines.append(f"Self CPU time total: {_fmt(sum(r.cpu_time_total for r in kernels))}")
        lines.append(f"Self device time total: {_fmt(sum(r.device_time_total for r in kernels))}")
        missing = sum(r.missing_device_times for r in self)
        if missing:
            lines.append(f"({missing} launches had no device timestamps)")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.table()


def _fmt(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class profile:  # noqa: N801  (torch's name)
    """Record kernel launches (with device event times) and ``record_function`` ranges while active.

    ``activities``, ``record_shapes``, ``profile_memory`` and ``with_stack`` are accepted for torch
    compatibility; clgrad always records both host ranges and OpenCL kernels."""

    def __init__(self, *, activities=None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, enabled: bool = True):
        self.enabled = enabled
        self._events: list[Event] = []
        self._open: list[int] = []  # indices of the ranges open now
        self._started = self._stopped = 0

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        global _active
        if not self.enabled:
            return
        if _active is not None:
            raise RuntimeError("Profiler is already enabled: profiles cannot be nested")
        _active = self
        self._started = time.perf_counter_ns()
        for dev in runtime.devices():
            dev.set_profiling(True)
        programs.set_recorder(self._record_kernel)

    def stop(self) -> None:
        global _active
        if _active is not self:
            return
        programs.set_recorder(None)
        self._stopped = time.perf_counter_ns()
        try:
            for dev in runtime.devices():
                if dev._queue is not None:
                    dev.queue.finish()  # the events' timestamps are final once their queue drained
            self._resolve()
        finally:
            _active = None
            for dev in runtime.devices():
                dev.set_profiling(False)
            programs.invalidate()

    def _record_kernel(self, name: str, dev, event, start: int, end: int) -> None:
        self._events.append(Event(name, "kernel", start, end, f"opencl:{dev.index}", threading.get_ident(),
                                  event, ranges=tuple(self._open)))

    def _resolve(self) -> None:
        """Read every launch's device timestamps and add them to the ranges they ran in."""
        for ev in self._events:
            if ev.event is None:
                continue
            try:
                info = ev.event.profile
                ev.device_queued, ev.device_start, ev.device_end = info.queued, info.start, info.end
            except Exception:  # launched on a queue without timestamps (a launcher cached before the profile)
                pass
            ev.event = None
            for i in ev.ranges:
                self._events[i].device_total += ev.device_ns

    def events(self) -> list[Event]:
        """Every recorded kernel launch and range, in the order they started."""
        return sorted(self._events, key=lambda e: e.host_start)

    def key_averages(self) -> EventList:
        """One row per name: calls, CPU and device time totals. Ranges are listed as ``## name ##``."""
        rows: dict[str, FunctionEventAvg] = {}
        for ev in self._events:
            key = ev.name if ev.kind == "kernel" else f"## {ev.name} ##"
            row = rows.setdefault(key, FunctionEventAvg(key))
            row.count += 1
            row.cpu_time_total += (ev.host_end - ev.host_start) / 1e3
            row.device_time_total += ev.device_ns / 1e3
            row.missing_device_times += ev.kind == "kernel" and ev.device_start is None
        averages = EventList(rows.values())
        averages.wall_us = (self._stopped - self._started) / 1e3
        return averages

    def export_chrome_trace(self, path: str) -> None:
        """Write the events in Chrome's trace format: host launches and ranges on one track per thread,
        kernels on one track per device (device clocks aligned to the host's at enqueue)."""
        offsets = _clock_offsets(self._events)
        trace = []
        for ev in self.events():
            trace.append({"name": ev.name, "ph": "X", "cat": "cpu_op" if ev.kind == "kernel" else "user_annotation",
                          "ts": (ev.host_start - self._started) / 1e3, "dur": (ev.host_end - ev.host_start) / 1e3,
                          "pid": "host", "tid": ev.thread})
            if ev.kind == "kernel" and ev.device_start is not None:
                start = ev.device_start + offsets[ev.device] - self._started
                trace.append({"name": ev.name, "ph": "X", "cat": "kernel", "ts": start / 1e3,
                              "dur": (ev.device_end - ev.device_start) / 1e3, "pid": ev.device, "tid": "queue"})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


def _clock_offsets(events) -> dict:
    """Per device, host ns minus device ns: each launch was queued between its host start and end, so the
    median of those midpoints maps the device clock onto the host's."""
    spans: dict[str, list] = {}
    for ev in events:
        if ev.kind == "kernel" and ev.device_queued is not None:
            spans.setdefault(ev.device, []).append((ev.host_start + ev.host_end) // 2 - ev.device_queued)
    return {d: sorted(v)[len(v) // 2] for d, v in spans.items()}



class record_function:  # noqa: N801  (torch's name)
    """Label a region: ``with record_function("forward"): ...``; it appears in the table as ``## forward ##``
    with its wall time as CPU total and the device time of the kernels launched inside it."""

    def __init__(self, name: str):
        self.name = name
        self._index = None

    def __enter__(self) -> record_function:
        prof = _active
        if prof is not None:
            self._index = len(prof._events)
            now = time.perf_counter_ns()
            prof._events.append(Event(self.name, "range", now, now, thread=threading.get_ident()))
            prof._open.append(self._index)
        return self

    def __exit__(self, *exc) -> None:
        prof = _active
        if prof is not None and self._index is not None and self._index in prof._open:
            prof._events[self._index].host_end = time.perf_counter_ns()
            prof._open.remove(self._index)
