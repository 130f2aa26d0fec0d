"""MNIST and Fashion-MNIST read from IDX files (raw or gzip), kept in memory; ``data`` and ``targets`` are cpu
tensors (uint8 N x H x W, int64 N) as in torchvision, sharing memory with the numpy arrays items are read from.

Where the files are looked for, in order: ``root`` and torchvision's ``root/<Name>/raw``, then the same under
``$CLGRAD_DATA``, then the system location of a distribution package (Debian's ``dataset-fashion-mnist``).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.request
import warnings
from pathlib import Path

import numpy as np

from ..ops.creation import from_numpy
from ..tensor import is_tensor

__all__ = ["MNIST", "FashionMNIST", "read_idx"]

# IDX type codes -> big-endian numpy dtypes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT")
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` is decompressed), validated against its header."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:  # gzip raises BadGzipFile (an OSError) or EOFError when cut short
        raise RuntimeError(f"{path}: cannot read IDX file: {e}") from e
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise RuntimeError(f"{path}: not an IDX file (bad magic number {data[:4].hex() or 'none'})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise RuntimeError(f"{path}: truncated IDX header (expected {header} bytes, got {len(data)})")
    dims = tuple(int(d) for d in np.frombuffer(data, ">u4", ndim, 4))
    dt = np.dtype(_IDX_DTYPES[data[2]])
    expected = header + int(np.prod(dims, dtype=np.int64)) * dt.itemsize
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "has trailing bytes"
        raise RuntimeError(f"{path}: IDX file {what}: dims {dims} need {expected} bytes, file has {len(data)}")
    return np.frombuffer(data, dt, offset=header).reshape(dims).astype(dt.newbyteorder("="))


def _urlopen(url: str, timeout: float = 30.0) -> bytes:
    """The bytes at ``url``; a module-level function so tests can replace the network."""
    req = urllib.request.Request(url, headers={"User-Agent": "clgrad"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


class MNIST:
    """The MNIST digits: ``MNIST(root, train=True, transform=None, target_transform=None, download=False)``.

    ``ds[i]`` is ``(transform(image), target_transform(label))`` with ``image`` a uint8 numpy array HxW (where
    torchvision gives a PIL image: clgrad needs no PIL) and ``label`` an int. ``ds.data`` (uint8, N x H x W) and
    ``ds.targets`` (int64, N) are tensors, as in torchvision; assigning to them (``ds.targets = ds.targets[idx]``)
    changes what ``ds[i]`` reads. ``download=True`` fetches missing files into ``root/<Name>/raw``.
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = [
        "0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
        "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine",
    ]  # fmt: skip
    system_dirs: list[str] = []

    def __init__(self, root=None, train: bool = True, transform=None, target_transform=None, download=False):
        self.root = None if root is None else os.path.expanduser(os.fspath(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        folder = self._find()
        if folder is None and download:
            folder = self.download()
        if folder is None:
            raise RuntimeError(f"Dataset not found. You can use download=True to download it. {self._where()}")
        images, labels = self._load(folder)
        self.data, self.targets = from_numpy(images), from_numpy(labels)

    @property
    def data(self):
        """The images: a uint8 tensor N x H x W."""
        return self._data

    @data.setter
    def data(self, value) -> None:
        self._data, self._images = value, _host(value)

    @property
    def targets(self):
        """The labels: an int64 tensor of N class indices."""
        return self._targets

    @targets.setter
    def targets(self, value) -> None:
        self._targets, self._labels = value, _host(value)

    @property
    def train_labels(self):
        warnings.warn("train_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def test_labels(self):
        warnings.warn("test_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def train_data(self):
        warnings.warn("train_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def test_data(self):
        warnings.warn("test_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def raw_folder(self) -> str:
        """Where ``download`` writes: torchvision's ``root/<Name>/raw``."""
        if self.root is None:
            raise RuntimeError(f"{type(self).__name__}: download=True needs a root directory")
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        """torchvision's ``root/<Name>/processed`` (clgrad reads the raw files and writes nothing there)."""
        if self.root is None:
            raise RuntimeError(f"{type(self).__name__}: no root directory")
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def _files(self) -> tuple[str, str]:
        prefix = "train" if self.train else "t10k"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    def _candidates(self) -> list[str]:
        """Folders searched, in order."""
        bases = [b for b in (self.root, os.environ.get("CLGRAD_DATA")) if b]
        out = []
        for b in bases:
            out += [b, os.path.join(b, type(self).__name__, "raw")]
        return out + list(self.system_dirs)

    def _find(self) -> str | None:
        for folder in self._candidates():
            if all(_locate(folder, name) for name in self._files()):
                return folder
        return None

    def _where(self) -> str:
        names = ", ".join(f"{n}[.gz]" for n in self._files())
        return f"Put {names} in one of: {', '.join(self._candidates()) or '<a root directory>'}."

    def _load(self, folder: str) -> tuple[np.ndarray, np.ndarray]:
        img_path, lbl_path = (_locate(folder, name) for name in self._files())
        images, labels = read_idx(img_path), read_idx(lbl_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise RuntimeError(f"{img_path}: expected uint8 images N x H x W, got {images.dtype} {images.shape}")
        if labels.ndim != 1:
            raise RuntimeError(f"{lbl_path}: expected a 1-D label array, got shape {labels.shape}")
        if len(images) != len(labels):
            raise RuntimeError(f"{img_path} has {len(images)} images but {lbl_path} has {len(labels)} labels")
        return images, labels.astype(np.int64)

    def download(self) -> str:
        """Fetches every resource missing from ``raw_folder``, checking md5; returns the folder."""
        folder = self.raw_folder
        os.makedirs(folder, exist_ok=True)
        for filename, md5 in self.resources:
            target = os.path.join(folder, filename)
            if not os.path.exists(target):
                _atomic_write(target, self._fetch(filename, md5))
        return folder

    def _fetch(self, filename: str, md5: str) -> bytes:
        errors = []
        for mirror in self.mirrors:
            url = mirror + filename
            try:
                data = _urlopen(url)
            except OSError as e:  # URLError, timeouts and refused connections are all OSErrors
                errors.append(f"{url}: {e}")
                continue
            got = hashlib.md5(data).hexdigest()
            if got == md5:
                return data
            errors.append(f"{url}: checksum mismatch (md5 {got}, expected {md5})")
        raise RuntimeError(f"Error downloading {filename}: {'; '.join(errors)}. {self._where()}")

    def __getitem__(self, index: int):
        img, target = self._images[index], int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self._images)

    def __repr__(self) -> str:
        lines = [
            f"Dataset {type(self).__name__}",
            f"    Number of datapoints: {len(self)}",
            f"    Root location: {self.root}",
            f"    Split: {'Train' if self.train else 'Test'}",
        ]
        if self.transform is not None:
            lines.append("    Transform: " + repr(self.transform).replace("\n", "\n    "))
        if self.target_transform is not None:
            lines.append("    Target transform: " + repr(self.target_transform).replace("\n", "\n    "))
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: same format and API as ``MNIST``; also found where Debian installs it."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    system_dirs = ["/usr/share/datasets/fashion-mnist"]  # Debian's dataset-fashion-mnist


def _host(value) -> np.ndarray:
    """The numpy array items are read from: a cpu tensor's own memory (so in-place changes show), else a copy."""
    if is_tensor(value):
        return value.numpy() if value.device.type == "cpu" else value.cpu().numpy()
    return np.asarray(value)


def _locate(folder: str, name: str) -> str | None:
    """``folder/name`` or ``folder/name.gz``, whichever exists (raw first)."""
    for candidate in (name, name + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            return path
    return None


def _atomic_write(path: str, data: bytes) -> None:
    """Writes through a temporary file in the same folder, so a crash never leaves a partial ``path``."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
