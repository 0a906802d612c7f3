"""Arenas: caller-owned memory that outputs land in as zero-copy views (``uform_arena_t``)."""

from ctypes import byref, c_void_p
from typing import Optional

from . import _structs as S
from ._closing import Closing
from ._library import lib
from .errors import from_outcome, invalid
from .executor import Executor


class Arena(Closing):
    """Memory a call's outputs are written into; pass ``arena=`` to a verb to get zero-copy views.

    ``Arena(executor)`` places pages where that executor computes (its NUMA nodes); ``Arena()``
    makes ordinary host pages. Every call that writes into an arena rewinds it first and bumps its
    ``generation``, so the views of the previous call go stale (their accessors raise); the arena
    keeps its largest footprint, so a steady loop allocates once. One call holds an arena at a time:
    give every deferred call its own. ``close()`` waits for a deferred call still writing into it.
    """

    def __init__(self, executor: Optional[Executor] = None) -> None:
        function = "Arena"
        if executor is not None and not isinstance(executor, Executor):
            raise invalid(function, f"executor: expected an Executor or None, got {type(executor).__name__}")
        self._handle: Optional[int] = None
        self._executor = executor  # kept alive while the arena lives
        self._slots: list = []  # reusable batch-1 text requests writing into this arena (_verbs._TextSlot)
        handle, outcome = c_void_p(), S.Outcome()
        if executor is None:
            status = lib.uform_arena_for_host(byref(handle), byref(outcome))
        else:
            status = lib.uform_arena_for_executor(executor._use(function), byref(handle), byref(outcome))
        if status != 0:
            raise from_outcome(outcome)
        self._handle = handle.value

    def _use(self, function: str) -> int:
        if self._handle is None:
            raise invalid(function, "arena: the arena is closed")
        return self._handle

    @property
    def generation(self) -> int:
        """Starts at 1 and grows by one with every call that writes into the arena."""
        return lib.uform_arena_generation(self._use("Arena.generation"))

    @property
    def capacity(self) -> int:
        """Bytes the arena holds from the system now."""
        return lib.uform_arena_capacity(self._use("Arena.capacity"))

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran."""
        return self._handle is None

    def close(self) -> None:
        """Frees the arena's pages (waiting for a deferred call that holds it); every view into it
        goes stale. Closing twice is a no-op."""
        handle, self._handle = self._handle, None
        if handle:
            lib.uform_arena_free(handle)


    def __repr__(self) -> str:
        if self._handle is None:
            return "Arena(closed)"
        return f"Arena(generation={self.generation}, capacity={self.capacity})"
