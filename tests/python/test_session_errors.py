"""The session's errors are one branch of uform.Error, numbered and mapped as uform.h says.

The expected numbers and the mapping of each session status to a library-wide status are read from
the header itself (the enum and the table in the comment above it), not from the binding, so a
binding that drifts from the header fails here.
"""

import pickle
import re
from pathlib import Path

import pytest

import uform
from uform import errors, session_errors

HEADER = Path(__file__).resolve().parents[2] / "include" / "uform" / "uform.h"


def header_session_statuses():
    """{name: number} of uform_session_status_t and {name: library-wide name} of its mapping table."""
    text = HEADER.read_text()
    enum = re.search(r"typedef enum uform_session_status_t \{(.*?)\} uform_session_status_t;", text, re.S).group(1)
    numbers = {name: int(value) for name, value in re.findall(r"UFORM_SESSION_(\w+)\s*=\s*(\d+)", enum)}
    comment = text[: text.index("typedef enum uform_session_status_t")].rsplit("/*", 1)[1]
    mapping = dict(re.findall(r"\b([A-Z_]+) -> UFORM_([A-Z_]+)", comment))
    return numbers, mapping


def test_the_header_table_is_read():
    numbers, mapping = header_session_statuses()
    assert len(numbers) == 9 and set(mapping) == set(numbers), (numbers, mapping)


def test_numbers_match_the_header():
    numbers, _ = header_session_statuses()
    assert {member.name: int(member) for member in uform.SessionStatus} == numbers


@pytest.mark.parametrize("name", [name for name in header_session_statuses()[0] if name != "OK"])
def test_each_failure_is_its_mapped_library_error(name):
    numbers, mapping = header_session_statuses()
    library_status = uform.Status[mapping[name]]
    cls = errors.SESSION_ERRORS[numbers[name]]
    raised = errors.session_error(numbers[name], "uform_session_compile", "why")
    assert type(raised) is cls
    assert isinstance(raised, uform.SessionError) and isinstance(raised, uform.Error)
    assert isinstance(raised, errors.ERRORS[int(library_status)]), (name, type(raised).__mro__)
    assert raised.status == library_status and raised.session_status == numbers[name]
    assert str(raised) == f"UForm: {name.lower()} [uform_session_compile]: why"
    copy = pickle.loads(pickle.dumps(raised))
    assert type(copy) is cls and str(copy) == str(raised) and copy.session_status == raised.session_status
    with pytest.raises(errors.ERRORS[int(library_status)]):  # callers catching the library's class
        raise raised


def test_the_old_module_names_the_same_classes():
    for name in ("SessionError", "SessionStatus", "InvalidProgram", "LaunchFailed", "session_error", "SESSION_ERRORS"):
        assert getattr(session_errors, name) is getattr(errors, name) is getattr(uform, name, getattr(errors, name))
