from __future__ import annotations

import gzip
import hashlib
import os
import struct
import urllib.error

import numpy as np
import pytest

import clgrad
from clgrad.datasets import MNIST, FashionMNIST, mnist, read_idx
from clgrad.datasets.transforms import Compose, Lambda, Normalize, ToTensor

SYSTEM_FASHION = "/usr/share/datasets/fashion-mnist"


def idx_bytes(arr: np.ndarray, code: int = 0x08) -> bytes:
    header = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write(path, data: bytes, gz: bool) -> str:
    path = str(path) + (".gz" if gz else "")
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(data)
    return path


def make_split(folder, n=5, h=4, w=3, train=True, gz=False, seed=0):
    """Writes a small split into ``folder``; returns (images, labels)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    prefix = "train" if train else "t10k"
    write(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), idx_bytes(images), gz)
    write(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), idx_bytes(labels), gz)
    return images, labels


@pytest.fixture(autouse=True)
def no_env_and_no_system(monkeypatch):
    """Tests see only the folders they create, unless they opt in."""
    monkeypatch.delenv("CLGRAD_DATA", raising=False)
    monkeypatch.setattr(FashionMNIST, "system_dirs", [])


@pytest.mark.parametrize(
    "arr,code",
    [
        (np.arange(24, dtype=np.uint8).reshape(2, 3, 4), 0x08),
        (np.array([-3, 0, 5], dtype=np.int8), 0x09),
        (np.array([[-300, 7]], dtype=np.int16), 0x0B),
        (np.array([1 << 20, -1], dtype=np.int32), 0x0C),
        (np.array([1.5, -2.25], dtype=np.float32), 0x0D),
        (np.array([[1e300]], dtype=np.float64), 0x0E),
    ],
)
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_roundtrip(tmp_path, arr, code, gz):
    got = read_idx(write(tmp_path / "x-idx", idx_bytes(arr, code), gz))
    assert got.dtype == arr.dtype and got.dtype.isnative
    np.testing.assert_array_equal(got, arr)


GOOD = idx_bytes(np.zeros((2, 3, 3), np.uint8))


@pytest.mark.parametrize(
    "data,match",
    [
        (b"\x00\x00\x08", "bad magic"),
        (b"\x01\x00\x08\x01" + GOOD[4:], "bad magic"),
        (b"\x00\x00\x07\x03" + GOOD[4:], "bad magic"),
        (GOOD[:10], "truncated IDX header"),
        (GOOD[:-1], "IDX file truncated"),
        (GOOD + b"\x00", "trailing bytes"),
    ],
)
def test_read_idx_rejects_corrupted_files(tmp_path, data, match):
    path = write(tmp_path / "bad-idx", data, False)
    with pytest.raises(RuntimeError, match=match) as e:
        read_idx(path)
    assert "bad-idx" in str(e.value)


def test_read_idx_truncated_gzip(tmp_path):
    path = write(tmp_path / "cut-idx", GOOD, True)
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob[: len(blob) // 2])
    with pytest.raises(RuntimeError, match="cut-idx"):
        read_idx(path)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_reads_split(tmp_path, gz, train):
    images, labels = make_split(tmp_path, train=train, gz=gz)
    ds = MNIST(tmp_path, train=train)
    assert len(ds) == 5
    img, target = ds[2]
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == (4, 3)
    np.testing.assert_array_equal(img, images[2])
    assert type(target) is int and target == labels[2]
    assert ds[-1][1] == labels[-1]
    assert "Split: " + ("Train" if train else "Test") in repr(ds)


def test_data_and_targets_are_tensors_like_torchvision(tmp_path):
    images, labels = make_split(tmp_path, n=6)
    ds = MNIST(tmp_path)
    assert isinstance(ds.data, clgrad.Tensor) and ds.data.dtype == clgrad.uint8 and tuple(ds.data.shape) == (6, 4, 3)
    assert isinstance(ds.targets, clgrad.Tensor) and ds.targets.dtype == clgrad.int64
    assert tuple(ds.targets.shape) == (6,) and ds.data.device.type == "cpu"
    np.testing.assert_array_equal(ds.data.numpy(), images)
    np.testing.assert_array_equal(ds.targets.numpy(), labels)
    # the idioms programs use: float images, masks over targets, subsets by reassignment
    np.testing.assert_allclose((ds.data.float() / 255).numpy(), images / 255.0, rtol=1e-6)
    keep = ds.targets < 5
    ds.data, ds.targets = ds.data[keep], ds.targets[keep]
    assert len(ds) == int(keep.sum()) == int((labels < 5).sum())
    np.testing.assert_array_equal(ds[0][0], images[labels < 5][0])
    assert ds[len(ds) - 1][1] == labels[labels < 5][-1]
    ds.targets[0] = 9  # in place on the cpu tensor: items see it
    assert ds[0][1] == 9


def test_torchvision_attributes(tmp_path):
    make_split(tmp_path, n=3, train=False)
    ds = FashionMNIST(tmp_path, train=False)
    assert ds.train is False and ds.transform is None and ds.target_transform is None
    assert ds.classes[0] == "T-shirt/top" and len(ds.classes) == 10
    assert ds.class_to_idx["Ankle boot"] == 9 and MNIST.classes[3] == "3 - three"
    assert ds.raw_folder == os.path.join(str(tmp_path), "FashionMNIST", "raw")
    assert ds.processed_folder == os.path.join(str(tmp_path), "FashionMNIST", "processed")
    with pytest.warns(UserWarning, match="test_labels has been renamed targets"):
        assert ds.test_labels is ds.targets
    with pytest.warns(UserWarning, match="train_data has been renamed data"):
        assert ds.train_data is ds.data


def test_mnist_transforms_applied(tmp_path):
    images, labels = make_split(tmp_path)
    ds = MNIST(tmp_path, transform=ToTensor(), target_transform=Lambda(lambda y: y + 100))
    img, target = ds[0]
    assert isinstance(img, clgrad.Tensor) and tuple(img.shape) == (1, 4, 3) and img.dtype == clgrad.float32
    np.testing.assert_allclose(img.numpy()[0], images[0] / 255.0, rtol=1e-6)
    assert target == labels[0] + 100
    assert "Transform: ToTensor()" in repr(ds)


def test_mnist_count_and_shape_mismatch(tmp_path):
    make_split(tmp_path)
    write(tmp_path / "train-labels-idx1-ubyte", idx_bytes(np.zeros(4, np.uint8)), False)
    with pytest.raises(RuntimeError, match="has 5 images but .*train-labels-idx1-ubyte has 4 labels"):
        MNIST(tmp_path)
    write(tmp_path / "train-images-idx3-ubyte", idx_bytes(np.zeros((4, 9), np.uint8)), False)
    with pytest.raises(RuntimeError, match="train-images-idx3-ubyte: expected uint8 images N x H x W"):
        MNIST(tmp_path)


def test_root_search_order(tmp_path, monkeypatch):
    root, env = tmp_path / "root", tmp_path / "env"
    os.makedirs(root)
    # torchvision's layout under CLGRAD_DATA is found when root has nothing
    make_split(env / "MNIST" / "raw", n=3)
    monkeypatch.setenv("CLGRAD_DATA", str(env))
    assert len(MNIST(root)) == 3
    assert len(MNIST(None)) == 3
    # root (here its torchvision layout) wins over CLGRAD_DATA
    make_split(root / "MNIST" / "raw", n=4)
    assert len(MNIST(root)) == 4
    # root itself wins over root/MNIST/raw
    make_split(root, n=6)
    assert len(MNIST(root)) == 6
    # a split is only taken from a folder holding both of its files
    os.remove(root / "train-labels-idx1-ubyte")
    assert len(MNIST(root)) == 4


def test_system_dir_is_last(tmp_path, monkeypatch):
    system, env = tmp_path / "system", tmp_path / "env"
    make_split(system, n=2, gz=True)
    monkeypatch.setattr(FashionMNIST, "system_dirs", [str(system)])
    assert len(FashionMNIST(tmp_path / "empty")) == 2
    make_split(env, n=7)
    monkeypatch.setenv("CLGRAD_DATA", str(env))
    assert len(FashionMNIST(tmp_path / "empty")) == 7
    with pytest.raises(RuntimeError):
        MNIST(tmp_path / "empty", train=False)  # MNIST has no system folder


def test_not_found_message(tmp_path):
    with pytest.raises(RuntimeError, match="download=True") as e:
        MNIST(tmp_path, train=False)
    msg = str(e.value)
    assert "t10k-images-idx3-ubyte[.gz]" in msg and str(tmp_path / "MNIST" / "raw") in msg


def fake_server(monkeypatch, files: dict[str, bytes]):
    """Replaces the network: URLs in ``files`` serve their bytes, every other URL is unreachable."""
    calls = []

    def urlopen(url, timeout=30.0):
        calls.append(url)
        if url not in files:
            raise urllib.error.URLError("no network")
        return files[url]

    monkeypatch.setattr(mnist, "_urlopen", urlopen)
    return calls


def serve_split(monkeypatch, cls, mirror, corrupt=()):
    """Serves gzipped IDX files for every resource of ``cls`` at ``mirror``, with md5s patched to match."""
    images, labels = np.full((3, 2, 2), 7, np.uint8), np.array([1, 2, 3], np.uint8)
    files, resources = {}, []
    for name, _ in cls.resources:
        blob = gzip.compress(idx_bytes(images if "images" in name else labels))
        resources.append((name, hashlib.md5(blob).hexdigest()))
        files[mirror + name] = blob + b"x" if name in corrupt else blob
    monkeypatch.setattr(cls, "resources", resources)
    return fake_server(monkeypatch, files)


def test_download_uses_next_mirror_and_writes_torchvision_layout(tmp_path, monkeypatch):
    calls = serve_split(monkeypatch, MNIST, MNIST.mirrors[1])
    ds = MNIST(tmp_path, train=False, download=True)
    assert len(ds) == 3 and ds[2][1] == 3
    raw = tmp_path / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted(name for name, _ in MNIST.resources)  # no temporary files left
    assert calls[0].startswith(MNIST.mirrors[0]) and calls[1].startswith(MNIST.mirrors[1])
    # present files are not fetched again
    calls.clear()
    MNIST(tmp_path, train=True, download=True)
    assert calls == []


def test_download_checksum_mismatch(tmp_path, monkeypatch):
    serve_split(monkeypatch, FashionMNIST, FashionMNIST.mirrors[0], corrupt={"t10k-labels-idx1-ubyte.gz"})
    with pytest.raises(RuntimeError, match="t10k-labels-idx1-ubyte.gz.*checksum mismatch"):
        FashionMNIST(tmp_path, train=False, download=True)
    assert not (tmp_path / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").exists()


def test_download_offline_says_where_to_put_files(tmp_path, monkeypatch):
    fake_server(monkeypatch, {})
    with pytest.raises(RuntimeError, match="no network") as e:
        FashionMNIST(tmp_path, download=True)
    assert str(tmp_path / "FashionMNIST" / "raw") in str(e.value) and "train-images-idx3-ubyte" in str(e.value)
    assert os.listdir(tmp_path / "FashionMNIST" / "raw") == []


def test_download_needs_root(monkeypatch):
    fake_server(monkeypatch, {})
    with pytest.raises(RuntimeError, match="needs a root"):
        MNIST(None, download=True)


def test_to_tensor():
    img = np.array([[0, 51], [255, 102]], np.uint8)
    t = ToTensor()(img)
    assert tuple(t.shape) == (1, 2, 2) and t.dtype == clgrad.float32
    np.testing.assert_allclose(t.numpy(), [[[0.0, 0.2], [1.0, 0.4]]], rtol=1e-6)
    hwc = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    np.testing.assert_allclose(ToTensor()(hwc).numpy(), hwc.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    f64 = np.array([[0.5, 2.0]])
    t = ToTensor()(f64)  # non-byte arrays keep values and dtype, as in torchvision
    assert t.dtype == clgrad.float64 and t.numpy().tolist() == [[[0.5, 2.0]]]
    f64[0, 0] = 9.0
    assert t.numpy()[0, 0, 0] == 0.5  # a copy, not a view of the image
    assert repr(ToTensor()) == "ToTensor()"
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        ToTensor()([[1, 2]])

    class PILLike:  # what ToTensor reads of a PIL image: the array interface
        def __init__(self, arr):
            self.__array_interface__ = arr.__array_interface__
            self._keep = arr

    np.testing.assert_allclose(ToTensor()(PILLike(hwc)).numpy(), hwc.transpose(2, 0, 1) / 255.0, rtol=1e-6)


def test_normalize(device):
    x = clgrad.tensor([[[1.0, 2.0]], [[3.0, 5.0]]], device=device)
    y = Normalize((1.0, 2.0), (0.5, 4.0))(x)
    assert y.device == x.device
    np.testing.assert_allclose(y.cpu().numpy(), [[[0.0, 2.0]], [[0.25, 0.75]]])
    assert x.cpu().numpy()[0, 0, 1] == 2.0  # out of place by default
    assert Normalize(1.0, 2.0, inplace=True)(x) is x
    np.testing.assert_allclose(x.cpu().numpy(), [[[0.0, 0.5]], [[1.0, 2.0]]])
    assert repr(Normalize((0.1307,), (0.3081,))) == "Normalize(mean=(0.1307,), std=(0.3081,))"
    with pytest.raises(ValueError, match="std evaluated to zero"):
        Normalize(0.0, (1.0, 0.0))(x)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        Normalize(0.0, 1.0)(clgrad.zeros(1, 2, 2, dtype=clgrad.int64))
    with pytest.raises(ValueError, match="tensor image of size"):
        Normalize(0.0, 1.0)(clgrad.zeros(2, 2))


def test_compose_and_lambda():
    pipeline = Compose([ToTensor(), Normalize((0.5,), (0.5,)), Lambda(lambda t: t * 2)])
    out = pipeline(np.array([[0, 255]], np.uint8))
    np.testing.assert_allclose(out.numpy(), [[[-2.0, 2.0]]])
    assert repr(pipeline) == "Compose(\n    ToTensor()\n    Normalize(mean=(0.5,), std=(0.5,))\n    Lambda()\n)"
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        Lambda(3)


@pytest.mark.skipif(
    not os.path.isfile(os.path.join(SYSTEM_FASHION, "t10k-images-idx3-ubyte.gz")),
    reason="Debian's dataset-fashion-mnist is not installed",
)
def test_real_fashion_mnist_test_split(tmp_path, monkeypatch):
    monkeypatch.setattr(FashionMNIST, "system_dirs", [SYSTEM_FASHION])
    ds = FashionMNIST(tmp_path, train=False, transform=ToTensor())
    assert len(ds) == 10000 and tuple(ds.data.shape) == (10000, 28, 28) and ds.data.dtype == clgrad.uint8
    assert int(ds.targets.min()) == 0 and int(ds.targets.max()) == 9 and ds.targets.dtype == clgrad.int64
    assert np.bincount(ds.targets.numpy()).tolist() == [1000] * 10
    img, target = ds[0]
    assert tuple(img.shape) == (1, 28, 28) and 0.0 <= float(img.min()) <= float(img.max()) <= 1.0
