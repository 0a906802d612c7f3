"""Statuses and the exceptions that carry them.

Every failure of the library raises one ``uform.Error`` whose ``status`` is the C status, whose
``function`` names the public function that failed and whose ``message`` is the library's specific
message; ``str(error)`` is the outcome's one-line form, exactly as ``uform_outcome_format`` writes
it (``UForm: io [uform_model_load_ram]: cannot open 'x.safetensors': No such file or directory``).
Each status has its own subclass, so ``except uform.FormatError`` catches only malformed bytes.
Mistakes the binding detects before calling C (a wrong dtype, a negative ``dims``) raise
``InvalidArgument`` too, with ``function`` naming the Python method and a message naming the argument.
The tensor-program session's failures are one branch of this hierarchy: ``SessionError`` and its
subclasses, below, carry the session's own status number as well.
"""

from ctypes import addressof, create_string_buffer
from enum import IntEnum
from typing import Dict, Optional, Type, Union

from ._library import lib


class Status(IntEnum):
    """``uform_status_t``: what a call came to (numbers fixed by the design)."""

    OK = 0
    DEFERRED = 1
    CANCELLED = 2
    CONTENDED = 3
    INVALID_ARGUMENT = 4
    IO = 5
    FORMAT = 6
    UNSUPPORTED = 7
    OUT_OF_MEMORY = 8
    DEVICE = 9
    CONFIG_MISMATCH = 10
    TIMEOUT = 11
    PEER_LOST = 12
    INTERNAL = 13


def status_name(status: int) -> str:
    """The library's lower-case name of a status (``"io"``, ``"invalid_argument"``; ``"unknown"``)."""
    return lib.uform_status_name(int(status)).decode()


def _status_of(value: int) -> Union[Status, int]:
    try:
        return Status(value)
    except ValueError:
        return value


def format_line(status: int, function: str, message: str) -> str:
    """The one-line form of an outcome, by the rules of ``uform_outcome_format``."""
    name = status_name(status)
    if status == Status.OK and not message:
        return "UForm: ok"
    if function and message:
        return f"UForm: {name} [{function}]: {message}"
    if function:
        return f"UForm: {name} [{function}]"
    if message:
        return f"UForm: {name}: {message}"
    return f"UForm: {name}"


class Error(Exception):
    """A failed UForm call: ``status`` (a ``Status``), ``function`` and ``message``.

    Raise a subclass without arguments (``raise uform.Cancelled()``) to take its status.
    """

    STATUS: Status = Status.INTERNAL

    def __init__(self, status: Optional[int] = None, function: str = "", message: str = "", line: Optional[str] = None):
        self.status = _status_of(type(self).STATUS if status is None else int(status))
        self.function = function
        self.message = message
        self.line = line if line is not None else format_line(int(self.status), function, message)
        super().__init__(self.line)

    def __str__(self) -> str:
        return self.line

    def __reduce__(self):
        return (type(self), (int(self.status), self.function, self.message, self.line))


class Cancelled(Error):
    """A progress handler cancelled the call (returned ``False`` or raised ``Cancelled``)."""

    STATUS = Status.CANCELLED


class Contended(Error):
    """The executor or arena was held by another call; nothing was done."""

    STATUS = Status.CONTENDED


class InvalidArgument(Error, ValueError):
    """The caller broke a documented rule; the message names the argument or item."""

    STATUS = Status.INVALID_ARGUMENT


class IoError(Error):
    """The operating system refused a file operation (the message has the path and the reason)."""

    STATUS = Status.IO


class FormatError(Error):
    """Bytes that should be a checkpoint, image, recording, video or program are malformed."""

    STATUS = Status.FORMAT


class Unsupported(Error):
    """Valid, but this build or machine cannot do it (no FFmpeg, a CPU class it cannot run)."""

    STATUS = Status.UNSUPPORTED


class OutOfMemory(Error, MemoryError):
    """An allocation failed."""

    STATUS = Status.OUT_OF_MEMORY


class DeviceError(Error):
    """A device fault, or host access to device memory."""

    STATUS = Status.DEVICE


class ConfigMismatch(Error):
    """Peers of a mesh, or a checkpoint and its use, disagree."""

    STATUS = Status.CONFIG_MISMATCH


class Timeout(Error):
    """A peer did not arrive or answer in time."""

    STATUS = Status.TIMEOUT


class PeerLost(Error):
    """A peer of a mesh failed during a collective."""

    STATUS = Status.PEER_LOST


class InternalError(Error):
    """A bug in the engine; the message says where."""

    STATUS = Status.INTERNAL


ERRORS: Dict[int, Type[Error]] = {
    cls.STATUS: cls
    for cls in (
        Cancelled,
        Contended,
        InvalidArgument,
        IoError,
        FormatError,
        Unsupported,
        OutOfMemory,
        DeviceError,
        ConfigMismatch,
        Timeout,
        PeerLost,
        InternalError,
    )
}


# The tensor-program session's branch. Session calls answer their own status numbers
# (``uform_session_status_t``, fixed by the design: docs/session.md); each failure raises a
# ``SessionError`` subclass that is also the error class of the library-wide status uform.h maps
# that number to, so ``except uform.FormatError`` catches a malformed program and ``except
# uform.SessionError`` every session failure; ``.session_status`` holds the session's number,
# ``.status`` the library-wide one.


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


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def from_outcome(outcome) -> Error:
    """The exception for a final, failed ``Outcome``, with the line ``uform_outcome_format`` writes."""
    value = int(outcome.status)
    buffer = create_string_buffer(640)
    lib.uform_outcome_format(addressof(outcome), buffer, len(buffer))
    cls = ERRORS.get(value, Error)
    return cls(value, _text(outcome.function), _text(outcome.message), _text(buffer.value))


def invalid(function: str, message: str) -> InvalidArgument:
    """An ``InvalidArgument`` the binding raises before calling C."""
    return InvalidArgument(Status.INVALID_ARGUMENT, function, message)
