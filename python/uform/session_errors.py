"""Statuses of the tensor-program session (``uform_session_status_t``) and their exceptions.

Session calls answer their own status numbers (fixed by the design). Each failure raises a
``SessionError`` subclass that is also the closest ``uform.Error`` class, so ``except
uform.FormatError`` catches a malformed program and ``except uform.SessionError`` catches every
session failure; ``.session_status`` holds the session's number, ``.status`` the library-wide one.
"""

from enum import IntEnum
from typing import Dict, Type

from ._library import lib
from .errors import Error, FormatError, InternalError, InvalidArgument, OutOfMemory, Unsupported


class SessionStatus(IntEnum):
    """``uform_session_status_t``."""

    OK = 0
    INVALID_PROGRAM = 1
    UNSUPPORTED_VERSION = 2
    INVALID_HANDLE = 3
    INVALID_BUFFER = 4
    TOO_MANY_PROGRAMS = 5
    OUT_OF_MEMORY = 6
    COMPILE_FAILED = 7
    LAUNCH_FAILED = 8


class SessionError(Error):
    """A failed session or program-builder call; ``session_status`` is its ``SessionStatus``."""

    SESSION_STATUS = SessionStatus.INVALID_PROGRAM

    def __init__(self, session_status=None, function: str = "", message: str = "", line=None):
        self.session_status = SessionStatus(type(self).SESSION_STATUS if session_status is None else session_status)
        name = lib.uform_session_status_name(int(self.session_status)).decode()
        if line is None:
            line = f"UForm: {name} [{function}]: {message}" if message else f"UForm: {name} [{function}]"
        super().__init__(None, function, message, line)

    def __reduce__(self):
        return (type(self), (int(self.session_status), self.function, self.message, self.line))


class InvalidProgram(SessionError, FormatError):
    """Malformed wire bytes (truncated, a cycle, a shape that does not check …), or a builder call
    with arguments it cannot write."""

    SESSION_STATUS = SessionStatus.INVALID_PROGRAM


class UnsupportedVersion(SessionError, Unsupported):
    """Wire bytes of a newer version than this build reads."""

    SESSION_STATUS = SessionStatus.UNSUPPORTED_VERSION


class InvalidHandle(SessionError, InvalidArgument):
    """A released program (or a closed session)."""

    SESSION_STATUS = SessionStatus.INVALID_HANDLE


class InvalidBuffer(SessionError, InvalidArgument):
    """Buffers that do not match the program's descriptors."""

    SESSION_STATUS = SessionStatus.INVALID_BUFFER


class TooManyPrograms(SessionError, InvalidArgument):
    """Every one of the session's 64 slots holds a program; release one first."""

    SESSION_STATUS = SessionStatus.TOO_MANY_PROGRAMS


class SessionOutOfMemory(SessionError, OutOfMemory):
    """An allocation failed; nothing was loaded or written."""

    SESSION_STATUS = SessionStatus.OUT_OF_MEMORY


class CompileFailed(SessionError, Unsupported):
    """A valid program this build cannot plan (a value or scratch beyond 2^40 bytes)."""

    SESSION_STATUS = SessionStatus.COMPILE_FAILED


class LaunchFailed(SessionError, InternalError):
    """A bound kernel refused to run for a reason other than memory (a kernel's allocation failing
    is ``SessionOutOfMemory``): the library-wide status it stands for is INTERNAL (uform.h)."""

    SESSION_STATUS = SessionStatus.LAUNCH_FAILED


SESSION_ERRORS: Dict[int, Type[SessionError]] = {
    cls.SESSION_STATUS: cls
    for cls in (
        InvalidProgram,
        UnsupportedVersion,
        InvalidHandle,
        InvalidBuffer,
        TooManyPrograms,
        SessionOutOfMemory,
        CompileFailed,
        LaunchFailed,
    )
}


def session_error(status: int, function: str, message: str) -> SessionError:
    """The exception for a failed session status."""
    return SESSION_ERRORS.get(int(status), SessionError)(int(status), function, message)
