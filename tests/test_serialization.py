"""clgrad.save / clgrad.load: round trips on every device, map_location, atomic writes, hostile files, and
interop with the safetensors library and PyTorch."""
from __future__ import annotations

import ast
import io
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
from clgrad.serialization import CheckpointError, load, save
from clgrad.serialization import _files as SFiles
from clgrad.serialization import _format as SF
from tests.conftest import fp64_ok
from tests.helpers import LAYOUTS, make, rand, to_numpy

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dtypes_on(device):
    return [d for d in DTYPES if d != "float64" or fp64_ok(device)]


def assert_same(got, want, where="obj"):
    """Exact equality of types, containers, dict order, tensor device/dtype/shape and values."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, clgrad.Tensor):
        assert got.device == want.device, where
        assert got.dtype is want.dtype and got.shape == want.shape, where
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want), err_msg=where)
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), where
    else:
        assert got == want, where


def nested(device):
    """An object like a training checkpoint: model and optimizer state, hyper-parameters, losses."""
    dts = dtypes_on(device)
    model = OrderedDict((f"layer.{dt}", make(rand((3, 4), dt), device, LAYOUTS[i % 4])) for i, dt in enumerate(dts))
    model["scalar"] = clgrad.tensor(2.5, device=device)
    model["empty"] = clgrad.zeros(0, 3, device=device)
    base = clgrad.arange(12, dtype=clgrad.float32, device=device)
    state = {0: {"step": 3, "exp_avg": base.view(3, 4).t(), "exp_avg_sq": base[2:5]}, 1: {"momentum_buffer": None}}
    groups = [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False, "foreach": None}]
    return OrderedDict(
        model=model,
        optim={"state": state, "param_groups": groups},
        losses=[0.5, 0.25, float("inf"), float("-inf"), float("nan"), -0.0],
        keys={(2, "a"): "tuple key", None: 1, 2.5: "float key", True: "bool key", "": "empty", -(2**70): "big"},
        misc=(clgrad.float16, clgrad.device("cpu"), "üñí", [], {}, ()),
    )


def test_round_trip_nested(device, tmp_path):
    obj = nested(device)
    path = tmp_path / "ckpt.pt"
    save(obj, path)
    got = load(path)
    assert_same(got, obj)
    assert got["model"]["layer.float32"].device == device  # back on the device it was saved from


def test_round_trip_file_objects(device):
    obj = nested(device)
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    assert_same(load(buf), obj)

    class Stream:  # a pipe-like reader that can't seek
        def __init__(self, data):
            self.inner = io.BytesIO(data)

        def read(self, n=-1):
            return self.inner.read(n)

        def seekable(self):
            return False

    assert_same(load(Stream(buf.getvalue())), obj)


@pytest.mark.parametrize("obj", [clgrad.arange(3), 1.5, None, "text", [], OrderedDict()])
def test_round_trip_bare_objects(tmp_path, obj):
    save(obj, tmp_path / "b.pt")
    assert_same(load(tmp_path / "b.pt"), obj)


def test_views_save_values_and_shared_storage_is_not_shared(tmp_path):
    base = clgrad.arange(10.0)
    obj = {"a": base, "b": base[2:4], "c": base.view(2, 5).t()}
    save(obj, tmp_path / "v.pt")
    got = load(tmp_path / "v.pt")
    assert_same(got, obj)
    got["a"].fill_(0)
    assert to_numpy(got["b"]).tolist() == [2.0, 3.0]  # separate copies after loading
    assert os.path.getsize(tmp_path / "v.pt") < 1000


def test_requires_grad_is_kept(tmp_path):
    save({"w": clgrad.ones(2, requires_grad=True), "b": clgrad.ones(2)}, tmp_path / "g.pt")
    got = load(tmp_path / "g.pt")
    assert got["w"].requires_grad and got["w"].grad_fn is None and not got["b"].requires_grad


@pytest.mark.parametrize("where", ["cpu", "same", "dict", "callable", "callable-none"])
def test_map_location(device, tmp_path, where):
    save({"w": clgrad.arange(3, device=device)}, tmp_path / "m.pt")
    seen = []
    ml = {
        "cpu": "cpu",
        "same": clgrad.device(device),
        "dict": {clgrad.device(device): "cpu", "opencl:98": device},
        "callable": lambda storage, loc: seen.append(loc) or storage,
        "callable-none": lambda storage, loc: seen.append(loc),
    }[where]
    got = load(tmp_path / "m.pt", map_location=ml)
    expect = device if where in ("same", "callable-none") else "cpu"
    assert got["w"].device == expect
    assert to_numpy(got["w"]).tolist() == [0, 1, 2]
    assert seen in ([], [device])


def test_missing_saved_device_loads_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(SF, "_location", lambda t: "opencl:99")
    save({"w": clgrad.ones(2)}, tmp_path / "m.pt")
    assert load(tmp_path / "m.pt")["w"].device == "cpu"
    assert load(tmp_path / "m.pt", map_location={"opencl:99": "cpu"})["w"].device == "cpu"
    with pytest.raises(RuntimeError):
        load(tmp_path / "m.pt", map_location="opencl:99")  # the user asked for it: their error


def test_weights_only_is_accepted(tmp_path):
    save([1, 2], tmp_path / "w.pt")
    assert load(tmp_path / "w.pt", weights_only=True) == [1, 2]


# ---- save errors and atomic writes -----------------------------------------------------------------


def test_objects_the_tree_cant_express_are_pickled(tmp_path):
    t = clgrad.arange(3.0)
    save({"x": {1, 2}, t: "tensor key", "t": t}, tmp_path / "p.pt")
    got = load(tmp_path / "p.pt")  # sets and tensors are allow-listed: weights_only loads it
    key = next(k for k in got if isinstance(k, clgrad.Tensor))
    assert got["x"] == {1, 2} and key is got["t"] and to_numpy(key).tolist() == [0, 1, 2]


def test_unpicklable_objects_leave_no_file(tmp_path):
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        save([lambda: 1], tmp_path / "bad.pt")
    assert not os.listdir(tmp_path)


def test_deep_nesting_is_pickled(tmp_path):
    obj = []
    for _ in range(SF.MAX_DEPTH + 5):
        obj = [obj]
    save(obj, tmp_path / "deep.pt")
    assert load(tmp_path / "deep.pt") == obj
    assert json.loads(file_meta(tmp_path / "deep.pt")["clgrad"]) == {"version": 2, "pickle": "pickle"}
    ok = []
    for _ in range(SF.MAX_DEPTH):
        ok = {"k": ok}
    save(ok, tmp_path / "ok.pt")
    assert load(tmp_path / "ok.pt") == ok
    assert json.loads(file_meta(tmp_path / "ok.pt")["clgrad"])["version"] == 1


def file_meta(path) -> dict:  # noqa: N802
    data = open(path, "rb").read()
    return json.loads(data[8:8 + int.from_bytes(data[:8], "little")])["__metadata__"]


def test_failed_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save({"step": 1, "w": clgrad.ones(3)}, path)

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        save({"step": 2, "w": clgrad.zeros(3)}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # the temporary file is gone
    assert load(path)["step"] == 1


def test_saved_file_gets_umask_permissions(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    save([1], tmp_path / "p.pt")
    assert os.stat(tmp_path / "p.pt").st_mode & 0o777 == 0o666 & ~umask
    assert os.listdir(tmp_path) == ["p.pt"]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_during_save_leaves_a_whole_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    child = textwrap.dedent(f"""
        import clgrad
        from clgrad.serialization import save
        w = clgrad.zeros(2_000_000)
        i = 0
        while True:
            i += 1
            save({{"step": i, "w": w.fill_(i)}}, {str(path)!r})
            if i == 1:
                print("saved", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        started = proc.stdout.readline().strip() == b"saved"
        time.sleep(0.3)  # several saves of 8 MB: the kill lands in the middle of one
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert started, proc.stderr.read().decode()
    got = load(path)
    assert got["step"] >= 1 and np.all(to_numpy(got["w"]) == got["step"])


# ---- hostile and corrupted files ---------------------------------------------------------------------


def good_bytes() -> bytes:
    buf = io.BytesIO()
    save({"w": clgrad.arange(4.0), "n": [1, 2.5, "s"], "b": clgrad.tensor([True, False])}, buf)
    return buf.getvalue()


def expect_error(path, match=None):
    with pytest.raises(CheckpointError, match=match) as info:
        load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_truncated_files(tmp_path):
    data = good_bytes()
    path = tmp_path / "t.pt"
    for cut in sorted({0, 1, 7, 8, 9, len(data) // 2, len(data) - 1, *range(0, len(data), 13)}):
        path.write_bytes(data[:cut])
        expect_error(path)


class NamedBytes(io.BytesIO):
    name = "flipped.pt"


def test_every_bit_flip_is_detected():
    data = good_bytes()
    missed = []
    for i in range(len(data)):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[i] ^= 1 << bit
            try:
                load(NamedBytes(bytes(flipped)))
                missed.append((i, bit))
            except CheckpointError as e:
                assert "flipped.pt" in str(e)
    assert not missed, f"undetected bit flips (byte, bit): {missed[:10]}"


class Evil:
    def __reduce__(self):
        return (exec, ("import builtins; builtins.clgrad_pwned = True",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_files_are_refused_without_running_code(tmp_path, protocol):
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"w": Evil()}, protocol=protocol))
    expect_error(path)
    assert not hasattr(__import__("builtins"), "clgrad_pwned")


def test_torch_save_files_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    expect_error(tmp_path / "torch.pt", match="pickle")


def raw_file(header, body=b"") -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + body


def f32(offsets, shape=(2,), dtype="F32"):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


HOSTILE = {
    "huge header length": (2**63 + 5).to_bytes(8, "little") + b"{}",
    "header length past end": (100).to_bytes(8, "little") + b"{}",
    "offsets out of range": raw_file({"w": f32([0, 8])}, b"\0" * 4),
    "overlapping offsets": raw_file({"a": f32([0, 8]), "b": f32([4, 12])}, b"\0" * 12),
    "gap between tensors": raw_file({"a": f32([0, 8]), "b": f32([12, 20])}, b"\0" * 20),
    "trailing bytes": raw_file({"a": f32([0, 8])}, b"\0" * 9),
    "unknown dtype": raw_file({"a": f32([0, 4], (2,), "F8_E5M2")}, b"\0" * 4),
    "bogus dtype": raw_file({"a": f32([0, 8], (2,), "X" * 1000)}, b"\0" * 8),
    "dtype not a string": raw_file({"a": {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
    "size mismatch": raw_file({"a": f32([0, 8], (3,))}, b"\0" * 8),
    "negative dim": raw_file({"a": f32([0, 8], (-2,))}, b"\0" * 8),
    "huge empty shape": raw_file({"a": f32([0, 0], (0, 2**61, 2**10))}),
    "bool dim": raw_file({"a": f32([0, 4], (True,))}, b"\0" * 4),
    "float offsets": raw_file({"a": f32([0.0, 8.0])}, b"\0" * 8),
    "missing field": raw_file({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8),
    "extra field": raw_file({"a": {**f32([0, 8]), "code": "x"}}, b"\0" * 8),
    "duplicate keys": raw_file(b'{"a":' + json.dumps(f32([0, 8])).encode() + b',"a":'
                               + json.dumps(f32([0, 8])).encode() + b"}", b"\0" * 8),
    "not an object": raw_file(b"[1, 2]"),
    "invalid json": raw_file(b'{"a": '),
    "not utf-8": raw_file(b'{"\xff\xfe": 1}'),
    "nan constant": raw_file(b'{"a": NaN}'),
    "metadata not strings": raw_file({"__metadata__": {"format": 1}}),
    "deeply nested header": raw_file(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "tree without digest": raw_file({"__metadata__": {"clgrad": '{"version":1,"tree":null}'}}),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_headers(tmp_path, name):
    path = tmp_path / "hostile.pt"
    path.write_bytes(HOSTILE[name])
    expect_error(path)


def signed_file(tree_text: str, arrays: dict) -> bytes:
    """A file with a correct digest but whatever object description the test wants."""
    host = {n: (list(a.shape), clgrad.dtypes.from_numpy_dtype(a.dtype), a) for n, a in arrays.items()}
    return b"".join(bytes(c) for c in SF.assemble(tree_text, host))


def doc(tree) -> str:
    return json.dumps({"version": 1, "tree": tree})


W = {"w": np.ones(2, np.float32)}
BAD_TREES = {
    "missing tensor": (doc({"tensor": "nope", "device": "cpu"}), W),
    "tensor used twice": (doc({"list": [{"tensor": "w", "device": "cpu"}] * 2}), W),
    "unreferenced tensor": (doc(None), W),
    "bad device": (doc({"tensor": "w", "device": "gpu:-1"}), W),
    "tensor extra field": (doc({"tensor": "w", "device": "cpu", "code": "x"}), W),
    "unknown tag": (doc({"set": [1]}), {}),
    "two tags": (doc({"list": [], "tuple": []}), {}),
    "bare json list": (doc([1, 2]), {}),
    "bad pair": (doc({"dict": [[1]]}), {}),
    "unhashable key": (doc({"dict": [[{"list": []}, 1]]}), {}),
    "tensor key": (doc({"dict": [[{"tensor": "w", "device": "cpu"}, 1]]}), W),
    "bad float": (doc({"float": "1e999999"}), {}),
    "bad dtype": (doc({"dtype": "complex128"}), {}),
    "bad version": (json.dumps({"version": 99, "tree": None}), {}),
    "not json": ("{tree", {}),
    "too deep": (doc(json.loads('{"list":[' * 150 + "]}" * 150)), {}),
    "deep json": ('{"version":1,"tree":' + '{"list":[' * 100_000 + "]}" * 100_000 + "}", {}),
}


@pytest.mark.parametrize("name", list(BAD_TREES))
def test_hostile_object_descriptions(tmp_path, name):
    path = tmp_path / "tree.pt"
    path.write_bytes(signed_file(*BAD_TREES[name]))
    expect_error(path, match="object description|version")


def test_signed_file_helper_makes_loadable_files(tmp_path):
    path = tmp_path / "ok.pt"
    path.write_bytes(signed_file(doc({"list": [{"tensor": "w", "device": "cpu"}]}), W))
    assert to_numpy(load(path)[0]).tolist() == [1.0, 1.0]


def test_load_errors_of_the_caller(tmp_path):
    save([1], tmp_path / "a.pt")
    with open(tmp_path / "a.pt", encoding="latin-1") as text_file, pytest.raises(TypeError, match="binary"):
        load(text_file)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.pt")


def test_pickle_is_never_used(tmp_path, monkeypatch):
    """Containers of tensors (state_dicts, checkpoints) never touch pickle, to save or to load."""
    for module in (SF, SFiles):
        imported = set()
        for node in ast.walk(ast.parse(open(module.__file__, encoding="utf-8").read())):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
        assert not imported & {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}
        assert "pickle" not in vars(module)

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle used")

    for name in ("load", "loads", "Unpickler", "dump", "dumps", "Pickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    obj = nested("cpu")
    save(obj, tmp_path / "p.pt")
    assert_same(load(tmp_path / "p.pt"), obj)


# ---- interop with the safetensors library and PyTorch ---------------------------------------------------


def test_safetensors_numpy_reads_our_files(device, tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    obj = nested(device)
    save(obj, tmp_path / "n.pt")
    arrays = st_numpy.load_file(str(tmp_path / "n.pt"))
    for key, t in obj["model"].items():
        np.testing.assert_array_equal(arrays[f"model.{key}"], to_numpy(t))
    np.testing.assert_array_equal(arrays["optim.state.0.exp_avg"], to_numpy(obj["optim"]["state"][0]["exp_avg"]))


def test_flat_state_dict_loads_in_pytorch(device, tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    sd = OrderedDict((f"{i}.{dt}", make(rand((2, 3), dt), device, LAYOUTS[i % 4]))
                     for i, dt in enumerate(dtypes_on(device)))
    sd["bn.num_batches_tracked"] = clgrad.tensor(7, device=device)
    save(sd, tmp_path / "sd.safetensors")
    got = st_torch.load_file(str(tmp_path / "sd.safetensors"))
    assert list(got) == list(sd) or sorted(got) == sorted(sd)
    for key, t in sd.items():
        assert got[key].dtype == getattr(torch, t.dtype.name)
        np.testing.assert_array_equal(got[key].numpy(), to_numpy(t))


def test_pytorch_state_dict_loads_in_clgrad(device, tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    extra = {"half": torch.randn(3).half(), "mask": torch.tensor([True, False]), "idx": torch.arange(3)}
    tensors = {**model.state_dict(), **extra}
    st_torch.save_file(tensors, str(tmp_path / "torch.safetensors"))
    got = load(tmp_path / "torch.safetensors", map_location=device)
    assert type(got) is dict and sorted(got) == sorted(tensors)
    for key, t in tensors.items():
        assert got[key].device == device and got[key].dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(to_numpy(got[key]), t.numpy())
    assert load(tmp_path / "torch.safetensors")["0.weight"].device == "cpu"  # no saved device: cpu
