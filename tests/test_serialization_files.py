"""Where clgrad.save writes and clgrad.load reads: FIFOs and devices written in place, file modes kept, stale
temporary files of killed writers removed, file objects, and bounded reads of hostile streams."""
from __future__ import annotations

import io
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import clgrad
from clgrad.serialization import CheckpointError, load, save
from clgrad.serialization import _files as SFiles
from clgrad.serialization import _format as SF
from tests.helpers import to_numpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs POSIX FIFOs, modes and pids")


def sd():
    return {"w": clgrad.arange(6.0).view(2, 3), "b": clgrad.ones(3, dtype=clgrad.int64)}


def check_sd(got):
    assert to_numpy(got["w"]).tolist() == [[0, 1, 2], [3, 4, 5]] and to_numpy(got["b"]).tolist() == [1, 1, 1]


def checkpoint_bytes(obj=None) -> bytes:
    buf = io.BytesIO()
    save(sd() if obj is None else obj, buf)
    return buf.getvalue()


# ---- special files: written in place --------------------------------------------------------------------------


@posix_only
def test_save_into_a_fifo_streams_to_its_reader(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    save(sd(), fifo)
    reader.join(10)
    if reader.is_alive():  # the bug: the FIFO was replaced, so the reader waits forever; let it go
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if stat.S_ISFIFO(os.stat(fifo).st_mode) else None
        fd is not None and os.close(fd)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert got and got[0] == checkpoint_bytes()
    check_sd(load(io.BytesIO(got[0])))


@posix_only
def test_load_from_a_fifo_path(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = checkpoint_bytes()

    def write():
        with open(fifo, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    check_sd(load(fifo))
    writer.join(10)


@posix_only
def test_save_onto_a_character_device_keeps_it(tmp_path):
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except (PermissionError, OSError) as e:
        if os.geteuid() == 0:
            pytest.skip(f"can't create a device node here: {e}")
        dev = os.devnull  # not root: a regression can't replace /dev/null, only fail
    save(sd(), dev)
    assert stat.S_ISCHR(os.stat(dev).st_mode)
    assert sorted(os.listdir(tmp_path)) == (["null"] if dev != os.devnull else [])


@posix_only
def test_save_to_dev_stdout(tmp_path):
    child = "import clgrad; clgrad.save({'w': clgrad.arange(6.0).view(2, 3), 'b': clgrad.ones(3, dtype=clgrad.int64)}, '/dev/stdout')"
    out = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    check_sd(load(io.BytesIO(out.stdout)))
    with open(tmp_path / "log", "wb") as log:  # stdout redirected to a regular file
        subprocess.run([sys.executable, "-c", child], cwd=ROOT, stdout=log, check=True, timeout=120)
    check_sd(load(tmp_path / "log"))


# ---- regular files: mode, owner, stale temporary files -----------------------------------------------------


@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o444])
def test_resave_keeps_the_file_mode(tmp_path, mode):
    path = tmp_path / "ckpt.pt"
    save(sd(), path)
    os.chmod(path, mode)
    save(sd(), path)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    check_sd(load(path))


@posix_only
def test_resave_through_a_symlink_keeps_link_and_mode(tmp_path):
    target = tmp_path / "real.pt"
    save([1], target)
    os.chmod(target, 0o600)
    os.symlink(target, tmp_path / "link.pt")
    save(sd(), tmp_path / "link.pt")
    assert os.path.islink(tmp_path / "link.pt") and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    check_sd(load(target))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing a file's owner needs root")
def test_resave_as_root_keeps_the_owner(tmp_path):
    path = tmp_path / "ckpt.pt"
    save(sd(), path)
    os.chown(path, 12345, 23456)
    save(sd(), path)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (12345, 23456)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@posix_only
def test_stale_temporary_files_of_dead_writers_are_removed(tmp_path):
    host = SFiles._HOST
    stale = tmp_path / f".ckpt.pt.{host}-{dead_pid()}.0123abcd.tmp"
    live = tmp_path / f".ckpt.pt.{host}-{os.getppid()}.0123abcd.tmp"  # a writer that is still running
    other_host = tmp_path / f".ckpt.pt.ffffffff-{dead_pid()}.0123abcd.tmp" if host != "ffffffff" else live
    other_file = tmp_path / f".other.pt.{host}-{dead_pid()}.0123abcd.tmp"
    for p in (stale, live, other_host, other_file):
        p.write_bytes(b"partial")
    save(sd(), tmp_path / "ckpt.pt")
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.pt", live.name, other_host.name, other_file.name])


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_saves_leave_nothing_after_the_next_save(tmp_path):
    path = tmp_path / "ckpt.pt"
    child = textwrap.dedent(f"""
        import clgrad
        w = clgrad.zeros(2_000_000)
        i = 0
        while True:
            i += 1
            clgrad.save({{"step": i, "w": w}}, {str(path)!r})
            if i == 1:
                print("saved", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"saved"
        time.sleep(0.2)  # several saves of 8 MB: the kill lands in the middle of one, or between two
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    save(sd(), path)
    assert os.listdir(tmp_path) == ["ckpt.pt"]


# ---- file objects -------------------------------------------------------------------------------------------


class Stream:
    """A pipe-like reader: read() only, never seekable; counts what it hands out."""

    def __init__(self, data):
        self.inner = io.BytesIO(data) if isinstance(data, bytes) else data
        self.served = 0

    def read(self, n=-1):
        out = self.inner.read(n)
        self.served += len(out)
        return out

    def seekable(self):
        return False


def test_file_objects(tmp_path):
    with open(tmp_path / "f.pt", "wb") as out:
        save(sd(), out)
    with open(tmp_path / "f.pt", "rb") as f:
        check_sd(load(f))
    with open(tmp_path / "f.pt", "rb") as f:
        check_sd(load(Stream(f)))
    with open(tmp_path / "f.pt", "rb", buffering=0) as f:
        check_sd(load(f))
    buf = io.BytesIO(b"prefix")
    buf.seek(6)
    save(sd(), buf)
    buf.seek(6)
    check_sd(load(buf))
    with open(tmp_path / "t.txt", "w") as text, pytest.raises(TypeError):
        save(sd(), text)


def test_a_stream_is_read_no_further_than_the_checkpoint():
    data = checkpoint_bytes()
    stream = Stream(data + b"next message")
    check_sd(load(stream))
    assert stream.served == len(data)


# ---- hostile streams and headers -------------------------------------------------------------------------------


@posix_only
def test_endless_stream_of_zeros_fails_fast_with_bounded_memory():
    """``cat /dev/zero | python -c "clgrad.load(sys.stdin.buffer)"`` once read everything (5 GB) first."""
    writer = "import sys\nw = sys.stdout.buffer\nwhile True:\n    w.write(bytes(1 << 20))"
    for prefix in (b"", (1000).to_bytes(8, "little"), (2**40).to_bytes(8, "little"),
                   (SF.MAX_HEADER - 8).to_bytes(8, "little") + b"{"):
        code = f"import sys; sys.stdout.buffer.write({prefix!r})\n{writer}"
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        try:
            with pytest.raises(CheckpointError):
                load(proc.stdout)
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
        assert time.perf_counter() - start < 10
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        grown_mb = grown / (2**20 if sys.platform == "darwin" else 2**10)  # bytes on macOS, KB on Linux
        assert grown_mb < 4 * SF.MAX_HEADER / 2**20 + 50


def test_header_over_the_cap_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.pt"
    n = SF.MAX_HEADER + 8
    with open(path, "wb") as f:
        f.write(n.to_bytes(8, "little") + b"{")
        f.truncate(n + 64)  # sparse: the file is long enough for the header it claims
    with pytest.raises(CheckpointError, match="over clgrad's limit of 16777216 bytes") as info:
        load(path)
    assert "141 KB" in str(info.value)


def test_real_headers_are_far_below_the_cap():
    """A ResNet-50-like state_dict (320 tensors, its real key names) with an Adam-like state: the header must fit
    with a wide margin. The tensors are small (the header depends on names and shapes, not on the data)."""
    stages = [f"layer{i}.{b}" for i, n in enumerate((3, 4, 6, 3), 1) for b in range(n)]
    keys = ["conv1.weight", *(f"bn1.{k}" for k in ("weight", "bias", "running_mean", "running_var"))]
    for block in stages:
        for j in (1, 2, 3):
            keys += [f"{block}.conv{j}.weight"] + [f"{block}.bn{j}.{k}" for k in
                                                   ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")]
    keys += ["fc.weight", "fc.bias"]
    model = {k: clgrad.zeros(2, 2, 3, 3) for k in keys}
    state = {i: {"step": clgrad.tensor(10.0), "exp_avg": t, "exp_avg_sq": t} for i, t in enumerate(model.values())}
    groups = [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "params": list(range(len(model)))}]
    buf = io.BytesIO()
    save({"model": model, "optimizer": {"state": state, "param_groups": groups}, "epoch": 90}, buf)
    header = int.from_bytes(buf.getvalue()[:8], "little")
    assert header * 50 < SF.MAX_HEADER, header


def test_error_messages_are_capped():
    name = "x" * 10_000_000
    header = ('{"' + name + '": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}}').encode()
    for data in (len(header).to_bytes(8, "little") + header + b"\0" * 4,
                 len(header).to_bytes(8, "little") + header.replace(b"F33", b"F32") + b"\0"):
        with pytest.raises(CheckpointError) as info:
            load(io.BytesIO(data))
        assert len(str(info.value)) < 2000


def test_truncated_stream_is_an_error():
    data = checkpoint_bytes()
    for cut in (0, 5, 8, 20, len(data) - 1):
        with pytest.raises(CheckpointError, match="truncated"):
            load(Stream(data[:cut]))
    np.testing.assert_array_equal(to_numpy(load(Stream(data))["w"]), np.arange(6.0).reshape(2, 3))
