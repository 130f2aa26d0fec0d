"""A caching allocator: freed buffers go to a pool keyed by rounded size and are reused.

Reuse is safe without synchronisation because every device has one in-order queue: a kernel that
used a buffer is enqueued before any kernel that receives the recycled buffer.
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


class CachingAllocator:
    def __init__(self, context, owner):
        self.context = context
        self.owner = owner  # the CLDevice, for error messages
        self.pool: dict[int, list] = defaultdict(list)
        self.allocated = 0  # bytes held by live tensors
        self.peak = 0
        self.cached = 0  # bytes sitting in the pool
        self.live_buffers = 0  # OpenCL buffer objects in existence (live or cached)

    def malloc(self, nbytes: int):
        """Return (buffer, rounded size). ``nbytes`` must be positive: OpenCL has no empty buffers."""
        size = round_size(nbytes)
        bucket = self.pool.get(size)
        if bucket:
            buf = bucket.pop()
            self.cached -= size
        else:
            buf = self._create(size)
        self.allocated += size
        self.peak = max(self.peak, self.allocated)
        return buf, size

    def free(self, buf, size: int) -> None:
        self.allocated -= size
        self.cached += size
        self.pool[size].append(buf)

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
