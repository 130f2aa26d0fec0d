"""The kernel cache (memory and disk, CLGRAD_NO_CACHE, clear) and the caching allocator
(memory_allocated tracks tensor lifetime, buffers are reused, empty_cache releases)."""
from __future__ import annotations

import gc
import uuid

import numpy as np
import pytest
from mako.lookup import TemplateLookup

import clgrad
from clgrad.backends.opencl import programs, runtime
from clgrad.backends.opencl.allocator import round_size

PROBE = """\
__kernel void ${name}(__global ${ctype} *out) {
    out[get_global_id(0)] = (${ctype})(${value} + get_global_id(0));
}
"""


@pytest.fixture
def cl_dev(device):
    if device == "cpu":
        pytest.skip("OpenCL only")
    return runtime.get(int(device.split(":")[1]))


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A private template directory with ``probe.cl.mako``, and a private disk cache."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "probe.cl.mako").write_text(PROBE)
    monkeypatch.setattr(programs, "_lookup", TemplateLookup(directories=[str(templates)], strict_undefined=True))
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CLGRAD_NO_CACHE", raising=False)
    monkeypatch.setenv("CLGRAD_CACHE_BINARIES", "1")  # PoCL devices skip clgrad's binary cache otherwise
    # a value no earlier run has compiled, so the disk cache starts cold
    return {"ctype": "int", "value": str(uuid.uuid4().int % 100000)}, tmp_path / "cache" / "kernels"


def run_probe(dev, kernel, n=4):
    out = clgrad.empty(n, dtype=clgrad.int32, device=f"opencl:{dev.index}")
    kernel(dev.queue, (n,), None, out._storage.data)
    return out.tolist()


def test_same_kernel_built_once(cl_dev, probe):
    params, _ = probe
    before = dict(programs.stats)
    k1 = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    k2 = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), dict(params))
    assert k1 is k2
    assert programs.stats["builds"] == before["builds"] + 1
    base = int(params["value"])
    assert run_probe(cl_dev, k1) == [base, base + 1, base + 2, base + 3]
    other = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), {**params, "value": str(base + 1)})
    assert other is not k1 and programs.stats["builds"] == before["builds"] + 2


def test_disk_cache_reload(cl_dev, probe):
    params, folder = probe
    k1 = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    binaries = list(folder.glob("*.bin"))
    assert len(binaries) == 1 and binaries[0].stat().st_size > 0
    programs.clear()
    assert not cl_dev.kernels
    before = dict(programs.stats)
    k2 = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    assert k2 is not k1
    assert programs.stats["disk_hits"] == before["disk_hits"] + 1 and programs.stats["builds"] == before["builds"]
    base = int(params["value"])
    assert run_probe(cl_dev, k2) == [base, base + 1, base + 2, base + 3]


def test_corrupt_disk_cache_rebuilds(cl_dev, probe):
    params, folder = probe
    programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    (path,) = folder.glob("*.bin")
    path.write_bytes(b"not a binary")
    programs.clear()
    before = dict(programs.stats)
    k = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    assert programs.stats["builds"] == before["builds"] + 1
    assert run_probe(cl_dev, k)[0] == int(params["value"])
    assert path.read_bytes() != b"not a binary"


def _truncate(data):
    return data[: len(data) // 2]


def _flip_last(data):
    return data[:-1] + bytes([data[-1] ^ 0x40])


def _flip_header(data):
    return data[:20] + bytes([data[20] ^ 1]) + data[21:]


@pytest.mark.parametrize("damage", [_truncate, _flip_last, _flip_header, lambda d: b"", lambda d: d[:10]])
def test_damaged_binary_never_reaches_the_driver(cl_dev, probe, monkeypatch, damage):
    """A truncated or flipped cache entry is a miss: it is rebuilt from source and replaced, and the driver (which
    may abort on a bad binary) never sees it."""
    params, folder = probe
    programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    (path,) = folder.glob("*.bin")
    whole = path.read_bytes()
    assert programs._load(path) is not None
    path.write_bytes(damage(whole))
    assert programs._load(path) is None
    programs.clear()
    before = dict(programs.stats)
    k = programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    assert programs.stats["builds"] == before["builds"] + 1 and programs.stats["disk_hits"] == before["disk_hits"]
    assert run_probe(cl_dev, k)[0] == int(params["value"])
    assert programs._load(path) is not None


def test_no_cache_env(cl_dev, probe, monkeypatch):
    params, folder = probe
    monkeypatch.setenv("CLGRAD_NO_CACHE", "1")
    assert programs.cache_dir() is None
    before = dict(programs.stats)
    programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    programs.clear()
    programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    assert programs.stats["builds"] == before["builds"] + 2 and programs.stats["disk_hits"] == before["disk_hits"]
    assert not folder.exists() or not list(folder.glob("*.bin"))
    monkeypatch.setenv("CLGRAD_NO_CACHE", "0")
    assert programs.cache_dir() is not None


def test_clear_empties_every_device(cl_dev, probe):
    params, _ = probe
    programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    assert cl_dev.kernels
    programs.clear()
    assert all(not d.kernels for d in runtime.devices())


def test_ops_do_not_rebuild(device):
    """Running the same ops again hits the in-memory cache: no build, no disk load."""
    def work():
        x = clgrad.arange(12.0, device=device).view(3, 4)
        y = (x.t() + 1).contiguous()
        y[:, 1] = 5
        return y.tolist()

    first = work()
    before = dict(programs.stats)
    assert work() == first
    assert programs.stats == before


def test_build_error_names_kernel(cl_dev, tmp_path, monkeypatch):
    (tmp_path / "broken.cl.mako").write_text("__kernel void ${name}(__global int *out) { out[0] = nope; }\n")
    monkeypatch.setattr(programs, "_lookup", TemplateLookup(directories=[str(tmp_path)], strict_undefined=True))
    monkeypatch.setenv("CLGRAD_NO_CACHE", "1")
    with pytest.raises(RuntimeError, match="building kernel broken_int failed on opencl:"):
        programs.get_kernel(cl_dev, "broken", "broken_int", (None,), {})


def test_render_passes_every_variable(probe):
    params, _ = probe
    src = programs.render("probe", name="probe_int", **params)
    assert "__kernel void probe_int(__global int *out)" in src
    with pytest.raises(NameError):  # strict_undefined: a variable the caller forgot is an error
        programs.render("probe", name="probe_int", ctype="int")


# ---- allocator ---------------------------------------------------------------------------------


def test_memory_tracks_tensor_lifetime(cl_dev, device):
    gc.collect()
    base = clgrad.opencl.memory_allocated(device)
    t = clgrad.empty(1000, device=device)  # 4000 bytes
    assert clgrad.opencl.memory_allocated(device) == base + round_size(4000)
    assert clgrad.opencl.max_memory_allocated(device) >= base + round_size(4000)
    v = t[10:20].view(2, 5)  # a view holds the storage, not new memory
    assert clgrad.opencl.memory_allocated(device) == base + round_size(4000)
    del t
    assert clgrad.opencl.memory_allocated(device) == base + round_size(4000)
    del v
    assert clgrad.opencl.memory_allocated(device) == base
    e = clgrad.empty(0, 3, device=device)  # no buffer for an empty tensor
    assert clgrad.opencl.memory_allocated(device) == base and e._storage.data is None


def test_buffers_are_reused(cl_dev, device):
    alloc = cl_dev.allocator
    x = clgrad.ones(3000, device=device)
    y = x * 2 + 1  # warm up: the temporary and the result need two buffers
    del y
    live = alloc.live_buffers
    for _ in range(20):
        y = x * 2 + 1
        del y
    assert alloc.live_buffers == live


def test_empty_cache_releases(cl_dev, device):
    alloc = cl_dev.allocator
    ts = [clgrad.empty(5000 + i, device=device) for i in range(4)]
    held = clgrad.opencl.memory_allocated(device)
    live = alloc.live_buffers
    del ts
    assert clgrad.opencl.memory_allocated(device) < held and alloc.cached > 0
    reserved = clgrad.opencl.memory_reserved(device)
    clgrad.opencl.empty_cache()
    assert alloc.cached == 0 and alloc.live_buffers < live
    assert clgrad.opencl.memory_reserved(device) < reserved
    assert clgrad.opencl.memory_reserved(device) == clgrad.opencl.memory_allocated(device)
    clgrad.opencl.reset_peak_memory_stats(device)
    assert clgrad.opencl.max_memory_allocated(device) == clgrad.opencl.memory_allocated(device)


@pytest.mark.parametrize("nbytes, rounded", [(1, 512), (512, 512), (513, 1024), (4000, 4096), (5000, 5120),
                                             ((1 << 20) + 1, (1 << 20) + (1 << 18))])
def test_round_size(nbytes, rounded):
    assert round_size(nbytes) == rounded
    assert round_size(nbytes) >= nbytes and round_size(nbytes) <= max(512, nbytes * 1.25 + 512)


def test_out_of_memory_message(cl_dev, device):
    too_big = cl_dev.props.max_alloc // 4 + 1024
    with pytest.raises(clgrad.OutOfMemoryError) as info:
        clgrad.empty(too_big, dtype=clgrad.float32, device=device)
    msg = str(info.value)
    assert f"opencl:{cl_dev.index}" in msg and "empty_cache" in msg
    assert clgrad.zeros(4, device=device).tolist() == [0.0] * 4  # still usable
    np.testing.assert_array_equal(np.asarray(clgrad.arange(3, device=device)), [0, 1, 2])


def test_pocl_keeps_no_binaries_of_its_own(cl_dev, probe, monkeypatch):
    """PoCL caches programs itself; clgrad's binary cache would make it generate every kernel's code up front."""
    params, folder = probe
    monkeypatch.delenv("CLGRAD_CACHE_BINARIES")
    programs.get_kernel(cl_dev, "probe", "probe_int", (None,), params)
    stored = list(folder.glob("*.bin")) if folder.exists() else []
    assert len(stored) == (0 if cl_dev.props.platform == "Portable Computing Language" else 1)
