"""An independent safetensors writer and checker in plain Python (struct + json), so the C reader
and writer are tested against code that shares nothing with them (not even the `safetensors`
package, which Debian may lack).

    safetensors_reference.py write PATH   writes the reference file
    safetensors_reference.py check PATH   checks a file the C writer made from the same values

Element i of each tensor is a formula of i that the C test computes too.
"""
import json
import struct
import sys

# name -> (dtype, shape, struct code or None for BF16 and BOOL, value of element i)
TENSORS = {
    "f32": ("F32", [2, 3], "f", lambda i: i * 0.5 - 3.0),
    "f64": ("F64", [4], "d", lambda i: i * 0.25 - 1.0),
    "f16": ("F16", [3, 2], "e", lambda i: float(i - 4)),
    "bf16": ("BF16", [2, 2, 2], None, lambda i: (i - 2) * 0.5),
    "i8": ("I8", [5], "b", lambda i: (i * 37) % 256 - 128),
    "u8": ("U8", [6], "B", lambda i: (i * 13) % 256),
    "i32": ("I32", [3], "i", lambda i: i * 100000 - 7),
    "i64": ("I64", [2], "q", lambda i: i * (1 << 40) - 5),
    "bool": ("BOOL", [7], None, lambda i: i % 3 == 0),
    "scalar": ("F32", [], "f", lambda i: 2.5),
    "layers.0.\u00fcber": ("F32", [1, 2], "f", lambda i: -i - 0.75),
}
METADATA = {"uform.format": "4", "note": "caf\u00e9 \"quoted\"\n"}


def count(shape):
    total = 1
    for dimension in shape:
        total *= dimension
    return total


def encode(dtype, code, value):
    if dtype == "BF16":  # the upper half of the float32 (all values here are exact in bf16)
        return struct.pack("<f", value)[2:]
    if dtype == "BOOL":
        return b"\x01" if value else b"\x00"
    return struct.pack("<" + code, value)


def write(path):
    # Tensors in reverse name order, with an 8-byte hole before each, so the C reader meets a
    # layout its own writer never makes; the header is padded with spaces like the Rust writer's.
    header, data = {"__metadata__": METADATA}, b""
    for name in sorted(TENSORS, reverse=True):
        dtype, shape, code, value = TENSORS[name]
        data += b"\xee" * 8
        payload = b"".join(encode(dtype, code, value(i)) for i in range(count(shape)))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header, ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as stream:
        stream.write(struct.pack("<Q", len(text)) + text + data)


def check(path):
    failures = 0
    with open(path, "rb") as stream:
        blob = stream.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + length].decode("utf-8"))
    data = blob[8 + length :]
    if length % 8:
        print(f"header length {length} is not a multiple of 8")
        failures += 1
    if header.get("__metadata__") != METADATA:
        print(f"metadata {header.get('__metadata__')!r} != {METADATA!r}")
        failures += 1
    names = set(header) - {"__metadata__"}
    if names != set(TENSORS):
        print(f"tensors {sorted(names)} != {sorted(TENSORS)}")
        failures += 1
    end_of_previous = 0
    for name in sorted(names & set(TENSORS), key=lambda n: header[n]["data_offsets"][0]):
        dtype, shape, code, value = TENSORS[name]
        entry = header[name]
        if entry["dtype"] != dtype or entry["shape"] != shape:
            print(f"{name}: {entry['dtype']} {entry['shape']} != {dtype} {shape}")
            failures += 1
            continue
        begin, end = entry["data_offsets"]
        if begin != end_of_previous:  # the C writer packs tensors without holes
            print(f"{name}: begins at {begin}, expected {end_of_previous}")
            failures += 1
        end_of_previous = end
        expected = b"".join(encode(dtype, code, value(i)) for i in range(count(shape)))
        if data[begin:end] != expected:
            print(f"{name}: bytes {data[begin:end].hex()} != {expected.hex()}")
            failures += 1
    if end_of_previous != len(data):
        print(f"data section is {len(data)} bytes, tensors end at {end_of_previous}")
        failures += 1
    print(f"python check of {path}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    sys.exit(write(path) if mode == "write" else check(path))
