"""Tests for the Philox4x32-10 stream: numpy reference and OpenCL kernel."""

from __future__ import annotations

import os

import numpy as np
import pytest
from mako.lookup import TemplateLookup

from clgrad.backends import philox

SEED = 2**40 + 123
OFFSET = 2**32 - 3  # the counters of a request cross the 32-bit boundary
SIZES = (0, 1, 7, 1000, 4099)
SMALL_LOCAL = 16


# Parameters (p0, p1) per distribution and dtype.
def _params(dist: str, dtype_name: str):
    if dist == "uniform":
        return (-1.5, 2.25)
    if dist == "normal":
        return (0.5, 2.0)
    if dist == "bernoulli":
        return (0.3, 0.0)
    # randint: keep inside the range of the output type (int8 is the smallest)
    return (-7, 100) if dtype_name != "uint8" else (3, 250)


CASES = [
    (dist, dt) for dist, dtypes in philox.SUPPORTED_DTYPES.items() for dt in dtypes
]


# --------------------------------------------------------------------------
# Philox block function: Random123 known-answer tests (kat_vectors)
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ctr, key, expected",
    [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        (
            (0xFFFFFFFF,) * 4,
            (0xFFFFFFFF,) * 2,
            (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
        ),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox_kat(ctr, key, expected):
    # Scalars (0-d) and vectorised arrays must both give the published answer.
    out = philox.philox4x32_words(*ctr, *key)
    assert tuple(int(w) for w in out) == expected
    arrays = [np.full(5, c, dtype=np.uint32) for c in ctr]
    out = philox.philox4x32_words(*arrays, *key)
    for w, e in zip(out, expected):
        assert w.dtype == np.uint32 and w.shape == (5,)
        assert (w == e).all()


def test_philox4x32_counter_layout():
    seed = 0x299F31D0A4093822
    ctr = np.array(
        [0, 2**32 - 1, 2**32, 2**64 - 1, 0x85A308D3243F6A88], dtype=np.uint64
    )
    got = philox.philox4x32(ctr, seed)
    lo = (ctr & 0xFFFFFFFF).astype(np.uint32)
    hi = (ctr >> 32).astype(np.uint32)
    want = philox.philox4x32_words(lo, hi, 0, 0, 0xA4093822, 0x299F31D0)
    for g, w in zip(got, want):
        assert g.dtype == np.uint32 and g.shape == ctr.shape
        np.testing.assert_array_equal(g, w)


def test_sample_is_a_pure_function_of_counter():
    # A request is the concatenation of smaller requests at advanced offsets,
    # including across the 2**64 wrap-around.
    for offset in (OFFSET, 2**64 - 5):
        whole = philox.sample("randint", "int64", 20, SEED, offset, 0, 2**62)
        parts = [
            philox.sample("randint", "int64", 10, SEED, (offset + k) % 2**64, 0, 2**62)
            for k in (0, 10)
        ]
        np.testing.assert_array_equal(whole, np.concatenate(parts))
    a = philox.sample("uniform", "float32", 100, SEED, 0, 0.0, 1.0)
    b = philox.sample("uniform", "float32", 100, SEED + 1, 0, 0.0, 1.0)
    assert (a != b).mean() > 0.9


@pytest.mark.parametrize("dist, dtype_name", CASES)
def test_sample_dtype_and_shape(dist, dtype_name):
    out = philox.sample(dist, dtype_name, 7, SEED, OFFSET, *_params(dist, dtype_name))
    assert out.shape == (7,)
    assert out.dtype == np.dtype(dtype_name)
    assert philox.sample(
        dist, dtype_name, 0, SEED, OFFSET, *_params(dist, dtype_name)
    ).shape == (0,)


def test_sample_rejects_bad_arguments():
    with pytest.raises(ValueError):
        philox.sample("uniform", "int32", 3, 0, 0, 0.0, 1.0)
    with pytest.raises(ValueError):
        philox.sample("poisson", "float32", 3, 0, 0, 0.0, 1.0)
    with pytest.raises(ValueError):
        philox.sample("randint", "int32", 3, 0, 0, 5, 5)
    with pytest.raises(ValueError):
        philox.kernel_params("normal", "bool")


# --------------------------------------------------------------------------
# Statistical sanity of the reference stream
# --------------------------------------------------------------------------
N_STAT = 100_000


@pytest.mark.parametrize("dtype_name", ["float16", "float32", "float64"])
def test_uniform_stats(dtype_name):
    u = philox.sample("uniform", dtype_name, N_STAT, SEED, OFFSET, 0.0, 1.0).astype(
        np.float64
    )
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    assert abs(u.var() - 1 / 12) < 0.005
    hist, _ = np.histogram(u, bins=10, range=(0.0, 1.0))
    assert (abs(hist - N_STAT / 10) < 0.05 * N_STAT / 10).all()


@pytest.mark.parametrize("dtype_name", ["float16", "float32", "float64"])
def test_normal_stats(dtype_name):
    z = philox.sample("normal", dtype_name, N_STAT, SEED, OFFSET, 0.0, 1.0).astype(
        np.float64
    )
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.02
    assert abs(z.std() - 1.0) < 0.02
    assert abs((np.abs(z) < 1.0).mean() - 0.6827) < 0.01
    y = philox.sample("normal", dtype_name, N_STAT, SEED, OFFSET, 3.0, 0.5).astype(
        np.float64
    )
    assert abs(y.mean() - 3.0) < 0.01 and abs(y.std() - 0.5) < 0.01


@pytest.mark.parametrize(
    "dtype_name", ["uint8", "int8", "int16", "int32", "int64", "float32"]
)
def test_randint_stats(dtype_name):
    low, high = _params("randint", dtype_name)
    r = philox.sample("randint", dtype_name, N_STAT, SEED, OFFSET, low, high).astype(
        np.int64
    )
    assert r.min() == low and r.max() == high - 1  # covers [low, high), never high
    counts = np.bincount(r - low, minlength=high - low)
    assert len(counts) == high - low
    expected = N_STAT / (high - low)
    assert (abs(counts - expected) < 6 * np.sqrt(expected)).all()


def test_randint_extreme_bounds():
    lo, hi = -(2**63), 2**63 - 1
    r = philox.sample("randint", "int64", N_STAT, SEED, OFFSET, lo, hi)
    assert r.dtype == np.int64
    assert (r < 0).mean() == pytest.approx(0.5, abs=0.01)
    r = philox.sample("randint", "int64", 1000, SEED, OFFSET, 2**62, 2**62 + 2)
    assert set(r.tolist()) == {2**62, 2**62 + 1}


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli_stats(p):
    b = philox.sample("bernoulli", "bool", N_STAT, SEED, OFFSET, p, 0.0)
    assert b.dtype == np.bool_
    assert abs(b.mean() - p) < 0.01


# --------------------------------------------------------------------------
# OpenCL kernel == numpy reference
# --------------------------------------------------------------------------
_PROBE_SRC = "__kernel void probe(__global int *a) { a[get_global_id(0)] = 1; }"


def _probe(device) -> str | None:
    """None if ``device`` can build a trivial kernel, else the reason it cannot.

    Some installs expose devices that cannot compile anything, e.g. PoCL 3.0
    (LLVM 14) on CPUs LLVM 14 does not know fails every build with
    "unknown target CPU 'generic'".
    """
    import pyopencl as cl

    try:
        cl.Program(cl.Context([device]), _PROBE_SRC).build()
    except cl.Error as exc:
        lines = [ln for ln in str(exc).splitlines() if "error" in ln.lower()]
        return (lines[0] if lines else type(exc).__name__).strip()
    return None


def _devices() -> list:
    """(device, skip_reason) for every OpenCL device worth testing on.

    Oclgrind (a simulator) is slow, so it is only used with
    CLGRAD_TEST_OCLGRIND=1, or as a fallback when no other device can build
    kernels (so the kernel is always checked somewhere); CLGRAD_TEST_OCLGRIND=0
    disables it entirely.
    """
    try:
        import pyopencl as cl
    except ImportError:
        return []
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD loader / no platform
        return []
    real, sims = [], []
    for plat in platforms:
        try:
            devs = plat.get_devices()
        except cl.Error:  # e.g. DEVICE_NOT_FOUND
            devs = []
        for dev in devs:
            entry = (dev, _probe(dev))
            (sims if "oclgrind" in plat.name.lower() else real).append(entry)
    oclgrind = os.environ.get("CLGRAD_TEST_OCLGRIND")
    any_real_works = any(reason is None for _, reason in real)
    if oclgrind == "1" or (oclgrind != "0" and not any_real_works):
        return real + sims
    return real


DEVICES = _devices()


@pytest.fixture(
    scope="module",
    params=DEVICES or [(None, "no OpenCL device available")],
    ids=lambda d: d[0].name.strip() if d[0] is not None else "none",
)
def cl_queue(request):
    device, reason = request.param
    if reason is not None:
        pytest.skip(f"OpenCL device unusable: {reason}")
    import pyopencl as cl

    return cl.CommandQueue(cl.Context([device]))


def _render(dist: str, dtype_name: str) -> str:
    # a lookup, so the template finds the prelude it includes
    lookup = TemplateLookup(directories=[str(philox.KERNEL_TEMPLATE.parent)], strict_undefined=True)
    template = lookup.get_template(philox.KERNEL_TEMPLATE.name)
    return template.render(
        name=f"rand_{dist}_{dtype_name}", **philox.kernel_params(dist, dtype_name)
    )


def _run_kernel(
    queue, kernel, dist, dtype_name, n, seed, offset, p0, p1, local_size, out_offset=3
):
    import pyopencl as cl

    np_dtype = np.dtype(dtype_name)
    sentinel = np.full(out_offset + n + 2, 42, dtype=np_dtype)  # guard both ends
    buf = cl.Buffer(
        queue.context,
        cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
        hostbuf=sentinel,
    )
    if local_size is None:
        global_size, local = (n,), None
    else:
        global_size, local = (-(-n // local_size) * local_size,), (local_size,)
    kernel(
        queue,
        global_size,
        local,
        buf,
        out_offset,
        n,
        seed & 0xFFFFFFFF,
        seed >> 32,
        offset,
        p0,
        p1,
    )
    res = np.empty_like(sentinel)
    cl.enqueue_copy(queue, res, buf)
    np.testing.assert_array_equal(res[:out_offset], sentinel[:out_offset])
    np.testing.assert_array_equal(res[out_offset + n :], sentinel[out_offset + n :])
    return res[out_offset : out_offset + n]


@pytest.mark.parametrize("dist, dtype_name", CASES)
def test_kernel_matches_reference(cl_queue, dist, dtype_name):
    import pyopencl as cl

    device = cl_queue.device
    if dtype_name == "float64" and "cl_khr_fp64" not in device.extensions:
        pytest.skip("device has no fp64")
    src = _render(dist, dtype_name)
    assert ("cl_khr_fp64" in src) == (dtype_name == "float64")
    prg = cl.Program(cl_queue.context, src).build()
    kernel = getattr(prg, f"rand_{dist}_{dtype_name}")
    kernel.set_scalar_arg_dtypes(philox.scalar_arg_dtypes(dist, dtype_name))
    p0, p1 = _params(dist, dtype_name)

    for n in SIZES:
        want = philox.sample(dist, dtype_name, n, SEED, OFFSET, p0, p1)
        if n == 0:
            assert want.shape == (0,)
            continue  # zero-size launches are invalid in OpenCL
        for local_size in (None, SMALL_LOCAL):
            got = _run_kernel(
                cl_queue, kernel, dist, dtype_name, n, SEED, OFFSET, p0, p1, local_size
            )
            if dist == "normal":
                # transcendental functions may differ by a few ulps per device;
                # for float16 that can flip the final rounding by one half-ulp.
                rtol, atol = {
                    "float16": (2e-3, 2e-3),
                    "bfloat16": (1.6e-2, 1.6e-2),
                    "float32": (1e-5, 1e-5),
                    "float64": (1e-12, 1e-12),
                }[dtype_name]
                np.testing.assert_allclose(
                    got.astype(np.float64),
                    want.astype(np.float64),
                    rtol=rtol,
                    atol=atol,
                )
            else:
                # bit-identical (compare raw bits so that -0.0 != 0.0 etc.)
                np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize(
    "dist, dtype_name, p0, p1",
    [
        (
            "randint",
            "int64",
            -(2**63),
            2**63 - 1,
        ),  # span 2**64 - 1: ulong modulo, wrapping add
        ("randint", "int64", 2**62, 2**62 + 3),
        ("uniform", "float32", 1e30, 3e38),  # large values: no fma anywhere
        ("uniform", "float64", -1e300, 1e300),
    ],
)
def test_kernel_extreme_params(cl_queue, dist, dtype_name, p0, p1):
    import pyopencl as cl

    if dtype_name == "float64" and "cl_khr_fp64" not in cl_queue.device.extensions:
        pytest.skip("device has no fp64")
    prg = cl.Program(cl_queue.context, _render(dist, dtype_name)).build()
    kernel = getattr(prg, f"rand_{dist}_{dtype_name}")
    kernel.set_scalar_arg_dtypes(philox.scalar_arg_dtypes(dist, dtype_name))
    for seed, offset in (
        (SEED, OFFSET),
        (2**64 - 1, 2**64 - 500),
    ):  # offset wraps mod 2**64
        want = philox.sample(dist, dtype_name, 1000, seed, offset, p0, p1)
        got = _run_kernel(
            cl_queue, kernel, dist, dtype_name, 1000, seed, offset, p0, p1, SMALL_LOCAL
        )
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_kernel_params_and_arg_dtypes():
    assert philox.kernel_params("uniform", "float16") == {
        "dist": "uniform",
        "out_ctype": "half",
        "out_dtype": "float16",
        "param_ctype": "float",
        "fp64": False,
    }
    assert philox.kernel_params("normal", "float64")["param_ctype"] == "double"
    assert philox.kernel_params("randint", "float32")["param_ctype"] == "long"
    assert philox.kernel_params("bernoulli", "float64")["param_ctype"] == "float"
    assert philox.kernel_params("bernoulli", "bool")["out_ctype"] == "uchar"
    assert philox.scalar_arg_dtypes("randint", "int8") == [
        None,
        np.int64,
        np.int64,
        np.uint32,
        np.uint32,
        np.uint64,
        np.int64,
        np.int64,
    ]
    assert philox.scalar_arg_dtypes("uniform", "float64")[-1] is np.float64
    assert philox.scalar_arg_dtypes("bernoulli", "float64")[-1] is np.float32
