"""A training batch from Python lists (docs/training.md, "A batch"), checked before anything reaches C.

Only the shapes and types are checked here (lengths, integers in range, byte values); the rules
between fields (a relation between a bag and itself, a target outside its choices …) are the
trainer's to judge, and it names the field and index when it refuses.
"""

import os
from ctypes import addressof, c_int, c_size_t, c_uint8
from typing import Any, NamedTuple, Optional

from . import _inputs, _structs as S
from .enums import Modality, parse_enum
from .errors import invalid

_SEQUENCES = (list, tuple)


class Batch(NamedTuple):
    """The request fields of a step and the objects their addresses point into."""

    modalities: int
    contents: S.Tape
    bags: Optional[int]
    bag_count: int
    sides: Optional[int]
    relations: S.Relations
    choices: S.Tape
    targets: Optional[int]
    keep: tuple


def _integers(value: Any, function: str, argument: str, low: int, high: int) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, _SEQUENCES) and not hasattr(value, "tolist"):
        raise invalid(function, f"{argument}: expected a list of integers, got {type(value).__name__}")
    items = value.tolist() if hasattr(value, "tolist") else value
    if not isinstance(items, list):
        raise invalid(function, f"{argument}: expected a 1-D list of integers")
    numbers = []
    for i, item in enumerate(items):
        number = _inputs.non_negative(item, function, f"{argument}[{i}]")
        if not low <= number <= high:
            raise invalid(function, f"{argument}[{i}] = {number}: outside [{low}, {high}]")
        numbers.append(number)
    return numbers


def _sizes(numbers: list) -> Any:
    return (c_size_t * max(len(numbers), 1))(*numbers)


def _contents(contents: Any, modalities: Any, function: str):
    if not isinstance(contents, _SEQUENCES):
        raise invalid(function, f"contents: expected a list, got {type(contents).__name__}")
    count = len(contents)
    if isinstance(modalities, _SEQUENCES):
        if len(modalities) != count:
            raise invalid(function, f"modalities: {len(modalities)} entries for {count} contents")
        kinds = [parse_enum(Modality, m, function, f"modalities[{i}]") for i, m in enumerate(modalities)]
    else:
        kinds = [parse_enum(Modality, modalities, function, "modalities")] * count
    parts = []
    for i, (item, kind) in enumerate(zip(contents, kinds)):
        where = f"contents[{i}]"
        if kind == Modality.TEXT and isinstance(item, str):
            try:
                parts.append(item.encode("utf-8"))
            except UnicodeEncodeError as error:
                raise invalid(function, f"{where}: not encodable as UTF-8 ({error.reason})") from None
        elif isinstance(item, (bytes, bytearray, memoryview)):
            parts.append(_inputs._as_bytes(item, function, where))
        elif kind != Modality.TEXT and isinstance(item, (str, os.PathLike)):
            parts.append(_inputs._read(item, function, where))
        else:
            expected = "str or bytes" if kind == Modality.TEXT else "a path or bytes"
            raise invalid(function, f"{where}: a {kind.name.lower()} content is {expected}, got {type(item).__name__}")
    return _inputs._join(parts), (c_int * max(count, 1))(*[int(k) for k in kinds]), count


def build(contents, modalities, bags, sides, relations, choices, targets, function: str) -> Batch:
    """Every field of a step's batch. ``relations`` is a list of ``(left, right)`` or ``(left,
    right, group)``; ``choices`` one entry per content (empty for none) with ``targets`` one byte
    per content (None where there are no choices)."""
    tape, kinds, count = _contents(contents, modalities, function)
    keep = [tape.keep, kinds]
    bag_array = None
    bag_count = 0
    if bags is not None:
        offsets = _integers(bags, function, "bags", 0, count)
        if not offsets:
            raise invalid(function, "bags: expected bag_count + 1 offsets, got an empty list")
        bag_array, bag_count = _sizes(offsets), len(offsets) - 1
        keep.append(bag_array)
    side_array = None
    if sides is not None:
        values = _integers(sides, function, "sides", 0, 255)
        expected = bag_count if bags is not None else count
        if len(values) != expected:
            raise invalid(function, f"sides: {len(values)} entries for {expected} bags")
        side_array = (c_uint8 * max(len(values), 1))(*values)
        keep.append(side_array)
    lefts, rights, groups = [], [], []
    if relations is not None:
        if not isinstance(relations, _SEQUENCES):
            raise invalid(function, f"relations: expected a list of (left, right[, group]), got {type(relations).__name__}")
        for i, relation in enumerate(relations):
            if not isinstance(relation, _SEQUENCES) or len(relation) not in (2, 3):
                raise invalid(function, f"relations[{i}]: expected (left, right) or (left, right, group)")
            lefts.append(_inputs.non_negative(relation[0], function, f"relations[{i}][0]"))
            rights.append(_inputs.non_negative(relation[1], function, f"relations[{i}][1]"))
            groups.append(_inputs.non_negative(relation[2], function, f"relations[{i}][2]") if len(relation) == 3 else 0)
    left_array, right_array, group_array = _sizes(lefts), _sizes(rights), _sizes(groups)
    keep += [left_array, right_array, group_array]
    relation_struct = S.Relations(addressof(left_array), addressof(right_array),
                                  addressof(group_array) if any(groups) else None, len(lefts))
    choice_tape = S.Tape(None, None, 0)
    target_array = None
    if choices is not None:
        items = _inputs.choices(choices, count, function)
        choice_tape = S.Tape(items.data, items.offsets, items.count)
        keep.append(items.keep)
        if not isinstance(targets, _SEQUENCES) or len(targets) != count:
            raise invalid(function, f"targets: expected one byte (or None) per content, {count} in all")
        values = []
        for i, target in enumerate(targets):
            number = 0 if target is None else _inputs.non_negative(target, function, f"targets[{i}]")
            if number > 255:
                raise invalid(function, f"targets[{i}] = {number}: outside [0, 255]")
            values.append(number)
        target_array = (c_uint8 * max(count, 1))(*values)
        keep.append(target_array)
    elif targets is not None:
        raise invalid(function, "targets: given without choices")
    contents_tape = S.Tape(tape.data, tape.offsets, tape.count)
    return Batch(
        addressof(kinds),
        contents_tape,
        addressof(bag_array) if bag_array is not None else None,
        bag_count,
        addressof(side_array) if side_array is not None else None,
        relation_struct,
        choice_tape,
        addressof(target_array) if target_array is not None else None,
        tuple(keep),
    )
