"""The device health check: clgrad's own kernels run in a child process, where a crash cannot hurt.

A device whose compiler aborts (an LLVM ``Do not know how to split this operator's operand!`` kills the process),
hangs in ``clFinish`` or builds kernels that compute wrong answers cannot be caught by building a one-line kernel
in-process. So before a device is first used on a machine, ``python -m clgrad._health_probe N`` runs a
representative workload on it (vector rows, half, atomics, reductions, a matmul tile, a program group, a training
step) under a time limit and compares every result with the cpu backend. The verdict is kept on disk, keyed by
platform, device, driver version, host CPU, clgrad version and the kernels' sources, so later processes read a
small JSON file instead.

- ``CLGRAD_HEALTH_CHECK=0`` trusts every device (only a one-line kernel is built in-process, as before).
- ``CLGRAD_HEALTH_TIMEOUT`` is the child's time limit in seconds (default 300; a cold PoCL takes 10-30 s).
- Verdicts live in ``$CLGRAD_CACHE_DIR/health`` (default ``~/.cache/clgrad/health``); ``clgrad.opencl.health_check
  (device, force=True)`` runs the check again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..._version import __version__

try:
    import fcntl
except ImportError:  # not on Windows: there concurrent processes may each check a device
    fcntl = None

PROBE = "clgrad._health_probe"
_CHILD_ENV = "CLGRAD_HEALTH_CHILD"  # set in the child: its devices are trusted, so it never checks recursively
_PACKAGE = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Verdict:
    """Whether a device passed, and if not, the one line that tells why."""

    ok: bool
    reason: str = ""
    seconds: float = 0.0
    checked: str = ""  # "cached", "now", or "skipped" (CLGRAD_HEALTH_CHECK=0 or inside the check's own child)

    def __str__(self) -> str:
        return "healthy" if self.ok else f"unusable: {self.reason}"


def enabled() -> bool:
    return os.environ.get("CLGRAD_HEALTH_CHECK", "1") != "0" and not in_child()


def in_child() -> bool:
    """Whether this process is the health check's own child: it trusts its devices without even a probe build, so
    a case that fails reports the compiler's own error rather than the probe's verdict wrapped in ``require``."""
    return bool(os.environ.get(_CHILD_ENV))


def timeout() -> float:
    try:
        return float(os.environ.get("CLGRAD_HEALTH_TIMEOUT", "300"))
    except ValueError:
        return 300.0


def _host_cpu() -> str:
    """The host CPU's model name and feature flags: machines sold under one name ('AMD EPYC') differ in AVX-512,
    which is exactly what an LLVM without that CPU's model trips over."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return f"{fields.get('model name', platform.machine())} {fields.get('flags', fields.get('Features', ''))}"


def _sources_digest() -> str:
    """A digest of what the check exercises: the kernel templates and the launchers that render them."""
    h = hashlib.sha256()
    for folder in (_PACKAGE / "kernels", _PACKAGE / "backends", _PACKAGE / "backends" / "opencl",
                   _PACKAGE / "registry"):  # backends/: common.py's descriptor and rules
        for path in sorted(folder.glob("*")):
            if path.suffix in (".mako", ".py"):
                h.update(path.name.encode())
                h.update(path.read_bytes())
    h.update((_PACKAGE / "_health_probe.py").read_bytes())
    return h.hexdigest()


_digest_cache: list = []


def key(props) -> str:
    """The verdict's file name: platform, device, driver, host CPU, clgrad version and sources."""
    if not _digest_cache:
        _digest_cache.append(_sources_digest())
    ident = "\0".join([props.platform, props.platform_version, props.name, props.driver_version, _host_cpu(),
                       __version__, _digest_cache[0]])
    return hashlib.sha256(ident.encode()).hexdigest()[:32]


def folder() -> Path:
    root = os.environ.get("CLGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clgrad"
    )
    return Path(root) / "health"


def _read(path: Path) -> Verdict | None:
    try:
        data = json.loads(path.read_text())
        return Verdict(bool(data["ok"]), str(data.get("reason", "")), float(data.get("seconds", 0)), "cached")
    except (OSError, ValueError, KeyError, TypeError):  # absent, half-written by a killed process, or foreign
        return None


def _write(path: Path, verdict: Verdict, describe: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        record = {"ok": verdict.ok, "reason": verdict.reason, "seconds": round(verdict.seconds, 2),
                  "device": describe, "checked_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)
    except OSError:  # a read-only home: the verdict then lives for this process only
        pass


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive lock beside ``path``, so concurrent processes (pytest workers) check a device once."""
    try:
        if fcntl is None:
            raise OSError("no file locks here")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def check(devs: list, force: bool = False) -> dict:
    """Verdicts for ``devs`` (runtime.CLDevice), by index: from disk when known, else from child processes run
    side by side. Devices with one key (two identical GPUs) share one check. Each device's ``health`` is set too."""
    by_path: dict = {}
    for dev in devs:
        by_path.setdefault(folder() / f"{key(dev.props)}.json", []).append(dev)
    found = {path: None if force else _read(path) for path in by_path}
    pending = sorted(path for path, v in found.items() if v is None)  # locks always taken in one order
    if pending:
        with contextlib.ExitStack() as stack:
            for path in pending:
                stack.enter_context(_locked(path))
            if not force:  # another process may have checked while we waited for the lock
                found.update({path: _read(path) for path in pending})
            todo = [path for path in pending if found[path] is None]
            for path, verdict in zip(todo, _run([by_path[path][0] for path in todo])):
                found[path] = verdict
                _write(path, verdict, by_path[path][0].describe())
    verdicts = {}
    for path, group in by_path.items():
        for dev in group:
            dev.health = verdicts[dev.index] = found[path]
    return verdicts


def _run(devs: list) -> list[Verdict]:
    """Run the probe for each device in its own child, all at once, and read the verdicts."""
    limit = timeout()
    for dev in devs:
        print(f"clgrad: checking {dev.describe()} (clgrad's kernels in a child process, up to {limit:.0f} s; "
              "once per driver, cached)", file=sys.stderr, flush=True)
    env = dict(os.environ, **{_CHILD_ENV: "1"})
    env.pop("CLGRAD_DEVICE", None)
    env.pop("CLGRAD_LAUNCH_BLOCKING", None)
    # the child imports this very clgrad (a checkout run in place, or an installed one)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE.parent), env.get("PYTHONPATH", "")) if p)
    children = []
    start = time.monotonic()
    for dev in devs:
        out = _tempfile()
        proc = subprocess.Popen([sys.executable, "-m", PROBE, str(dev.index)], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        children.append((dev, proc, out))
    verdicts = []
    for dev, proc, out in children:
        try:
            proc.wait(timeout=max(1.0, limit - (time.monotonic() - start)))
            hung = False
        except subprocess.TimeoutExpired:
            hung = True
            _kill(proc)
        out.seek(0)
        text = out.read().decode(errors="replace")
        out.close()
        verdict = _judge(text, proc.returncode, hung, limit, time.monotonic() - start)
        if not verdict.ok:
            print(f"clgrad: {dev.describe()} is unusable: {verdict.reason}", file=sys.stderr, flush=True)
        verdicts.append(verdict)
    return verdicts


def _tempfile():
    return tempfile.TemporaryFile()


def _kill(proc) -> None:
    """Kill the child and anything it started (a compiler subprocess), then reap it."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()


def _judge(text: str, returncode: int | None, hung: bool, limit: float, seconds: float) -> Verdict:
    """The verdict from what the child printed and how it ended."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    cases = [ln[5:] for ln in lines if ln.startswith("case ")]
    where = f" during {cases[-1]!r}" if cases else " before the first case"
    if hung:
        return Verdict(False, f"hung: no result after {limit:.0f} s{where}", seconds, "now")
    if returncode == 0 and lines and lines[-1] == "ok":
        return Verdict(True, "", seconds, "now")
    failed = next((ln[5:] for ln in reversed(lines) if ln.startswith("fail ")), None)
    if failed:
        return Verdict(False, failed, seconds, "now")
    telling = _telling(lines)
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return Verdict(False, f"crashed ({name}){where}: {telling}", seconds, "now")
    return Verdict(False, f"exited with status {returncode}{where}: {telling}", seconds, "now")


def _telling(lines: list[str]) -> str:
    """The one line that tells what went wrong: the LLVM error or assertion, else the last line printed."""
    markers = ("LLVM ERROR", "Assertion", "error:", "fatal", "Error", "Segmentation", "Aborted")
    noise = [ln for ln in lines if not ln.startswith("case ") and not ln.endswith("warnings generated.")]
    for marker in markers:
        found = next((ln for ln in noise if marker in ln), None)
        if found:
            return found[:300]
    return noise[-1][:300] if noise else "no output"
