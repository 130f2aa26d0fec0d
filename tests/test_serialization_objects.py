"""Whole objects through clgrad.save / clgrad.load (PyTorch >= 2.6 weights_only semantics and messages), through
pickle and copy.deepcopy; and the golden bytes of plain state_dict files, which must not change."""
from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.serialization import CheckpointError, load, save
from clgrad.serialization import _format as SF
from tests.helpers import to_numpy


def record_call(module, args, output):
    module.calls = getattr(module, "calls", 0) + 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.fc = nn.Linear(8, 3)
        self.register_buffer("running", clgrad.arange(3.0))
        self.register_buffer("scratch", clgrad.ones(2), persistent=False)
        self.extra = {"note": "hi", "size": clgrad.Size([2, 3]), "dtype": clgrad.float16, "dev": clgrad.device("cpu")}

    def forward(self, x):
        return self.fc(self.bn(self.conv(x)).flatten(1))


def make_net(device):
    clgrad.manual_seed(0)
    net = Net().to(device)
    net.fc.register_forward_hook(record_call)
    net.bn.eval()
    return net


def assert_same_net(got, want, device):
    assert type(got) is Net and list(got._modules) == ["conv", "bn", "fc"]
    assert got.training and not got.bn.training and got.fc.training
    assert list(got.state_dict()) == list(want.state_dict())
    for (k, a), b in zip(got.state_dict().items(), want.state_dict().values()):
        assert a.device == device and a.dtype is b.dtype, k
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=k)
    assert got._non_persistent_buffers_set == {"scratch"} and to_numpy(got.scratch).tolist() == [1.0, 1.0]
    assert type(got.fc.weight) is nn.Parameter and got.fc.weight.requires_grad
    assert got.extra == want.extra and type(got.extra["size"]) is clgrad.Size
    x = clgrad.ones(1, 1, 3, 6, device=device)
    np.testing.assert_allclose(to_numpy(got(x)), to_numpy(want(x)), rtol=1e-6)
    assert got.fc.calls == 1  # the forward hook came along


def saved(obj, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


# ---- whole modules ---------------------------------------------------------------------------------


def test_module_round_trip(device, tmp_path):
    net = make_net(device)
    save(net, tmp_path / "net.pt")
    got = load(tmp_path / "net.pt", weights_only=False)
    assert_same_net(got, net, device)
    on_cpu = load(tmp_path / "net.pt", map_location="cpu", weights_only=False)
    assert on_cpu.fc.weight.device == "cpu" and on_cpu.running.device == "cpu"


def test_pickle_and_deepcopy_of_a_module(device):
    net = make_net(device)
    for got in (pickle.loads(pickle.dumps(net)), copy.deepcopy(net)):
        assert_same_net(got, net, device)
        assert got.fc.weight is not net.fc.weight
        got.fc.weight.data.fill_(0)
        assert to_numpy(net.fc.weight).any()  # nothing is shared


def test_model_and_optimizer_share_parameters_after_loading(device):
    clgrad.manual_seed(0)
    model = nn.Linear(3, 2).to(device)
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(clgrad.ones(1, 3, device=device)).sum().backward()
    opt.step()
    got = load(saved({"model": model, "opt": opt, "epoch": 3}), weights_only=False)
    m, o = got["model"], got["opt"]
    assert got["epoch"] == 3 and o.param_groups[0]["params"][0] is m.weight
    buf = o.state[m.weight]["momentum_buffer"]
    np.testing.assert_array_equal(to_numpy(buf), to_numpy(opt.state[model.weight]["momentum_buffer"]))
    for mod, optim in ((model, opt), (m, o)):
        optim.zero_grad()
        mod(clgrad.ones(1, 3, device=device)).sum().backward()
        optim.step()
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(model.weight), rtol=1e-6)


def test_a_tensor_referenced_twice_loads_as_one_tensor():
    t = clgrad.arange(3.0)
    a, b, s = load(saved([t, t, {3}]))  # the set makes it a pickled object
    assert a is b and s == {3}


def test_pickled_files_are_safetensors_files_with_a_digest():
    st_numpy = pytest.importorskip("safetensors.numpy")
    data = saved(nn.Linear(2, 3)).getvalue()
    arrays = st_numpy.load(data)
    assert sorted(arrays) == ["0", "1", "pickle"] and arrays["pickle"].dtype == np.uint8
    flipped = bytearray(data)
    flipped[-5] ^= 1  # inside the pickle
    with pytest.raises(CheckpointError, match="checksum"):
        load(io.BytesIO(bytes(flipped)), weights_only=False)


# ---- weights_only ------------------------------------------------------------------------------------


def torch_refusal(torch, obj) -> str:
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as info:
        torch.load(buf)
    return str(info.value)


def as_clgrad(message: str, *renames) -> str:
    """torch's message with clgrad's names: the deliberate differences, one by one."""
    out = message.replace(
        "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` "
        "to `True`. Re-running `torch.load`",
        "`clgrad.load` follows PyTorch 2.6, which changed the default value of the `weights_only` argument in "
        "`torch.load` from `False` to `True`. Re-running `clgrad.load`")
    out = out.replace("torch.load to learn more about types accepted by default with weights_only "
                      "https://pytorch.org/docs/stable/generated/torch.load.html.",
                      "clgrad.load to learn more about types accepted by default with weights_only (help(clgrad.load)).")
    out = out.replace("torch.serialization.", "clgrad.serialization.")
    for old, new in renames:
        out = out.replace(old, new)
    return out


def test_default_load_refuses_a_module_with_pytorchs_message():
    torch = pytest.importorskip("torch")
    want = as_clgrad(torch_refusal(torch, torch.nn.Linear(2, 3)),
                     ("torch.nn.modules.linear.Linear", "clgrad.nn.modules.linear.Linear"))
    with pytest.raises(pickle.UnpicklingError) as info:
        load(saved(nn.Linear(2, 3)))
    assert str(info.value) == want
    with pytest.raises(pickle.UnpicklingError):
        load(saved(nn.Linear(2, 3)), weights_only=True)


class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class EvilExec:
    def __reduce__(self):
        return (exec, ("import builtins; builtins.clgrad_pwned = True",))


def test_hostile_pickles_are_refused_without_running_code(tmp_path):
    marker = tmp_path / "pwned"
    data = saved({"w": clgrad.ones(2), "e": Evil(marker)})
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL posix.system whose module posix is blocked"):
        load(data)
    with clgrad.serialization.safe_globals([os.system]), pytest.raises(pickle.UnpicklingError, match="blocked"):
        load(io.BytesIO(data.getvalue()))  # a blocked module stays blocked
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL exec was not an allowed global"):
        load(saved([EvilExec()]))
    assert not marker.exists() and not hasattr(__import__("builtins"), "clgrad_pwned")
    torch = pytest.importorskip("torch")
    assert str(pytest.raises(pickle.UnpicklingError, load, io.BytesIO(data.getvalue())).value) == as_clgrad(
        torch_refusal(torch, {"w": torch.ones(2), "e": Evil(marker)}))
    assert not marker.exists()


def test_safe_globals_admit_trusted_classes():
    clgrad.serialization.clear_safe_globals()
    data = saved(make_net("cpu")).getvalue()
    needed = [Net, nn.Conv2d, nn.BatchNorm2d, nn.Linear, record_call]
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {Net.__module__}.Net was not"):
        load(io.BytesIO(data))
    with clgrad.serialization.safe_globals(needed):
        assert set(clgrad.serialization.get_safe_globals()) == set(needed)
        assert_same_net(load(io.BytesIO(data)), make_net("cpu"), "cpu")
    assert clgrad.serialization.get_safe_globals() == []
    clgrad.serialization.add_safe_globals([(Net, f"{Net.__module__}.Net"), *needed[1:]])
    try:
        assert type(load(io.BytesIO(data))) is Net
    finally:
        clgrad.serialization.clear_safe_globals()
    assert clgrad.serialization.get_safe_globals() == []


def test_allow_listed_types_load_by_default():
    obj = {"p": nn.Parameter(clgrad.ones(2)), "size": clgrad.Size([2]), "c": 1j, "fs": frozenset({1}),
           "b": b"\x00\xff", "ba": bytearray(b"x"), "od": OrderedDict(a=1), "dev": clgrad.device("cpu"),
           "dt": clgrad.int8, "s": {1, 2}}
    got = load(saved(obj))
    assert type(got["p"]) is nn.Parameter and got["p"].requires_grad
    assert {k: v for k, v in got.items() if k != "p"} == {k: v for k, v in obj.items() if k != "p"}


def test_load_keyword_arguments_follow_pytorch(tmp_path):
    save(nn.Linear(2, 3), tmp_path / "m.pt")
    assert type(load(tmp_path / "m.pt", pickle_module=pickle)) is nn.Linear  # weights_only defaults to False
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        load(tmp_path / "m.pt", pickle_module=pickle, weights_only=True)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        load(io.BytesIO(b""), mmap=True)
    assert type(load(tmp_path / "m.pt", mmap=True, weights_only=False, encoding="utf-8")) is nn.Linear
    with pytest.warns(UserWarning, match="pickle_load_args only works if `weights_only=False`"):
        load(saved([1]), encoding="latin1")
    save(nn.Linear(2, 3), tmp_path / "p4.pt", pickle_protocol=4)
    assert type(load(tmp_path / "p4.pt", weights_only=False)) is nn.Linear


# ---- pickle and deepcopy of tensors --------------------------------------------------------------------


def test_tensor_pickle_keeps_device_values_and_requires_grad(device):
    t = clgrad.arange(6.0, device=device).view(2, 3).t().requires_grad_()
    got = pickle.loads(pickle.dumps(t))
    assert got.device == device and got.requires_grad and got.shape == (3, 2)
    np.testing.assert_array_equal(to_numpy(got), to_numpy(t))
    for obj in (clgrad.device(device), clgrad.float16, clgrad.Size([2, 3])):
        assert pickle.loads(pickle.dumps(obj)) == obj


def test_tensor_deepcopy_follows_pytorch(device):
    torch = pytest.importorskip("torch")
    t = clgrad.ones(2, device=device, requires_grad=True)
    t.grad = clgrad.full((2,), 3.0, device=device)
    got = copy.deepcopy(t)
    assert got.requires_grad and got.is_leaf and to_numpy(got.grad).tolist() == [3.0, 3.0]
    assert got.grad is not t.grad and got.device == device
    with pytest.raises(RuntimeError) as info:
        copy.deepcopy(t * 2)
    a = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as want:
        copy.deepcopy(a * 2)
    assert str(info.value) == str(want.value)


# ---- plain state_dict files keep their bytes ----------------------------------------------------------------


def golden_objects():
    """Deterministic objects that the JSON tree expresses (no randomness, cpu)."""
    sd = OrderedDict()
    for i, dt in enumerate(("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")):
        sd[f"layer{i}.{dt}"] = (clgrad.arange(12, dtype=clgrad.float64) * 0.75 - 3).to(getattr(clgrad, dt)).view(3, 4)
    sd["t"] = clgrad.arange(6.0).view(2, 3).t()
    sd["scalar"] = clgrad.tensor(2.5)
    sd["empty"] = clgrad.zeros(0, 3)
    ckpt = OrderedDict(
        model=sd,
        optim={"state": {0: {"step": 3, "exp_avg": clgrad.arange(4.0)[1:3]}, 1: {"m": None}},
               "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "foreach": None}]},
        w=clgrad.ones(2, 2, requires_grad=True),
        losses=[0.5, float("inf"), float("-inf"), float("nan"), -0.0],
        keys={(2, "a"): "tuple", None: 1, 2.5: "f", True: "b", -(2**70): "big"},
        misc=(clgrad.float16, clgrad.device("cpu"), "üñí", [], {}, ()),
    )
    return {"state_dict": sd, "checkpoint": ckpt, "tensor": clgrad.arange(5), "list": [1, 2.5, "s", None]}


GOLDEN = {  # sha256 of the files the code before whole-object saving wrote for golden_objects()
    "state_dict": "6c8343303fa5b25b8264b82e484d424cc878a682933badeb0ee515b7e7e90d6d",
    "checkpoint": "552ef86781a7b691c9b5519f5090134f226f2c3dd4f9497d5c94adf5a74dae12",
    "tensor": "e322286a402edc8666a27c70b4b7bc8512b35bcfd6dba6d6422ba5120f58b96b",
    "list": "69d4f97df0cd134a18ae2ebd280a3a39f26c3604e4c7578563e9448d78163fed",
}


@pytest.mark.parametrize("name", list(GOLDEN))
def test_plain_files_keep_their_bytes(name):
    data = saved(golden_objects()[name]).getvalue()
    assert hashlib.sha256(data).hexdigest() == GOLDEN[name]
    meta = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])["__metadata__"]
    assert json.loads(meta[SF.TREE_KEY])["version"] == 1


class Huge:
    def __reduce__(self):
        return (bytearray, (2**40,))


def test_allow_listed_globals_cant_allocate_without_limit():
    with pytest.raises(pickle.UnpicklingError, match="bytearray"):
        load(saved([Huge()]))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_protocol_loads_weights_only(protocol):
    obj = [bytearray(b"a\xff"), {1}, frozenset({2}), b"\x00", 1j, OrderedDict(a=clgrad.ones(1)), clgrad.float64]
    got = load(saved(obj, pickle_protocol=protocol))
    assert got[:5] + [got[6]] == obj[:5] + [obj[6]] and to_numpy(got[5]["a"]).tolist() == [1.0]
