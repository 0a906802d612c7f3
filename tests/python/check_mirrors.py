"""Checks every ctypes mirror of python/uform against the C compiler's view of include/uform/uform.h.

    check_mirrors.py --cc CC --include DIR --python DIR [--work DIR]

The mirrors are the one written description of the structs besides the header; this test derives
its C probes from them (``MIRRORED`` maps each mirror to its C name), so nothing is listed a third
time. For every mirror it compares sizeof the struct and, for every field the mirror names, the
offset, the size and the kind (integer, float, pointer, struct, array of N of a kind) that the
compiler gives. A field the mirror leaves out shows as a size or offset mismatch; a field the
header does not have fails to compile, and is reported by name. Every struct the header defines
must be mirrored or named in ``NOT_MIRRORED`` with the reason, and every ctypes.Structure class
written under python/uform must be in ``MIRRORED``, so neither side can grow unchecked.

The compiler is asked through GNU builtins (``__builtin_classify_type``,
``__builtin_types_compatible_p``, ``__typeof__``) that GCC and Clang both have. Because an array
decays to a pointer in those builtins, the probe runs in up to three rounds: the layout and the
class of every field, then which pointer-class fields are arrays, then those arrays' elements.
Exits 0 with "N structs, M fields match" or 1 with one line per drift.
"""

import argparse
import ast
import ctypes
import importlib
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

# Structs of uform.h that Python never builds or reads, with the reason; anything else must be mirrored.
NOT_MIRRORED = {
    "uform_vram_options_t": "GPU executors are not exposed to Python",
    "uform_pool_t": "Python makes RAM executors only (uform_executor_for_ram), never one on a caller's pool",
}

# __builtin_classify_type's answers (GCC's and Clang's typeclass numbering) folded into kinds.
C_CLASS_KIND = {1: "integer", 2: "integer", 3: "integer", 4: "integer", 5: "pointer", 8: "float", 12: "struct",
                13: "union"}


def load_mirrors(python_dir):
    """Imports uform._structs (which merges uform._data_structs) without running uform/__init__.py,
    so the check needs neither the shared library nor NumPy."""
    package = types.ModuleType("uform")
    package.__path__ = [str(Path(python_dir) / "uform")]
    sys.modules["uform"] = package
    return importlib.import_module("uform._structs")


def structure_classes_in_source(python_dir):
    """(file, class name) of every class under python/uform whose bases name Structure or Union."""
    found = []
    for path in sorted((Path(python_dir) / "uform").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(base, "attr", getattr(base, "id", "")) for base in node.bases}
                if {"Structure", "Union", "LittleEndianStructure", "BigEndianStructure"} & bases:
                    found.append((path.name, node.name))
    return found


def header_structs(include_dir):
    """The names of the structs uform.h defines with a body (opaque handles excluded)."""
    text = (Path(include_dir) / "uform" / "uform.h").read_text()
    return set(re.findall(r"^typedef\s+(?:struct|union)\s+(\w+)\s*\{", text, re.MULTILINE))


def python_kind(field_type):
    """The kind a ctypes type stands for: ("integer"|"float"|"pointer", None), ("struct", type),
    or ("array", (element type, length))."""
    if issubclass(field_type, ctypes.Array):
        return "array", (field_type._type_, field_type._length_)
    if issubclass(field_type, ctypes.Structure):
        return "struct", field_type
    if issubclass(field_type, ctypes.Union):
        return "union", field_type
    if issubclass(field_type, (ctypes._Pointer, ctypes._CFuncPtr)):
        return "pointer", None
    code = getattr(field_type, "_type_", None)
    if code in ("P", "z", "Z"):
        return "pointer", None
    if code in ("f", "d", "g"):
        return "float", None
    if isinstance(code, str) and code in "bBhHiIlLqQ?c":
        return "integer", None
    raise TypeError(f"unknown ctypes field type {field_type!r}")


class Probe:
    """One generated C program: each printed line answers one question about one field, and the
    line number of each question is kept so that a compile error can be named."""

    def __init__(self):
        self.lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "uform/uform.h"', "int main(void) {"]
        self.where = {}  # source line -> (struct, field)

    def ask(self, struct, field, statement):
        self.lines.append(statement)
        self.where[len(self.lines)] = (struct, field)

    def run(self, cc, include_dir, work, name):
        source, binary = Path(work) / f"{name}.c", Path(work) / name
        source.write_text("\n".join(self.lines + ["    return 0;", "}", ""]))
        built = subprocess.run([cc, "-std=gnu11", "-w", "-I", str(include_dir), str(source), "-o", str(binary)],
                               capture_output=True, text=True, timeout=60)
        if built.returncode != 0:
            named = set()
            for match in re.finditer(r":(\d+):(?:\d+:)? (?:fatal )?error: (.*)", built.stderr):
                struct, field = self.where.get(int(match.group(1)), ("?", "?"))
                named.add(f"{struct}.{field}: the header has no such field, or it cannot be probed ({match.group(2)})")
            return None, sorted(named) or [f"the probe does not compile:\n{built.stderr}"]
        ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=True)
        answers = {}
        for line in ran.stdout.splitlines():
            key, _, value = line.rpartition(" ")
            answers[key] = int(value)
        return answers, []


def first_round(mirrors):
    probe = Probe()
    for cname, mirror in mirrors.items():
        probe.ask(cname, "", f'    {{ static {cname} x; (void)x; printf("{cname} sizeof %zu\\n", sizeof x); }}')
        for name, field_type in ((f[0], f[1]) for f in mirror._fields_):
            kind, detail = python_kind(field_type)
            same = "1"
            if kind == "struct" and detail in mirrors.values():
                same = f"__builtin_types_compatible_p(__typeof__(x.{name}), {c_name_of(mirrors, detail)})"
            probe.ask(cname, name,
                      f'    {{ static {cname} x; printf("{cname} {name} offset %zu\\n", offsetof({cname}, {name}));'
                      f' printf("{cname} {name} size %zu\\n", sizeof x.{name});'
                      f' printf("{cname} {name} class %d\\n", __builtin_classify_type(x.{name}));'
                      f' printf("{cname} {name} same %d\\n", {same}); }}')
    return probe


def c_name_of(mirrors, mirror):
    return next(cname for cname, candidate in mirrors.items() if candidate is mirror)


def check(mirrors, cc, include_dir, work):
    problems = []
    answers, errors = first_round(mirrors).run(cc, include_dir, work, "round1")
    if errors:
        return errors, 0
    fields = 0
    arrays_probe, pointer_fields = Probe(), []
    for cname, mirror in mirrors.items():
        if answers[f"{cname} sizeof"] != ctypes.sizeof(mirror):
            problems.append(f"{cname}: sizeof C {answers[f'{cname} sizeof']}, ctypes {ctypes.sizeof(mirror)} "
                            f"({mirror.__name__})")
        for field in mirror._fields_:
            if len(field) != 2:
                problems.append(f"{cname}.{field[0]}: bit fields are not checked by this test")
                continue
            name, field_type = field
            fields += 1
            described = getattr(mirror, name)
            key = f"{cname} {name}"
            if answers[key + " offset"] != described.offset:
                problems.append(f"{cname}.{name}: offset C {answers[key + ' offset']}, ctypes {described.offset} "
                                f"({mirror.__name__})")
            if answers[key + " size"] != described.size:
                problems.append(f"{cname}.{name}: size C {answers[key + ' size']}, ctypes {described.size}")
            c_kind = C_CLASS_KIND.get(answers[key + " class"], f"class {answers[key + ' class']}")
            kind, detail = python_kind(field_type)
            if c_kind == "pointer":  # a pointer, or an array that decayed to one: the next round says which
                pointer_fields.append((cname, name, kind, detail))
                arrays_probe.ask(cname, name, f'    {{ static {cname} x; printf("{cname} {name} array %d\\n",'
                                              f' (void *)&x.{name} == (void *)x.{name}); }}')
            elif c_kind != kind:
                problems.append(f"{cname}.{name}: kind C {c_kind}, ctypes {kind} ({field_type.__name__})")
            elif kind == "struct" and detail not in mirrors.values():
                problems.append(f"{cname}.{name}: its type {detail.__name__} is not in MIRRORED")
            elif kind == "struct" and not answers[key + " same"]:
                problems.append(f"{cname}.{name}: C's type is not {c_name_of(mirrors, detail)} "
                                f"(the mirror's {detail.__name__})")
    problems += check_arrays(mirrors, arrays_probe, pointer_fields, cc, include_dir, work)
    return problems, fields


def check_arrays(mirrors, probe, pointer_fields, cc, include_dir, work):
    """Rounds two and three: which pointer-class fields are arrays, then their element kind and count."""
    if not pointer_fields:
        return []
    answers, errors = probe.run(cc, include_dir, work, "round2")
    if errors:
        return errors
    problems, elements = [], Probe()
    arrays = []
    for cname, name, kind, detail in pointer_fields:
        c_kind = "array" if answers[f"{cname} {name} array"] else "pointer"
        if c_kind != kind:
            problems.append(f"{cname}.{name}: kind C {c_kind}, ctypes {kind}")
        elif kind == "array":
            element_type, length = detail
            element_kind, element_detail = python_kind(element_type)
            same = "1"
            if element_kind == "struct" and element_detail in mirrors.values():
                same = f"__builtin_types_compatible_p(__typeof__(x.{name}[0]), {c_name_of(mirrors, element_detail)})"
            arrays.append((cname, name, element_type, length, element_kind, element_detail))
            elements.ask(cname, name,
                         f'    {{ static {cname} x; printf("{cname} {name} element %zu\\n", sizeof x.{name}[0]);'
                         f' printf("{cname} {name} count %zu\\n", sizeof x.{name} / sizeof x.{name}[0]);'
                         f' printf("{cname} {name} class %d\\n", __builtin_classify_type(x.{name}[0]));'
                         f' printf("{cname} {name} same %d\\n", {same}); }}')
    if not arrays:
        return problems
    answers, errors = elements.run(cc, include_dir, work, "round3")
    if errors:
        return problems + errors
    for cname, name, element_type, length, element_kind, element_detail in arrays:
        key = f"{cname} {name}"
        c_kind = C_CLASS_KIND.get(answers[key + " class"], f"class {answers[key + ' class']}")
        if answers[key + " count"] != length:
            problems.append(f"{cname}.{name}: {answers[key + ' count']} elements in C, {length} in ctypes")
        if answers[key + " element"] != ctypes.sizeof(element_type):
            problems.append(f"{cname}.{name}: element size C {answers[key + ' element']}, "
                            f"ctypes {ctypes.sizeof(element_type)}")
        if c_kind != element_kind:
            problems.append(f"{cname}.{name}: element kind C {c_kind}, ctypes {element_kind}")
        elif element_kind == "struct" and not answers[key + " same"]:
            problems.append(f"{cname}.{name}: C's element type is not the mirror {element_detail.__name__}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cc", required=True, help="the C compiler the project builds with")
    parser.add_argument("--include", required=True, help="the folder holding uform/uform.h")
    parser.add_argument("--python", required=True, help="the folder holding the uform package")
    parser.add_argument("--work", help="where the probes are written (default: a temporary folder)")
    arguments = parser.parse_args()

    structs = load_mirrors(arguments.python)
    mirrors = structs.MIRRORED
    problems = []
    if len(mirrors) < 40:  # an empty or truncated table must not pass as "nothing drifted"
        problems.append(f"MIRRORED lists only {len(mirrors)} structs")
    classes = {mirror.__name__ for mirror in mirrors.values()}
    for file, name in structure_classes_in_source(arguments.python):
        if name not in classes:
            problems.append(f"python/uform/{file}: class {name} is a ctypes struct missing from MIRRORED")
    in_header = header_structs(arguments.include)
    for cname in sorted(set(mirrors) - in_header):
        problems.append(f"{cname}: mirrored ({mirrors[cname].__name__}) but uform.h defines no such struct")
    for cname in sorted(in_header - set(mirrors) - set(NOT_MIRRORED)):
        problems.append(f"{cname}: defined in uform.h but neither mirrored nor listed in NOT_MIRRORED")
    for cname in sorted(set(NOT_MIRRORED) & set(mirrors)):
        problems.append(f"{cname}: both mirrored and listed in NOT_MIRRORED")

    fields = 0
    with tempfile.TemporaryDirectory(prefix="uform-mirrors-") as scratch:
        drift, fields = check(mirrors, arguments.cc, Path(arguments.include).resolve(), arguments.work or scratch)
        problems += drift
    if problems:
        print("the ctypes mirrors have drifted from uform.h:")
        print("\n".join("  " + problem for problem in problems))
        return 1
    print(f"{len(mirrors)} structs, {fields} fields match uform.h (not mirrored: {', '.join(sorted(NOT_MIRRORED))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
