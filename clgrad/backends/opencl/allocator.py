"""A caching allocator: freed buffers go to a pool keyed by rounded size and are reused.

Reuse is safe without synchronisation because every device has one in-order queue: a kernel that
used a buffer is enqueued before any kernel that receives the recycled buffer.

A captured graph (capture.py) owns a private ``GraphPool``: while it captures, allocations come from it and every
buffer freed goes to it; afterwards the buffers its launches use stay its own (freed ones wait in its pool, since a
replay writes them) until ``release_pool`` gives them back.
"""
from __future__ import annotations

from collections import defaultdict


class OutOfMemoryError(RuntimeError):
    """An OpenCL allocation failed even after the allocator's cache was emptied."""


def round_size(nbytes: int) -> int:
    """Round up to 512 bytes, and large sizes to a quarter of their power of two (<= 25% waste)."""
    if nbytes <= 512:
        return 512
    step = max(512, 1 << (nbytes.bit_length() - 3))
    return -(-nbytes // step) * step


class GraphPool:
    """The buffers one graph (or several sharing the pool) owns: free ones by size, and how many graphs use it."""

    def __init__(self):
        self.free: dict[int, list] = defaultdict(list)
        self.owned: dict = {}  # id(buffer) -> (buffer, size)
        self.users = 0


class CachingAllocator:
    def __init__(self, context, owner):
        self.context = context
        self.owner = owner  # the CLDevice, for error messages
        self.pool: dict[int, list] = defaultdict(list)
        self.allocated = 0  # bytes held by live tensors
        self.peak = 0
        self.cached = 0  # bytes sitting in the pool
        self.live_buffers = 0  # OpenCL buffer objects in existence (live or cached)
        self.capturing: GraphPool | None = None  # the pool of the graph being captured
        self.owners: dict = {}  # id(buffer) -> the GraphPool that owns it

    def malloc(self, nbytes: int):
        """Return (buffer, rounded size). ``nbytes`` must be positive: OpenCL has no empty buffers."""
        size = round_size(nbytes)
        graph = self.capturing
        bucket = graph.free.get(size) if graph is not None else None
        if bucket:
            self.allocated += size
            return bucket.pop(), size
        bucket = self.pool.get(size)
        if bucket:
            buf = bucket.pop()
            self.cached -= size
        else:
            buf = self._create(size)
        self.allocated += size
        self.peak = max(self.peak, self.allocated)
        if graph is not None:
            self.adopt(graph, buf, size)
        return buf, size

    def maker(self, nbytes: int, wrap):
        """A function returning ``wrap(buffer, free)`` for a new buffer of ``nbytes`` (positive) each call, ``free()``
        giving it back: a cached elementwise plan's allocation, with the size rounded once and, outside a capture,
        a pooled buffer taken straight from its bucket."""
        size = round_size(nbytes)
        pool, free, malloc = self.pool, self.free, self.malloc

        def make():
            bucket = pool.get(size)
            if bucket and self.capturing is None:
                buf = bucket.pop()
                self.cached -= size
                self.allocated += size
                if self.allocated > self.peak:
                    self.peak = self.allocated
            else:
                buf = malloc(nbytes)[0]
            return wrap(buf, lambda: free(buf, size))

        return make

    def free(self, buf, size: int) -> None:
        self.allocated -= size
        graph = self.owners.get(id(buf), self.capturing) if self.owners or self.capturing else None
        if graph is not None:  # a graph's buffer (or one freed during a capture): only that graph reuses it
            self.adopt(graph, buf, size)
            graph.free[size].append(buf)
            return
        self.cached += size
        self.pool[size].append(buf)

    def adopt(self, graph: GraphPool, buf, size: int) -> None:
        """Make ``buf`` ``graph``'s: once freed, it goes back to that graph's pool."""
        if id(buf) not in self.owners:  # a buffer another graph owns stays that graph's
            graph.owned[id(buf)] = (buf, size)
            self.owners[id(buf)] = graph

    def release_pool(self, graph: GraphPool) -> None:
        """Give ``graph``'s buffers back: free ones to the shared pool, live ones to their tensors (freed as usual)."""
        for size, bucket in graph.free.items():
            self.pool[size] += bucket
            self.cached += size * len(bucket)
        for key in graph.owned:
            if self.owners.get(key) is graph:
                del self.owners[key]
        graph.free.clear()
        graph.owned.clear()

    def empty_cache(self) -> None:
        for bucket in self.pool.values():
            for buf in bucket:
                buf.release()
                self.live_buffers -= 1
        self.pool.clear()
        self.cached = 0

    def _create(self, size: int):
        import pyopencl as cl

        props = self.owner.props
        if size > props.max_alloc:
            raise OutOfMemoryError(self._message(size, f"larger than the device's maximum single allocation of {props.max_alloc} bytes"))
        for attempt in range(2):
            try:
                buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size)
                self.live_buffers += 1
                return buf
            except (cl.MemoryError, cl.RuntimeError) as exc:
                if attempt == 0:
                    self.empty_cache()
                    continue
                raise OutOfMemoryError(self._message(size, str(exc))) from None
        raise AssertionError("unreachable")

    def _message(self, size: int, why: str) -> str:
        return (
            f"OpenCL out of memory on opencl:{self.owner.index} ({self.owner.props.name}): tried to allocate "
            f"{size} bytes ({why}); {self.allocated} bytes are in use by tensors and {self.cached} cached. "
            "Free tensors you no longer need, use smaller batches, or call clgrad.opencl.empty_cache()."
        )
