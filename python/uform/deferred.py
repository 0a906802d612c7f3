"""``Deferred``: a call submitted to an executor that finishes later."""

import threading
from ctypes import addressof
from typing import Any, Callable, Generic, Optional, TypeVar

from ._library import lib
from .errors import Status

T = TypeVar("T")

class Deferred(Generic[T]):
    """A submitted call. ``wait()`` blocks until it is final (releasing the GIL meanwhile) and
    answers its result or raises its error, the same one each time it is asked; ``status()`` and
    ``done()`` look without blocking.

    The Deferred owns the call's request and keeps its inputs, model, executor and arena alive
    until the call is final. Dropping an unfinished Deferred waits for it (its outputs are then
    dropped too), and so does closing the model it uses. Calls on one executor start in submission
    order.
    """

    __slots__ = ("_outcome", "_finish", "_keep", "_lock", "_settled", "_result", "_error", "__weakref__")

    def __init__(self, request: Any, finish: Callable[[], T], keep: Any) -> None:
        self._outcome = addressof(request.outcome)
        self._finish = finish
        self._keep = (request, keep)
        self._lock = threading.Lock()
        self._settled = False
        self._result: Optional[T] = None
        self._error: Optional[BaseException] = None

    def status(self) -> Status:
        """``Status.DEFERRED`` while the call runs or waits in the queue, its final status after."""
        return Status(lib.uform_outcome_status(self._outcome))

    def done(self) -> bool:
        """True once the call is final (``wait()`` then answers at once)."""
        return self._settled or lib.uform_outcome_status(self._outcome) != Status.DEFERRED

    def wait(self) -> T:
        """Blocks until the call is final, then answers its result or raises its ``uform.Error`` (or
        what its progress handler raised). Other Python threads run while it blocks."""
        if not self._settled:
            self._settle()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def _settle(self) -> None:
        """Waits for the final status and builds the result or the error, once."""
        lib.uform_outcome_wait(self._outcome)
        with self._lock:
            if self._settled:
                return
            try:
                self._result = self._finish()
            except BaseException as error:
                self._error = error
            self._settled = True
            self._finish = None  # type: ignore[assignment]
            self._keep = self._keep[:1]  # the request (its outcome); inputs and arenas go

    def __del__(self) -> None:
        try:
            if not self._settled:
                self._settle()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"Deferred({self.status().name.lower()})"
