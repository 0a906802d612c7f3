"""``Deferred``: a call submitted to an executor that finishes later."""

import threading
from ctypes import addressof
from typing import Any, Callable, Generic, Optional, TypeVar

from ._library import lib
from .errors import Status

T = TypeVar("T")
_DEFERRED = Status.DEFERRED
_STATUSES = {int(member): member for member in Status}  # a lookup: Status(n) costs 0.2 µs

class Deferred(Generic[T]):
    """A submitted call. ``wait()`` blocks until it is final (releasing the GIL meanwhile) and
    answers its result or raises its error, the same one each time it is asked; ``status()`` and
    ``done()`` look without blocking.

    The Deferred owns the call's request and keeps its inputs, model, executor and arena alive
    until the call is final. Dropping an unfinished Deferred waits for it (its outputs are then
    dropped too), and so does closing the model it uses. Calls on one executor start in submission
    order.

    Once its first ``wait()`` has seen the call final, it keeps the final status (``_status``),
    builds the result or error once (``_settled``) and lets the request go: ``finish`` may hand the
    request back for reuse. A read of the request's outcome is therefore trusted only while
    ``_status`` is still None after it (a request goes back only after ``_status`` is set).
    """

    __slots__ = ("_outcome", "_finish", "_keep", "_lock", "_settled", "_status", "_result", "_error", "__weakref__")

    def __init__(self, request: Any, finish: Callable[[], T], keep: Any) -> None:
        """``finish`` builds the result once the call is final; ``keep`` holds what the call's
        addresses point into."""
        self._outcome = addressof(request.outcome)
        self._finish = finish
        self._keep = (request, keep)
        self._lock = threading.Lock()
        self._settled = False
        self._status: Optional[Status] = None  # the final status, once a wait has seen it
        self._result: Optional[T] = None
        self._error: Optional[BaseException] = None

    def status(self) -> Status:
        """``Status.DEFERRED`` while the call runs or waits in the queue, its final status after."""
        if self._status is None:
            status = lib.uform_outcome_status(self._outcome)
            if self._status is None:  # read before the request could have gone back for reuse
                return Status(status)
        return self._status

    def done(self) -> bool:
        """True once the call is final (``wait()`` then answers at once)."""
        if self._status is not None:
            return True
        return lib.uform_outcome_status(self._outcome) != _DEFERRED or self._status is not None

    def wait(self) -> T:
        """Blocks until the call is final, then answers its result or raises its ``uform.Error`` (or
        what its progress handler raised). Other Python threads run while it blocks."""
        if not self._settled:
            self._settle()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def _settle(self) -> None:
        """Waits for the final status and builds the result or the error, once. (A waiter that
        starts while another is building may wait for a call that reused the request; it then
        answers what the first one built.)"""
        status = lib.uform_outcome_wait(self._outcome) if self._status is None else 0
        with self._lock:
            if self._settled:
                return
            # The first waiter here: nobody handed the request back yet, so `status` is this call's.
            self._status = _STATUSES[status] if status in _STATUSES else Status(status)
            try:
                self._result = self._finish()
            except BaseException as error:
                self._error = error
            self._settled = True
            self._finish = None  # type: ignore[assignment]
            self._keep = None  # the request, inputs and arenas go

    def __del__(self) -> None:
        try:
            if not self._settled:
                self._settle()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"Deferred({self.status().name.lower()})"
