"""Progress handlers: a Python callable behind the C ``uform_progress_t``.

One C-callable trampoline serves every call; the request's ``progress.state`` holds the key of the
call's ``Relay``. The callable gets ``(completed, total)`` and answers nothing or ``True`` to go
on; ``False`` (or raising ``uform.Cancelled``) cancels. Any other exception it raises cancels the
call too and is re-raised in the caller once the call is final, with its own traceback: ctypes
would otherwise print it and carry on.

For a blocking call the handler runs on the calling thread; for a deferred call on one of the
executor's threads (ctypes takes the GIL for it), never two at once and never after the call is final.
"""

from itertools import count
from typing import Callable, Dict, Optional

from ._structs import ProgressCallback
from .errors import Cancelled

CONTINUE, CANCEL = 0, 1

ProgressHandler = Callable[[int, int], Optional[bool]]

_relays: Dict[int, "Relay"] = {}
_keys = count(1)


class Relay:
    """One call's handler, what it answered and what it raised."""

    __slots__ = ("handler", "key", "cancelled", "error")

    def __init__(self, handler: ProgressHandler):
        self.handler = handler
        self.key = next(_keys)
        self.cancelled = False
        self.error: Optional[BaseException] = None
        _relays[self.key] = self

    def close(self) -> None:
        """Forgets the relay (after the call is final)."""
        _relays.pop(self.key, None)

    def reraise(self) -> None:
        """Re-raises what the handler raised, unless that was a plain ``Cancelled``."""
        error, self.error = self.error, None
        if error is not None and not isinstance(error, Cancelled):
            raise error


def _report(completed: int, total: int, state: Optional[int]) -> int:
    relay = _relays.get(state or 0)
    if relay is None:
        return CONTINUE
    if relay.cancelled:
        return CANCEL
    try:
        answer = relay.handler(completed, total)
        stop = answer is not None and not answer
    except BaseException as error:  # KeyboardInterrupt included: Ctrl-C cancels the call
        relay.cancelled, relay.error = True, error
        return CANCEL
    if stop:
        relay.cancelled = True
        return CANCEL
    return CONTINUE


trampoline = ProgressCallback(_report)
