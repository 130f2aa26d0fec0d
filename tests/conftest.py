"""Every test that takes ``device`` runs on cpu and on each OpenCL device present.

``CLGRAD_TEST_DEVICES`` narrows the set, like pyopencl's ``PYOPENCL_TEST``: a comma-separated list of
``cpu`` and case-insensitive substrings of an OpenCL platform, version or device name (``pocl``,
``oclgrind``, ``nvidia``), or ``all``. Unset, it means cpu plus, for each OpenCL implementation (platform)
except simulators, its best device that passed clgrad's health check (backends/opencl/health.py): the one
``CLGRAD_DEVICE=<platform>`` would pick, so two builds of PoCL cost one run of the suite, and a broken ICD on the
machine never fails it. Oclgrind is slow: ``tox -e oclgrind`` selects it for a focused subset.

Named devices (any value but unset) are all selected; one that failed the health check is skipped with its
reason. Verdicts are read or run once, up front (the checks of several devices side by side); xdist workers then
read them from disk.
"""
from __future__ import annotations

import faulthandler
import os

import numpy as np
import pytest

import clgrad
from clgrad.backends.opencl import runtime


def _selected():
    spec = os.environ.get("CLGRAD_TEST_DEVICES", "").strip().lower()
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    params = []
    if not wanted or "cpu" in wanted or "all" in wanted:
        params.append(pytest.param("cpu", id="cpu"))
    chosen = []
    for d in runtime.devices():
        p = d.props
        names = " ".join([p.platform, p.platform_version, p.name, p.vendor]).lower()
        if wanted and "all" not in wanted:
            if not any(w != "cpu" and w in names for w in wanted):
                continue
        elif p.is_simulator and "all" not in wanted:
            continue
        chosen.append(d)
    if not wanted:
        runtime.check_all(chosen)
        best = {}
        for d in sorted((d for d in chosen if d.usable), key=lambda d: d.preference):
            best.setdefault(d.props.platform, d)
        chosen = sorted(best.values(), key=lambda d: d.index)
    for d in chosen:
        p = d.props
        ident = f"opencl{d.index}-" + p.name.split()[0].lower().replace("(", "").replace(")", "")
        params.append(pytest.param(f"opencl:{d.index}", id=ident))
    return params


DEVICES = _selected()


@pytest.fixture(params=DEVICES)
def device(request):
    """A device string: 'cpu' or 'opencl:N'. Devices that failed the health check are skipped with the reason."""
    name = request.param
    if name.startswith("opencl"):
        dev = runtime.get(int(name.split(":")[1]))
        if not dev.usable:
            pytest.skip(f"{dev.describe()} cannot build kernels: {dev.unusable_reason}")
    return name


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield


@pytest.fixture(autouse=True)
def _deferred_checks():
    """Device-side bounds checks report at the next host read or synchronize: one a test left unread fails that
    test, instead of surfacing in whichever test syncs next."""
    yield
    from clgrad.backends.opencl.nn import check_pending

    check_pending()


def pytest_report_header(config):
    lines = ["clgrad test devices: " + ", ".join(p.values[0] for p in DEVICES)]
    for d in runtime.devices():
        lines.append(f"  {d.describe()}: {d.health or 'not checked (not selected)'}")
    return lines


def _selected_cl() -> list:
    return [runtime.get(int(p.values[0].split(":")[1])) for p in DEVICES if p.values[0].startswith("opencl")]


def fp64_ok(device) -> bool:
    return device == "cpu" or clgrad.opencl.get_device_properties(device).fp64


def pytest_configure(config):
    """``CLGRAD_FAULT_LOG=PREFIX``: each process (each xdist worker) writes the Python stacks of all its threads to
    PREFIX.<worker> if it crashes, which xdist otherwise reports only as "worker crashed"."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the workers then read the verdicts from disk
        runtime.check_all(_selected_cl())
    prefix = os.environ.get("CLGRAD_FAULT_LOG")
    if prefix:
        log = open(f"{prefix}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "w")  # noqa: SIM115 - open for life
        faulthandler.enable(log, all_threads=True)
