"""Elementwise ops with a transposed operand: on PoCL and the simulator the grid kernel reads it through a local
memory tile (``backends/opencl/elementwise.py``: ``_tile_side``, ``_tiled``); elsewhere through the gather. Every
case compares with numpy exactly (the ops copy the arithmetic), over tile tails, shapes too short for a tile,
broadcast and offset operands, strided outputs, mixed dtypes and batched 3-D views.

The ``oclgrind`` subset has the simulator (tiles of 32) check the tile kernel's accesses and its barrier
(``OCLGRIND_DATA_RACES=1``)."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.backends.opencl import elementwise as ew
from clgrad.backends.opencl import programs, runtime
from tests.conftest import fp64_ok
from tests.helpers import to_numpy

# (rows, columns): whole tiles of 32 and 64, tails in one or both dims, sides shorter than a tile (the gather)
SHAPES = [(64, 64), (128, 192), (100, 70), (65, 129), (70, 33), (33, 40), (40, 33), (64, 1), (1, 64), (70, 3),
          (3, 70), (0, 64)]
SMALL = [(64, 64), (40, 33), (33, 70)]  # the simulator's cases: whole tiles and both tails at its tile of 32


def _t(arr: np.ndarray, device, dtype=None):
    """A clgrad view of ``arr`` whose last two dims are transposed in memory (unit stride down the rows)."""
    base = clgrad.tensor(np.ascontiguousarray(np.swapaxes(arr, -1, -2)), dtype=dtype, device=device)
    return base.transpose(-1, -2)


def _data(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(1, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _equal(t, expected):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape and t.dtype.np == expected.dtype
    np.testing.assert_array_equal(to_numpy(t), expected)


def _tiled_params(device, fn) -> list:
    """The ``tiles`` of every elementwise kernel ``fn`` builds (the launch caches emptied first)."""
    seen = []
    programs.invalidate()
    original = programs.get_kernel

    def recording(dev, template, name, arg_dtypes, params):
        if template == "elementwise":
            seen.append(params["tiles"])
        return original(dev, template, name, arg_dtypes, params)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(programs, "get_kernel", recording)
        fn()
    return seen


def _expects_tiles(device, shape) -> bool:
    if device == "cpu":
        return False
    side = ew._tile_side(runtime.get(int(device.split(":")[1])))
    return side > 0 and min(shape[-2:]) >= side


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_transposed_operand(device, shape):
    a, b, c = _data(shape), _data(shape, seed=1), _data(shape, seed=2)
    ta, cb, cc = _t(a, device), clgrad.tensor(b, device=device), clgrad.tensor(c, device=device)
    tiles = _tiled_params(device, lambda: _equal(ta * cb, a * b))
    assert any(tiles) == _expects_tiles(device, shape)
    _equal(ta * cb + cc, a * b + c)
    _equal(cb - ta, b - a)
    _equal(ta + _t(b, device), a + b)  # two operands through tiles
    _equal(clgrad.maximum(ta, 0.5), np.maximum(a, np.float32(0.5)))  # a scalar beside the tile


@pytest.mark.oclgrind
@pytest.mark.parametrize("shape", SMALL, ids=str)
def test_transposed_operand_checked(device, shape):
    """The simulator's subset: two tiled operands, a broadcast row, a strided output and an integer division
    kernel (its zero-divisor check) over whole tiles and tails."""
    a, b, row = _data(shape), _data(shape, seed=1), _data(shape[-1:], seed=2)
    ta, tb, crow = _t(a, device), _t(b, device), clgrad.tensor(row, device=device)
    tiles = _tiled_params(device, lambda: _equal(ta * tb - crow, a * b - row))
    assert any(tiles) == _expects_tiles(device, shape)
    base = clgrad.zeros(shape[0], shape[1] + 5, device=device)
    clgrad.add(ta, clgrad.tensor(b, device=device), out=base[:, 2:-3])  # rows apart: the output is not contiguous
    _equal(base[:, 2:-3], a + b)
    ia, ib = _data(shape, "int32"), _data(shape, "int32", seed=3)
    _equal(_t(ia, device) // clgrad.tensor(ib, device=device), ia // ib)


def test_broadcast_and_offset_operands(device):
    shape = (3, 100, 70)
    a2, b, col = _data(shape[1:]), _data(shape, seed=1), _data((shape[1], 1), seed=2)
    # a transposed matrix broadcast over the batch (stride 0 on dim 0) and a broadcast column (stride 0 across)
    _equal(_t(a2, device) * clgrad.tensor(b, device=device) + clgrad.tensor(col, device=device), a2 * b + col)
    # a transposed view at an offset into a bigger buffer
    big = _data((80, 110), seed=3)
    view = clgrad.tensor(big, device=device)[5:75, 7:107].T  # (100, 70), strides (1, 110), offset 557
    assert not view.is_contiguous()
    _equal(view * clgrad.tensor(b[0], device=device), big[5:75, 7:107].T * b[0])


@pytest.mark.parametrize("shape", [(100, 70), (64, 128)], ids=str)
def test_strided_outputs(device, shape):
    a, b = _data(shape), _data(shape, seed=1)
    ta, cb = _t(a, device), clgrad.tensor(b, device=device)
    base = clgrad.zeros(shape[0] + 3, shape[1] + 9, device=device)
    out = base[3:, 4:-5]  # rows at an offset and apart: unit stride across, read through the tile
    tiles = _tiled_params(device, lambda: clgrad.mul(ta, cb, out=out))
    assert any(tiles) == _expects_tiles(device, shape)
    expected = np.zeros((shape[0] + 3, shape[1] + 9), np.float32)
    expected[3:, 4:-5] = a * b
    _equal(base, expected)
    base = clgrad.zeros(shape[0], 2 * shape[1], device=device)
    clgrad.mul(ta, cb, out=base[:, ::2])  # every other column: written across, so the gather groups
    expected = np.zeros((shape[0], 2 * shape[1]), np.float32)
    expected[:, ::2] = a * b
    _equal(base, expected)
    out = clgrad.zeros(shape[::-1], device=device).T  # transposed like the operand: the gather groups too
    clgrad.sub(ta, cb, out=out)
    _equal(out, a - b)


MIXED = [("float16", "float32"), ("float32", "float64"), ("int32", "int64"), ("uint8", "int16"),
         ("float64", "float64"), ("int64", "float32")]


@pytest.mark.parametrize("da,db", MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
def test_mixed_dtypes(device, da, db):
    if "float64" in (da, db) and not fp64_ok(device):
        pytest.skip("no fp64")
    shape = (100, 70)
    a, b = _data(shape, da), _data(shape, db, seed=1)
    ta, cb = _t(a, device), clgrad.tensor(b, device=device)
    got = ta * cb
    dt = got.dtype.np  # PyTorch's promotion (int64 * float32 is float32), both converted first
    _equal(got, a.astype(dt) * b.astype(dt))
    _equal(cb - ta, b.astype(dt) - a.astype(dt))


def test_half_compute_and_bool(device):
    shape = (70, 100)
    h, g = _data(shape, "float16"), _data(shape, "float16", seed=1)
    # float16 computes in float and rounds once: numpy's float16 product rounds the exact product the same way
    expected = (h.astype(np.float32) * g.astype(np.float32)).astype(np.float16)
    _equal(_t(h, device) * clgrad.tensor(g, device=device), expected)
    cond, x, y = _data(shape, "bool", seed=2), _data(shape, seed=3), _data(shape, seed=4)
    _equal(clgrad.where(_t(cond, device), _t(x, device), clgrad.tensor(y, device=device)), np.where(cond, x, y))


@pytest.mark.parametrize("shape", [(3, 70, 65), (2, 64, 64), (4, 2, 100)], ids=str)
def test_batched_transposed_pair(device, shape):
    a, b = _data(shape), _data(shape, seed=1)
    ta, cb = _t(a, device), clgrad.tensor(b, device=device)
    tiles = _tiled_params(device, lambda: _equal(ta * cb, a * b))
    assert any(tiles) == _expects_tiles(device, shape)
    _equal(ta + _t(b, device), a + b)
    # a permuted 3-D view whose last two dims are swapped, the batch dim in the middle of memory
    base = _data((shape[2], shape[0], shape[1]), seed=2)
    view = clgrad.tensor(base, device=device).permute(1, 2, 0)  # strides (n1, 1, n0 * n1)
    _equal(view * cb, base.transpose(1, 2, 0) * b)


def test_compiled_chain(device):
    """``clgrad.compile``'s fused kernels take the tile too: equal to the same function on contiguous copies."""
    shape = (100, 70)
    a, b, c = _data(shape), _data(shape, seed=1), _data(shape, seed=2)
    fma = clgrad.compile(lambda x, y, z: x * y + z)
    cb, cc = clgrad.tensor(b, device=device), clgrad.tensor(c, device=device)
    expected = to_numpy(fma(clgrad.tensor(a, device=device), cb, cc))
    np.testing.assert_array_equal(to_numpy(fma(_t(a, device), cb, cc)), expected)
