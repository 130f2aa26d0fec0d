"""The one kernel cache: render a Mako template, build it once per device, keep the kernel object.

Keys are (template, kernel name, render parameters, argument types); the rendered source plus build options plus the
device identity also key an on-disk binary cache, so the next process skips the compiler.
``CLGRAD_NO_CACHE=1`` turns the disk cache off; ``clear()`` empties the in-memory caches.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path

from mako.lookup import TemplateLookup

from ... import __version__
from . import runtime

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"
_lookup = TemplateLookup(directories=[str(KERNEL_DIR)], strict_undefined=True, input_encoding="utf-8")
BUILD_OPTIONS = ""
stats = {"builds": 0, "disk_hits": 0}


def render(template: str, **params) -> str:
    """Render ``kernels/<template>.cl.mako`` with every variable passed explicitly."""
    return _lookup.get_template(f"{template}.cl.mako").render(**params)


def get_kernel(dev: runtime.CLDevice, template: str, name: str, arg_dtypes: tuple, params: dict):
    """The kernel ``name`` from ``template`` rendered with ``params``, built for ``dev`` once.

    ``arg_dtypes`` are pyopencl's scalar argument types (None for buffers), set once so that
    calls skip argument inspection.
    """
    # the argument types are part of the key: a cached kernel carries the scalar types set on it
    key = (template, name, tuple(sorted(params.items())), tuple(arg_dtypes))
    kernel = dev.kernels.get(key)
    if kernel is None:
        import pyopencl as cl

        source = render(template, name=name, **params)
        program = _build(dev, source, name)
        kernel = cl.Kernel(program, name)
        kernel.set_scalar_arg_dtypes(list(arg_dtypes))
        dev.kernels[key] = kernel
    return kernel


def clear() -> None:
    """Forget every built kernel on every device (the disk cache stays)."""
    for dev in runtime.devices():
        dev.kernels.clear()


def cache_dir() -> Path | None:
    if os.environ.get("CLGRAD_NO_CACHE", "") not in ("", "0"):
        return None
    root = os.environ.get("CLGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "clgrad"
    )
    return Path(root) / "kernels"


def _build(dev: runtime.CLDevice, source: str, name: str):
    import pyopencl as cl

    p = dev.props
    ident = "\0".join([source, BUILD_OPTIONS, p.platform, p.platform_version, p.name, p.driver_version, __version__])
    digest = hashlib.sha256(ident.encode()).hexdigest()
    folder = cache_dir()
    path = folder / f"{digest}.bin" if folder is not None else None
    if path is not None and path.exists():
        try:
            program = cl.Program(dev.context, [dev.cl_device], [path.read_bytes()]).build(BUILD_OPTIONS)
            stats["disk_hits"] += 1
            return program
        except Exception:  # a stale or foreign binary: rebuild from source and overwrite it
            pass
    try:
        with warnings.catch_warnings():
            # compiler remarks (e.g. PoCL's about constant operands in generated code) are not user-facing
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(dev.context, source).build(BUILD_OPTIONS)
    except cl.RuntimeError as exc:
        raise RuntimeError(
            f"clgrad internal error: building kernel {name} failed on {dev.describe()}:\n{exc}\n--- source ---\n{source}"
        ) from None
    stats["builds"] += 1
    if path is not None:
        _store(path, program)
    return program


def _store(path: Path, program) -> None:
    import pyopencl as cl

    try:
        binary = program.get_info(cl.program_info.BINARIES)[0]
        if not binary:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(binary)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except Exception:  # the disk cache is an optimisation; never fail an op because of it
        pass
