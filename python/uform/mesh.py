"""The mesh (docs/mesh.md): several processes, on one host or many, in one data-parallel run.

Every process of a run bootstraps with the same folder and job name and its own index, then makes
its trainer over the mesh; each then steps with its own share of every global batch:

    mesh = uform.Mesh.bootstrap(executor, index=rank, count=4, directory="/shared/uform",
                                job="run-17", address="10.0.0.5", trainer_config=dict(seed=1))
    trainer = uform.Trainer.init_ram(executor, mesh=mesh, seed=1)   # member 0's weights everywhere
    result = trainer.on(executor).step(...)                          # this member's share
    trainer.close()
    mesh.close()
"""

from ctypes import addressof, byref, c_void_p
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union
import weakref

from . import _inputs, _structs as S
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


class Mesh:
    """This process's membership of a run. ``close()`` (or leaving a ``with`` block) first closes
    the trainers made over the mesh (each waits for its calls), then leaves the run; peers still
    stepping then see ``PeerLost``. After a collective fails the mesh is broken for good: every
    later step raises ``PeerLost`` naming the first failure; restart from the last checkpoint."""

    def __init__(self) -> None:
        raise TypeError("use uform.Mesh.bootstrap(executor, index=..., count=..., directory=..., job=...)")

    @classmethod
    def bootstrap(
        cls,
        executor: Optional[Executor],
        index: int = 0,
        count: int = 1,
        *,
        directory: Optional[Any] = None,
        job: Optional[str] = None,
        timeout: Optional[float] = None,
        address: Optional[str] = None,
        trainer_config: Optional[Mapping[str, Any]] = None,
        agreement: Union[None, str, Mapping[str, Any]] = None,
    ) -> "Mesh":
        """Joins a run as member ``index`` of ``count`` (count 1: a run with no peers, which needs
        no folder), meeting the others in ``directory``/``job`` (a folder every member can write:
        local for one host, shared for several). ``timeout`` (seconds; None: 120) bounds the wait
        for every member and every collective of a step. ``address`` is where this member's
        collectives listen (None: the host's first non-loopback IPv4 address). ``trainer_config``
        (the settings given to ``Trainer.init_ram``) and ``agreement`` (your own ``key=value``
        pairs, such as the global batch size) must agree between members. Blocks (GIL released)
        until every member is there. Raises ``Timeout`` naming missing members, ``ConfigMismatch``
        naming the field and both values, ``InvalidArgument`` (a bad option, a stale job folder)."""
        from .trainer import _config

        function = "Mesh.bootstrap"
        if executor is not None and not isinstance(executor, Executor):
            raise invalid(function, f"executor: expected a uform.Executor or None, got {type(executor).__name__}")
        runner = calling_thread if executor is None else executor
        options = S.MeshOptions()
        options.host_domain_index = _inputs.non_negative(index, function, "index")
        options.host_domain_count = _inputs.non_negative(count, function, "count")
        keep = []
        if directory is not None:
            options.directory = _inputs.path_bytes(directory, function, "directory")
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
                               raw.members_per_host_domain, raw.members_total, raw.first_member_index)

    def close(self) -> None:
        """Closes the trainers made over the mesh, then leaves the run. Closing twice is a no-op."""
        if getattr(self, "_handle", None) is None:
            return
        for trainer in list(self._trainers):
            trainer.close()
        handle, self._handle = self._handle, None
        lib.uform_mesh_free(handle)

    def __enter__(self) -> "Mesh":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
