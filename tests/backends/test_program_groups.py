"""Program groups (clgrad/backends/opencl/groups.py): kernels of several templates built as one program compute
exactly what they compute built alone, a member that does not compile leaves the others working, and the shipped
table still renders."""
from __future__ import annotations

import numpy as np
import pytest

import clgrad
from clgrad.backends.opencl import group_table, groups, programs, runtime


@pytest.fixture
def cl_dev(device):
    if device == "cpu":
        pytest.skip("OpenCL only")
    return runtime.get(int(device.split(":")[1]))


def work(device):
    """Ops whose kernels clash when naively concatenated: two elementwise bundles (same kernel and helper names,
    different layouts), and reduce and softmax kernels (both #define ACC and IDX)."""
    g = np.random.default_rng(1)
    x = clgrad.tensor(g.standard_normal((5, 7)).astype(np.float32), device=device)
    y = clgrad.tensor(g.standard_normal((7, 5)).astype(np.float32), device=device)
    return [x + 1.5, x * y.t(), x.sum(1), clgrad.nn.functional.log_softmax(x, 1)]


def run(device, monkeypatch, grouped: str, table=None) -> list:
    """``work`` with groups on or off and ``table`` as the group table, from empty kernel caches."""
    monkeypatch.setenv("CLGRAD_PROGRAM_GROUPS", grouped)
    if table is not None:
        monkeypatch.setattr(group_table, "GROUPS", table)
        monkeypatch.setattr(groups, "_index", None)
    programs.clear()
    return [t.cpu().numpy() for t in work(device)]


@pytest.fixture
def recorded(cl_dev, device, monkeypatch):
    """(results of ``work`` built kernel by kernel, the members it requested)."""
    monkeypatch.setattr(programs, "_recording", [])
    expected = run(device, monkeypatch, "0")
    members = tuple(dict.fromkeys(programs._recording))
    monkeypatch.setattr(programs, "_recording", None)
    yield expected, members
    monkeypatch.undo()
    programs.clear()
    groups._index = None


def test_grouped_kernels_compute_the_same(cl_dev, device, monkeypatch, recorded):
    expected, members = recorded
    assert len({m[0] for m in members}) >= 3  # several templates
    got = run(device, monkeypatch, "1", {"test": members})
    built = programs._groups_built[(cl_dev.index, "test")]
    assert set(built) == set(members)
    assert len({id(program) for program, _ in built.values()}) == 1  # one program for all of them
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_failing_member_falls_back_to_single_builds(cl_dev, device, monkeypatch, recorded):
    expected, members = recorded
    # an elementwise member whose expression does not compile: the group's program fails as a whole
    template, _, items = next(m for m in members if m[0] == "elementwise")
    bad = {k: v for k, v in items if k not in ("op", "op_dtype", "bundle")}  # a fused kernel's signature
    bad["kernels"] = (("broken_float", "no_such_function(x)"),)
    broken = (template, "broken_float", tuple(sorted(bad.items())))
    got = run(device, monkeypatch, "1", {"test": members + (broken,)})
    assert programs._groups_built[(cl_dev.index, "test")] == {}
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_groups_off_by_default_except_pocl(cl_dev, monkeypatch):
    monkeypatch.delenv("CLGRAD_PROGRAM_GROUPS", raising=False)
    assert programs._groups_on(cl_dev) == (cl_dev.props.platform == "Portable Computing Language")


def test_shipped_table_renders():
    """A member whose template no longer takes its parameters would silently be built alone: re-record the
    table (python bench/startup.py --record-groups) when this fails."""
    for members in group_table.GROUPS.values():
        for template, name, items in members:
            programs.render(template, name=name, **programs.render_params(template, dict(items)))
            assert groups.groups_of((template, name, items))


def test_shipped_groups_build(cl_dev):
    """Each shipped group compiles as its combined programs, every member in them: a member whose source clashes
    with another's once concatenated (a helper or a macro of the same name, a macro #undef'd between members that a
    later member relies on) fails its whole program quietly, and its kernels are then built one by one."""
    if not programs._groups_on(cl_dev):
        pytest.skip("groups are built on PoCL only")
    for group, members in group_table.GROUPS.items():
        built = programs.build_group(cl_dev, members, group)
        assert set(built) == set(members), f"{group}: {sorted(m[1] for m in set(members) - set(built))}"


def test_shipped_table_survives_a_new_op(monkeypatch):
    """A recorded elementwise member names its op and signature, not its bundle's kernels: after an op is added to
    the table every member still renders, the unary float bundles now include the new op, and no recorded key
    changed (so the workloads still request exactly what the table lists)."""
    from clgrad.registry.elementwise import OPS, EwOp

    monkeypatch.setitem(OPS, "twice_for_test", EwOp(1, "a + a", lambda a: a + a))
    monkeypatch.setattr(programs, "_BUNDLES", {})
    unary_float = 0
    for members in group_table.GROUPS.values():
        for template, name, items in members:
            params = dict(items)
            assert "kernels" not in params  # nothing in the table depends on the op table's expressions
            source = programs.render(template, name=name, **programs.render_params(template, params))
            if template == "elementwise" and len(params["args"]) == 1 and params["compute"] == "float":
                assert "twice_for_test_float(" in source
                unary_float += 1
    assert unary_float


def test_recurrent_ops_stay_out_of_bundles():
    """nn.RNN/LSTM's ops are built alone: compiling them into every three-operand bundle cost every other op."""
    from clgrad import dtypes as D

    assert programs.bundle_of("rnn_tanh", D.float32) == ("rnn_tanh",)
    assert not any(o.startswith(("rnn_", "lstm_")) for o in programs.bundle_of("clamp", D.float32))


SNIPPET = """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ACC float  // a macro
typedef struct { int a; } pair_t;
struct tagged { int b; };
__constant float TABLE[2] = {1, 2};
/* a comment with a fake(function) { } */
inline ACC combine(ACC a, ACC b) { return a + b; }
__kernel __attribute__((reqd_work_group_size(2, 1, 1)))
void k_float(__global ACC *out) { if (1) { out[0] = combine(1, 2); } }
__kernel void k2_float(__global ACC *out) { out[0] = TABLE[1]; }
"""


def test_file_scope_names():
    names, kernels = groups.file_scope_names(SNIPPET)
    assert names == ["pair_t", "tagged", "TABLE", "combine", "k_float", "k2_float"]
    assert kernels == ["k_float", "k2_float"]
    assert groups.pragmas(SNIPPET) == ()  # enabling fp64 changes no float code: it does not split a group
    fp16 = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable"
    assert groups.pragmas(SNIPPET + fp16 + "\n") == (fp16,)


def test_combine_renames_per_member():
    source, renames = groups.combine([SNIPPET, SNIPPET])
    assert renames == [{"k_float": "k_float__g0", "k2_float": "k2_float__g0"},
                       {"k_float": "k_float__g1", "k2_float": "k2_float__g1"}]
    assert "#define combine combine__g1\n" in source and source.count("#undef ACC\n") == 2


def test_shipped_table_is_current(cl_dev, device, monkeypatch):
    """The MNIST training step (bench/train.py's, the workload the table was recorded from) requests only kernels
    the table lists. Parameters of a launcher that changed leave the table stale: those kernels are then built
    alone, correct but slower to start. Re-record it with ``python bench/startup.py --record-groups`` when this
    fails. The table was recorded on PoCL with 2 compute units (tiling and row plans depend on the count)."""
    import os
    import sys

    if cl_dev.props.platform != "Portable Computing Language" or cl_dev.props.compute_units != 2:
        pytest.skip("the shipped table was recorded on a 2-compute-unit PoCL device")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
    import train

    monkeypatch.setenv("CLGRAD_PROGRAM_GROUPS", "0")
    programs.clear()
    monkeypatch.setattr(programs, "_recording", [])
    step = train.mnist_step(clgrad, device, 64)
    for _ in range(2):
        step()
    clgrad.opencl.synchronize()
    requested = set(programs._recording)
    monkeypatch.setattr(programs, "_recording", None)
    programs.clear()
    listed = {m for members in group_table.GROUPS.values() for m in members}
    missing = sorted(f"{t}/{n}" for t, n, _ in requested - listed)
    assert not missing, f"kernels the MNIST step requests that the group table lacks: {missing}"


def test_shared_member_comes_from_a_built_group_else_the_smallest(cl_dev, monkeypatch):
    """A kernel listed in two groups (the MNIST and RNN steps share matmul) is taken from a group already built on
    the device, and otherwise builds the smaller group: the RNN's first step asked for the shared matmul first and
    built the MNIST group of 30 kernels for it."""
    if not programs._groups_on(cl_dev):
        pytest.skip("groups are built on PoCL only")
    shared, big_only, small_only = (("t", n, ()) for n in ("shared", "big_only", "small_only"))
    monkeypatch.setattr(group_table, "GROUPS", {"big": (big_only, shared, ("t", "x", ())), "small": (shared, small_only)})
    monkeypatch.setattr(groups, "_index", None)
    monkeypatch.setattr(programs, "_groups_built", {})
    built = []

    def fake_build(dev, members, label):
        built.append(label)
        return {m: (label, m[1]) for m in members}

    monkeypatch.setattr(programs, "build_group", fake_build)
    assert groups.groups_of(shared) == ("big", "small")
    assert programs._grouped(cl_dev, shared) == ("small", "shared") and built == ["small"]
    assert programs._grouped(cl_dev, big_only) == ("big", "big_only") and built == ["small", "big"]
    assert programs._grouped(cl_dev, shared) == ("big", "shared")  # both built: the first one listed
    monkeypatch.setattr(programs, "_groups_built", {})
    programs._grouped(cl_dev, big_only)
    assert programs._grouped(cl_dev, shared) == ("big", "shared")  # the built group, though the larger
    monkeypatch.setattr(groups, "_index", None)
