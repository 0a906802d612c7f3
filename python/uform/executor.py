"""Executors: where a call runs (``uform_executor_t``)."""

import atexit
import weakref
from ctypes import addressof, byref, c_size_t, c_void_p
from typing import Any, Iterable, List, Optional, Union

from . import _structs as S
from ._closing import Closing
from ._inputs import non_negative
from ._library import lib
from .enums import CpuClass, Mood, parse_cpu_class, parse_enum
from .errors import from_outcome, invalid

_live: "weakref.WeakSet[Executor]" = weakref.WeakSet()


class Executor(Closing):
    """Where a verb runs. ``Executor()`` is the calling thread: it owns nothing and runs every call
    inline. ``Executor.for_ram(...)`` starts host threads of its own.

    An executor runs one call at a time: a blocking call that finds it busy raises ``Contended``
    having done nothing, deferred calls queue up (``deferred_limit``) and start in submission order.
    Threads that genuinely overlap take one executor apiece. ``close()`` (or leaving a ``with``
    block) waits for the calls in flight and stops the threads; the executor is unusable after.
    """

    def __init__(self) -> None:
        self._handle: Optional[int] = None
        self._calling = True
        self._closed = False
        self._arenas: List[int] = []  # the binding's own arenas for calls that answer owned arrays
        self._slots: List[Any] = []  # reusable batch-1 text requests (_verbs._TextSlot), an arena each

    @classmethod
    def for_ram(
        cls,
        threads: int = 0,
        cpu_class: Union[None, str, int, CpuClass] = None,
        numa_nodes: Optional[Iterable[int]] = None,
        deferred_limit: int = 0,
    ) -> "Executor":
        """An executor with ``threads`` host threads of its own (0: 7/8 of the cores, at least 1),
        placed on ``numa_nodes`` (None: every node), dispatching the kernels of ``cpu_class``
        (None: the best this CPU runs; a name like ``"haswell"`` or a ``CpuClass``), queueing up to
        ``deferred_limit`` deferred calls (0: 64). Raises ``Unsupported`` for a class this CPU cannot
        run and ``InvalidArgument`` for a NUMA node that does not exist."""
        function = "Executor.for_ram"
        thread_count = non_negative(threads, function, "threads")
        limit = non_negative(deferred_limit, function, "deferred_limit")
        options = S.RamOptions()
        options.cpu_class = parse_cpu_class(cpu_class, function)
        nodes = None
        if numa_nodes is not None:
            if isinstance(numa_nodes, (str, bytes)) or not hasattr(numa_nodes, "__iter__"):
                raise invalid(function, f"numa_nodes: expected a list of node numbers, got {type(numa_nodes).__name__}")
            numbers = [non_negative(node, function, f"numa_nodes[{i}]") for i, node in enumerate(numa_nodes)]
            nodes = (c_size_t * max(len(numbers), 1))(*numbers)
            options.memory_domains = addressof(nodes)
            options.memory_domains_count = len(numbers)
        outcome = S.Outcome()
        handle = c_void_p()
        if lib.uform_executor_for_ram(byref(options), thread_count, limit, byref(handle), byref(outcome)) != 0:
            raise from_outcome(outcome)
        executor = cls()
        executor._handle, executor._calling = handle.value, False
        _live.add(executor)
        return executor

    @property
    def is_calling_thread(self) -> bool:
        """True for the calling-thread executor (``Executor()``)."""
        return self._calling

    @property
    def threads(self) -> int:
        """The compute threads a call on this executor uses (1 for the calling thread)."""
        return lib.uform_executor_threads(self._use("Executor.threads"))

    @property
    def cpu_class(self) -> CpuClass:
        """The CPU class whose kernels calls on this executor dispatch to."""
        return CpuClass(lib.uform_executor_cpu_class(self._use("Executor.cpu_class")))

    def drain(self, mood: Union[str, int, Mood] = "parked") -> None:
        """Waits for every call submitted before it (the GIL is released meanwhile), then makes idle
        threads ``"parked"`` (sleep) or ``"spinning"`` (poll: faster wake-up, a core each)."""
        function = "Executor.drain"
        value = parse_enum(Mood, mood, function, "mood")
        outcome = S.Outcome()
        if lib.uform_executor_drain(self._use(function), int(value), byref(outcome)) != 0:
            raise from_outcome(outcome)

    def _use(self, function: str) -> Optional[int]:
        if self._closed:
            raise invalid(function, "the executor is closed")
        return self._handle

    def _acquire_arena(self, function: str) -> int:
        """One of the binding's own arenas for a call (made on first need, reused after)."""
        handle = self._use(function)
        try:
            return self._arenas.pop()
        except IndexError:
            pass
        return self._new_arena(function)

    def _new_arena(self, function: str) -> int:
        """A new arena of the binding's own. A reused batch-1 request (``_slots``) gets one of these
        rather than one from ``_arenas``, which a large call may have grown: its pages would stay
        mapped for batch-1 calls only, and the kernel may back them with huge pages later (a
        resident set that grows after the warm-up)."""
        handle = self._use(function)
        arena, outcome = c_void_p(), S.Outcome()
        if lib.uform_arena_for_executor(handle, byref(arena), byref(outcome)) != 0:
            raise from_outcome(outcome)
        return arena.value

    def _release_arena(self, arena: int) -> None:
        if self._closed:
            lib.uform_arena_free(arena)
        else:
            self._arenas.append(arena)

    def close(self) -> None:
        """Waits for the calls in flight and queued, stops the threads and frees the executor's
        arenas. Closing twice is a no-op."""
        if self._closed:
            return
        self._closed = True
        handle, self._handle = self._handle, None
        if handle:
            lib.uform_executor_free(handle)
        while self._arenas:
            lib.uform_arena_free(self._arenas.pop())
        while self._slots:
            lib.uform_arena_free(self._slots.pop().arena)


    def __repr__(self) -> str:
        if self._closed:
            return "Executor(closed)"
        if self._calling:
            return "Executor(calling thread)"
        return f"Executor(threads={self.threads}, cpu_class={self.cpu_class.name.lower()})"


# The calling-thread executor the model's own verbs use.
calling_thread = Executor()


@atexit.register
def _close_all() -> None:
    """Stops every executor before the interpreter goes: closing waits for the calls in flight and
    queued (with the GIL released, so their progress handlers can still run), then joins the threads."""
    for executor in list(_live):
        executor.close()
