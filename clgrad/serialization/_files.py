"""Where checkpoint bytes go and come from: atomic writes that keep a file's mode and owner, streams into FIFOs and
devices, stale temporary files of killed writers, and bounded reads from files and streams."""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import secrets
import socket
import stat

from ._format import bad, header_fits, refusal

CHUNK = 1 << 24  # a stream is read 16 MiB at a time, so memory grows with the data that arrives, not what's declared
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]  # pids mean nothing on another machine


# ---- save -------------------------------------------------------------------------------------


def write_path(path, chunks: list) -> None:
    """Write ``chunks`` to ``path``: atomically for a regular file (new or replaced), streamed into anything else.

    A FIFO, a character device (``/dev/null``) or a magic link such as ``/dev/stdout`` is opened and written in
    place as ``torch.save`` does; renaming a temporary file over it would replace the device with a regular file.
    """
    path = os.fspath(path)
    try:
        st = os.stat(path)  # through symlinks
    except FileNotFoundError:
        st = None
    real = os.path.realpath(path)  # a symlink's target, as open(path, "wb") would write
    if st is not None and not (stat.S_ISREG(st.st_mode) and _same_file(real, st)):
        with open(path, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        return
    _atomic_write(real, chunks, st)


def _same_file(real: str, st: os.stat_result) -> bool:
    """Whether ``real`` is the file ``st`` describes: ``/proc/self/fd/1`` may resolve to a pipe's name or a deleted
    file's, which a rename would not reach."""
    try:
        other = os.stat(real)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _atomic_write(path: str, chunks: list, old: os.stat_result | None) -> None:
    """The data goes to a temporary file in the same directory, is fsynced and renamed over ``path``, so a crash
    leaves the old or the new checkpoint, never half of one. A replaced file's mode (and owner, where permitted)
    is kept."""
    directory, base = os.path.split(path)
    remove_stale_temps(directory, base)
    tmp = os.path.join(directory, f".{base}.{_HOST}-{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # 0o666 (not tempfile's 0o600) gives a new checkpoint the permissions a plain open() would; a replaced one
    # starts private and gets the old file's mode before any data is written
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600 if old else 0o666)
    try:
        if old is not None:
            _copy_owner_and_mode(fd, tmp, old)
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _copy_owner_and_mode(fd: int, tmp: str, old: os.stat_result) -> None:
    if hasattr(os, "fchown") and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)  # root may; others may keep the group if they belong to it
        except OSError:
            with contextlib.suppress(OSError):
                os.fchown(fd, -1, old.st_gid)
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which may clear set-id bits
    else:
        os.chmod(tmp, stat.S_IMODE(old.st_mode))


def remove_stale_temps(directory: str, base: str) -> None:
    """Remove the temporary files of earlier saves to ``base`` whose writer (on this machine) was killed."""
    if os.name != "posix":  # os.kill(pid, 0) sends CTRL_C_EVENT on Windows: never probe a pid there
        return
    pattern = re.compile(re.escape(f".{base}.{_HOST}-") + r"(\d+)\.[0-9a-f]{8}\.tmp")
    prefix = f".{base}.{_HOST}-"
    try:
        with os.scandir(directory or ".") as it:
            stale = [e.path for e in it if e.name.startswith(prefix) and (m := pattern.fullmatch(e.name))
                     and not _alive(int(m.group(1))) and e.is_file(follow_symlinks=False)]
    except OSError:
        return
    for name in stale:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or a pid we can't ask about: leave its file alone
    return True


def _fsync_dir(directory: str) -> None:
    # makes the rename itself durable; not possible on every platform (Windows can't open a directory)
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- load -------------------------------------------------------------------------------------


@contextlib.contextmanager
def opened(f):
    """(binary file, bytes from the current position to the end or None for a stream, name for messages)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            st = os.fstat(fh.fileno())
            yield fh, st.st_size if stat.S_ISREG(st.st_mode) else None, os.fspath(f)  # a FIFO is a stream
        return
    if not hasattr(f, "read"):
        raise TypeError(f"load(): f must be a path or a binary file object, not {type(f).__name__}")
    fname = str(getattr(f, "name", "<file object>"))
    if not (hasattr(f, "seekable") and f.seekable()):
        yield f, None, fname
        return
    start = f.tell()
    size = f.seek(0, io.SEEK_END) - start
    f.seek(start)
    yield f, size, fname


def read_exact(fh, n: int, fname: str, what: str, known: bool = False):
    """``n`` bytes or a truncation error. ``known``: the file has been measured to hold them, so the buffer is
    allocated at once; otherwise (a stream, whose header may lie) it grows with what arrives, in bounded chunks."""
    if known and hasattr(fh, "readinto"):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = fh.readinto(view[got:])
            if not k:
                raise bad(fname, f"the file is truncated (reading {what})")
            got += k
        return buf
    parts = bytearray()
    while len(parts) < n:
        data = fh.read(min(CHUNK, n - len(parts)))
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"load(): the file must be opened in binary mode ('rb'), got {type(data).__name__} data")
        if not data:
            raise bad(fname, f"the file is truncated (reading {what})")
        parts += data
    return parts


def read_checkpoint(fh, size: int | None, fname: str):
    """The raw JSON header, read after its length is checked, so neither a hostile length nor an endless stream
    (``cat /dev/zero``) makes ``load`` read more than ``MAX_HEADER`` bytes before the header is validated."""
    if size is not None and size < 8:
        raise bad(fname, f"the file is truncated or empty ({size} bytes); a checkpoint starts with an 8-byte header")
    head = bytes(read_exact(fh, 8, fname, "the header length"))
    n = int.from_bytes(head, "little")
    raw = read_exact(fh, n, fname, "the header") if header_fits(n, size) else b""
    if raw[:1] != b"{":
        raise bad(fname, refusal(head, n, size))
    return raw
