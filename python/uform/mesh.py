"""The mesh (docs/mesh.md): several processes, on one host or many, in one data-parallel run.

Every process of a run bootstraps at the same rendezvous (a shared folder, a ``tcp://`` store that
member 0 hosts, or a Redis server) with the same job name and its own index, then makes its trainer
over the mesh; each then steps with its own share of every global batch:

    mesh = uform.Mesh.bootstrap(executor, index=rank, count=4, rendezvous="tcp://10.0.0.5:29501",
                                job="run-17", address="10.0.0.7", trainer_config=dict(seed=1))
    trainer = uform.Trainer.init_ram(executor, mesh=mesh, seed=1)   # member 0's weights everywhere
    result = trainer.on(executor).step(...)                          # this member's share
    trainer.close()
    mesh.close()

Under torchrun, mpirun or srun, ``uform.Mesh.bootstrap(executor, launcher="auto")`` takes the
index, count, job and rendezvous from the launcher's variables (``uform.Mesh.launch()`` shows them).
"""

from ctypes import addressof, byref, c_void_p
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union
import weakref

from . import _inputs, _structs as S
from ._closing import Closing
from ._library import lib
from .enums import GpuClass
from .errors import from_outcome, invalid
from .executor import Executor, calling_thread


@dataclass(frozen=True)
class MeshDescription:
    """The shape of a mesh (``uform_mesh_description_t``). A CPU process counts as one member: its
    index is ``host_domain_index``, and the GPU fields are 0."""

    gpus_per_host_domain: int
    gpus_per_multimem_domain: int
    gpus_per_colocated_domain: int
    host_domain_index: int
    first_gpu_index: int
    multimem_tier: int
    gpu_class: GpuClass
    members_per_host_domain: int
    members_total: int
    first_member_index: int
    launcher: str             # "none" (by hand), "torchrun", "open-mpi", "mpich", "slurm"
    local_member_index: int   # this member among those on its host, as the launcher says
    local_members: int
    overlap: str              # "backward" or "none"


@dataclass(frozen=True)
class MeshLaunch:
    """What a launcher's variables say about this process (``uform_mesh_launch_t``)."""

    launcher: str             # "none" when no launcher's variables are set
    index: int
    count: int
    local_index: int
    local_count: int
    threads: int              # the cores this member may use / the members on its host
    job: str
    rendezvous: str           # "tcp://HOST:PORT", or "" when the variables do not say
    rendezvous_from: str
    variables: str


def _text(value: Any, function: str, argument: str) -> Optional[bytes]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(function, f"{argument}: expected a str, got {type(value).__name__}")
    if "\0" in value:
        raise invalid(function, f"{argument}: contains a NUL character")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise invalid(function, f"{argument}: not encodable as UTF-8 ({error.reason})") from None


def _agreement(value: Union[None, str, Mapping[str, Any]], function: str) -> Optional[bytes]:
    """The caller's "key=value" lines, from a mapping or as text."""
    if value is None or isinstance(value, str):
        return _text(value, function, "agreement")
    if not isinstance(value, Mapping):
        raise invalid(function, f"agreement: expected a mapping or 'key=value' lines, got {type(value).__name__}")
    lines = []
    for key, item in value.items():
        if not isinstance(key, str) or not key or any(c in key for c in "=\n\0"):
            raise invalid(function, f"agreement: key {key!r} must be non-empty text without '=' or newlines")
        text = str(item)
        if any(c in text for c in "\n\0"):
            raise invalid(function, f"agreement[{key!r}]: the value must be one line")
        lines.append(f"{key}={text}")
    return _text("\n".join(lines) + ("\n" if lines else ""), function, "agreement")


class Mesh(Closing):
    """This process's membership of a run. ``close()`` (or leaving a ``with`` block) first closes
    the trainers made over the mesh (each waits for its calls), then leaves the run; peers still
    stepping then see ``PeerLost``. After a collective fails the mesh is broken for good: every
    later step raises ``PeerLost`` naming the first failure; restart from the last checkpoint."""

    def __init__(self) -> None:
        raise TypeError("use uform.Mesh.bootstrap(executor, index=..., count=..., directory=..., job=...)")

    @staticmethod
    def launch() -> MeshLaunch:
        """What the launcher's variables of this process say (torchrun, Open MPI, MPICH / Intel MPI,
        Slurm, read in that order): launcher "none" when none is set. Raises ``InvalidArgument``
        naming variables that contradict each other."""
        raw, outcome = S.MeshLaunch(), S.Outcome()
        if lib.uform_mesh_launch_read(addressof(raw), byref(outcome)) != 0:
            raise from_outcome(outcome)
        return MeshLaunch(lib.uform_mesh_launcher_name(raw.launcher).decode(), raw.index, raw.count, raw.local_index,
                          raw.local_count, raw.threads, raw.job.decode(), raw.rendezvous.decode(),
                          raw.rendezvous_from.decode(), raw.variables.decode())

    @classmethod
    def bootstrap(
        cls,
        executor: Optional[Executor],
        index: Optional[int] = None,
        count: Optional[int] = None,
        *,
        directory: Optional[Any] = None,
        rendezvous: Optional[str] = None,
        job: Optional[str] = None,
        timeout: Optional[float] = None,
        address: Optional[str] = None,
        trainer_config: Optional[Mapping[str, Any]] = None,
        agreement: Union[None, str, Mapping[str, Any]] = None,
        launcher: Optional[str] = None,
        overlap: str = "backward",
    ) -> "Mesh":
        """Joins a run as member ``index`` of ``count`` (None or 1: a run with no peers, which needs
        no rendezvous), meeting the others in ``directory``/``job`` (a folder every member can
        write: local for one host, shared for several) or at ``rendezvous``: "tcp://HOST:PORT"
        (member 0 hosts a small store there while the members meet; HOST names its host) or
        "redis://HOST:PORT" (a Redis server). ``launcher="auto"``: the index, count, job and
        rendezvous left out come from torchrun's, mpirun's or srun's variables. ``timeout``
        (seconds; None: 120) bounds every wait of the bootstrap and every collective of a step.
        ``address`` is where this member's collectives listen (None: the host's first non-loopback
        IPv4 address). ``trainer_config`` (the settings given to ``Trainer.init_ram``) and
        ``agreement`` (your own ``key=value`` pairs, such as the global batch size) must agree
        between members. ``overlap``: "backward" all-reduces the gradients bucket by bucket while
        the backward runs, "none" after it (bit for bit the same). Blocks (GIL released) until every
        member is there. Raises ``Timeout`` naming missing members, ``ConfigMismatch`` naming the
        field and both values, ``PeerLost`` (a tcp:// store's host left), ``InvalidArgument`` (a
        bad option, contradicting launcher variables, a stale job)."""
        from .trainer import _config

        function = "Mesh.bootstrap"
        if executor is not None and not isinstance(executor, Executor):
            raise invalid(function, f"executor: expected a uform.Executor or None, got {type(executor).__name__}")
        runner = calling_thread if executor is None else executor
        options = S.MeshOptions()
        if index is not None:
            options.host_domain_index = _inputs.non_negative(index, function, "index")
        if count is not None:
            options.host_domain_count = _inputs.non_negative(count, function, "count")
        keep = []
        if directory is not None:
            options.directory = _inputs.path_bytes(directory, function, "directory")
        options.rendezvous = _text(rendezvous, function, "rendezvous")
        if launcher not in (None, "none", "auto"):
            raise invalid(function, f"launcher = {launcher!r}: expected None, 'none' or 'auto'")
        options.launcher = 1 if launcher == "auto" else 0
        if overlap not in ("backward", "none"):
            raise invalid(function, f"overlap = {overlap!r}: expected 'backward' or 'none'")
        options.overlap = 1 if overlap == "none" else 0
        options.job = _text(job, function, "job")
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
                raise invalid(function, f"timeout = {timeout!r}: expected a positive number of seconds")
            options.timeout_seconds = float(timeout)
        options.address = _text(address, function, "address")
        options.agreement = _agreement(agreement, function)
        if trainer_config is not None:
            if not isinstance(trainer_config, Mapping):
                raise invalid(function, f"trainer_config: expected the settings as a mapping, got {type(trainer_config).__name__}")
            raw, config_keep = _config(dict(trainer_config), function)
            options.trainer_config = addressof(raw)
            keep += [raw, config_keep]
        handle, outcome = c_void_p(), S.Outcome()
        if lib.uform_mesh_bootstrap(runner._use(function), addressof(options), byref(handle), byref(outcome)) != 0:
            raise from_outcome(outcome)
        mesh = object.__new__(cls)
        mesh._handle, mesh._trainers = handle.value, weakref.WeakSet()
        return mesh

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "the mesh is closed")
        return self._handle

    def describe(self) -> MeshDescription:
        """This member's index, the number of members and (for GPU processes, later) the GPU layout."""
        raw = S.MeshDescription()
        if lib.uform_mesh_describe(self._use("Mesh.describe"), addressof(raw)) != 0:
            raise invalid("Mesh.describe", "uform_mesh_describe refused the mesh")
        return MeshDescription(raw.gpus_per_host_domain, raw.gpus_per_multimem_domain, raw.gpus_per_colocated_domain,
                               raw.host_domain_index, raw.first_gpu_index, raw.multimem_tier, GpuClass(raw.gpu_class),
                               raw.members_per_host_domain, raw.members_total, raw.first_member_index,
                               lib.uform_mesh_launcher_name(raw.launcher).decode(), raw.local_member_index,
                               raw.local_members, "none" if raw.overlap == 1 else "backward")

    def close(self) -> None:
        """Closes the trainers made over the mesh, then leaves the run. Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        for trainer in list(self._trainers):
            trainer.close()
        handle, self._handle = self._handle, None
        lib.uform_mesh_free(handle)
