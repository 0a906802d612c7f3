"""The session's statuses and exceptions, now defined in ``uform.errors`` as one branch of the one
error hierarchy; this module keeps ``from uform.session_errors import ...`` working."""

from .errors import (  # noqa: F401 (re-exported)
    SESSION_ERRORS,
    CompileFailed,
    InvalidBuffer,
    InvalidHandle,
    InvalidProgram,
    LaunchFailed,
    SessionError,
    SessionOutOfMemory,
    SessionStatus,
    TooManyPrograms,
    UnsupportedVersion,
    session_error,
)
