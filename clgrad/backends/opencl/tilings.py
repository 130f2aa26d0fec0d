"""The matmul kernel's tilings: the tables per device class, and the tile geometry autotune varies."""
from __future__ import annotations

from typing import NamedTuple

_ACC_SIZE = {"float": 4, "double": 8, "uint": 4, "ulong": 8}


class Tiling(NamedTuple):
    """A tm x tn output tile per work-group, tk-deep local slabs; each work-item owns wm x wn vectors of vw."""

    tm: int
    tn: int
    tk: int
    wm: int
    wn: int
    vw: int

    @property
    def local_size(self) -> tuple:
        return self.tn // (self.wn * self.vw), self.tm // self.wm, 1

    def local_bytes(self, acc: str) -> int:
        pad = 1 if self.vw == 1 else 0
        return (self.tm * (self.tk + pad) + self.tk * (self.tn + pad)) * _ACC_SIZE[acc]


# Per device class, best first; the first whose work-group and local memory fit the device is used.
# GPUs: 16x16 work-items of 4x4 scalars (coalesced loads, conflict-free local reads). CPUs (PoCL runs a
# work-group as a loop over its work-items): 16 work-items, each 8 rows x two 16-wide vectors, so the inner
# loop is 16 independent SIMD FMAs; a deep tk means few barriers, which PoCL pays for by spilling the
# accumulators. On PoCL 3.1 (AVX-512, 2 cores), 1024^2 float32 kernels ran at ~220 GFLOP/s (OpenBLAS ~230),
# one vector per row 5-20% slower (but half the ~2 s build), the GPU tiling 12x slower. tk 32 rather than 64:
# tk 64 took 5-20% less device time on the MNIST and two-layer products and 12% less at 512^2, but its unrolled
# slab loop costs PoCL ~3x the code generation, and tk 32 also serves short-K products (a conv's input
# gradient), so one kernel instead of two: a cold first MNIST step took 19 s with both, 10.5-12.5 s with tk 32.
# The skinny tilings (one output row per work-group) serve products with at most SKINNY_M rows, such as a
# vector times a matrix, where a 64-row tile would compute mostly padding.
TILINGS = {
    "gpu": (Tiling(64, 64, 16, 4, 4, 1), Tiling(32, 32, 16, 2, 2, 1), Tiling(8, 8, 8, 1, 1, 1)),
    "cpu": (Tiling(64, 64, 32, 8, 2, 16), Tiling(32, 32, 16, 4, 1, 16), Tiling(8, 8, 8, 1, 1, 1)),
    "gpu_skinny": (Tiling(1, 128, 32, 1, 1, 1), Tiling(1, 32, 16, 1, 1, 1)),
    # one row: two work-items of one 16-wide vector each, 16 deep, was the fastest on PoCL 3.1 (AMD EPYC) for every
    # product measured, from 1 x 51 x 97 (1.4 against 6.0 us with 1 x 256 x 128) and 1 x 500 x 10 (2.3 against 25
    # us) to 1 x 4096 x 4096 (4.7 against 5.8 ms)
    "cpu_skinny": (Tiling(1, 32, 16, 1, 1, 16), Tiling(1, 256, 128, 1, 2, 16), Tiling(1, 64, 32, 1, 1, 16),
                   Tiling(1, 32, 16, 1, 1, 1)),
    # few rows (a conv's output channels as M, a recurrent layer's batch): a 16x32 tile; measured on PoCL for the
    # MNIST convs, the products took 0.3-0.6 ms instead of 0.9-3.3 ms with the 64-row tile. Against an 8x64 tile
    # it was as fast on the conv forward and recurrent products and 2-5x faster on conv1's batch-summed weight
    # gradient [10, 25]; a 24-row tile was faster on conv2's [20, 250] only. One short tiling, because each
    # matmul kernel is 1-3 s of PoCL code generation in a cold start. One work-item of 16 rows x two vectors
    # (32 accumulators, AVX-512's register count) rather than two of 8 rows: as fast on the MNIST products
    # (AMD EPYC, PoCL 3.1) and 2.1 s of code generation instead of 3.3 s, since a work-group of one work-item
    # needs no work-item loops around its barriers.
    "cpu_short": (Tiling(16, 32, 32, 16, 2, 16), Tiling(8, 32, 16, 8, 1, 16), Tiling(8, 8, 8, 1, 1, 1)),
}
SKINNY_M = 4
SHORT_M = 32  # CPU devices: products with at most this many rows use the "cpu_short" tilings
FEW_TILES = 32  # ... and so do products of at most this many big tiles per compute unit
