"""The handle classes' one ``with`` and garbage-collection protocol."""

from typing import TypeVar

T = TypeVar("T", bound="Closing")


class Closing:
    """``with`` and garbage collection both call the class's own ``close()``, which frees the handle
    and is a no-op the second time; a failure while collecting is ignored (the interpreter may be
    shutting down)."""

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()  # type: ignore[attr-defined]

    def __del__(self) -> None:
        try:
            self.close()  # type: ignore[attr-defined]
        except Exception:
            pass
