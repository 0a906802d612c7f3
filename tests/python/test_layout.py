"""The ctypes mirrors must lay out every struct exactly as the C compiler does."""

import subprocess
from ctypes import sizeof

from conftest import required

from uform import _structs


def c_layout():
    printed = subprocess.run([required("UFORM_PYTEST_STRUCT_LAYOUT")], capture_output=True, text=True, check=True)
    sizes, offsets = {}, {}
    for line in printed.stdout.splitlines():
        struct, key, value = line.split()
        if key == "sizeof":
            sizes[struct] = int(value)
        else:
            offsets.setdefault(struct, {})[key] = int(value)
    return sizes, offsets


def test_every_mirrored_struct_matches_the_c_layout():
    sizes, offsets = c_layout()
    assert set(sizes) == set(_structs.MIRRORED), (
        f"printed by C but not mirrored: {set(sizes) - set(_structs.MIRRORED)}; "
        f"mirrored but not printed: {set(_structs.MIRRORED) - set(sizes)}"
    )
    problems = []
    for name, mirror in _structs.MIRRORED.items():
        if sizes[name] != sizeof(mirror):
            problems.append(f"{name}: sizeof C {sizes[name]}, ctypes {sizeof(mirror)}")
        python_fields = {field[0]: getattr(mirror, field[0]).offset for field in mirror._fields_}
        if set(python_fields) != set(offsets[name]):
            problems.append(f"{name}: fields C {sorted(offsets[name])}, ctypes {sorted(python_fields)}")
            continue
        for field, offset in offsets[name].items():
            if python_fields[field] != offset:
                problems.append(f"{name}.{field}: offset C {offset}, ctypes {python_fields[field]}")
    assert not problems, "\n".join(problems)
