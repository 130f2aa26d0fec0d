"""Every backend implements every member of the ``Backend`` protocol with the protocol's call signature, and the
backends stay below the layers that use them."""
from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

import clgrad
from clgrad.backends.cpu import CPUBackend
from clgrad.backends.interface import Backend, FusedConv, FusedOptim, FusedRNN
from clgrad.backends.opencl.backend import OpenCLBackend


def _members(protocol) -> dict:
    """name -> the protocol's function (None for a data member)."""
    found = {name: None for name in getattr(protocol, "__annotations__", {})}
    for name, value in vars(protocol).items():
        if inspect.isfunction(value) and not name.startswith("_"):
            found[name] = value
    return found


def _params(fn, bound: bool) -> list:
    params = list(inspect.signature(fn).parameters.values())
    if not bound:
        params = params[1:]  # the protocol's own ``self``
    return [(p.name, p.kind, p.default) for p in params]


def _check(impl, protocol) -> None:
    for name, spec in _members(protocol).items():
        assert hasattr(impl, name), f"{type(impl).__name__} lacks {name}"
        if spec is not None:
            assert _params(getattr(impl, name), bound=True) == _params(spec, bound=False), name


@pytest.mark.parametrize("backend", [CPUBackend(), OpenCLBackend()], ids=["cpu", "opencl"])
def test_backend_implements_protocol(backend):
    _check(backend, Backend)
    for attr, protocol in (("fused_optim", FusedOptim), ("fused_rnn", FusedRNN), ("fused_conv", FusedConv)):
        capability = getattr(backend, attr)
        if capability is not None:
            _check(capability, protocol)


def test_a_missing_or_different_primitive_fails():
    cpu = CPUBackend()
    members = {n: getattr(cpu, n) for n in _members(Backend)}
    partial = type("Partial", (), {n: f for n, f in members.items() if n != "reduce"})()
    with pytest.raises(AssertionError, match="lacks reduce"):
        _check(partial, Backend)
    different = type("Different", (), dict(members, reduce=lambda op, src, dims, out: None))()
    with pytest.raises(AssertionError, match="reduce"):
        _check(different, Backend)


def test_opencl_capabilities_are_objects():
    backend = OpenCLBackend()
    assert backend.fused_optim is not None and backend.fused_rnn is not None
    assert CPUBackend.fused_optim is None and CPUBackend.fused_rnn is None


def test_no_upward_imports():
    """No module in clgrad/backends or clgrad/kernels imports the Tensor, ops, autograd or nn."""
    root = pathlib.Path(clgrad.__file__).parent
    upward = ("clgrad.tensor", "clgrad.ops", "clgrad.autograd", "clgrad.nn")
    for path in [*root.joinpath("backends").rglob("*.py"), *root.joinpath("kernels").rglob("*.py")]:
        package = "clgrad." + ".".join(path.relative_to(root).parent.parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = ".".join(filter(None, [base, node.module])) if node.level else node.module
                names = [target + "." + a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert name != "clgrad" and not name.startswith(upward), f"{path.name} imports {name}"
