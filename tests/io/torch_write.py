"""Writes the PyTorch checkpoints that tests/io/torch_read.c reads, and what it must find in them.

Usage: torch_write.py DIR  (run by Debian's /usr/bin/python3, which has torch and NumPy).

Into DIR go real files written by torch.save (state dicts of every dtype, scalars, empty tensors,
views sharing a storage, non-contiguous views, nested checkpoint dicts, protocol 4, parameters,
the legacy format, TorchScript), archives this script lays out itself with zip64 records
(one with offsets past 4 GiB in a sparse file) that torch.load must read back, and hostile files:
pickles naming forbidden globals, storages past their entries, overflowing shapes, deep marks,
truncations, compressed and corrupted entries. The expected bytes of every tensor come from the
tensors in memory (NumPy's bytes), never from the files.

DIR/manifest.tsv lists, one per line (tab-separated):
    ok FILE COUNT                      FILE opens and holds COUNT tensors, then COUNT lines:
    tensor NAME DTYPE SHAPE DUMP MAPPED    SHAPE "2,3" ("" for a scalar), MAPPED 1, 0 or - (any)
    fail FILE STATUS TEXT              opening FILE answers STATUS with TEXT in the message
Exits 77 when torch cannot be imported, 1 when torch.load(weights_only=True) accepts a file that
must be refused or refuses a crafted file that is valid.
"""

import collections
import os
import pickle
import struct
import sys
import zipfile
import zlib

try:
    import numpy
    import torch
except ImportError as error:
    print(f"skipped: {error}")
    sys.exit(77)

DTYPES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}

directory = sys.argv[1]
manifest = []
problems = []


def path_of(name):
    return os.path.join(directory, name)


def tensor_bytes(tensor):
    """The tensor's elements in row-major order, as NumPy lays them out in memory."""
    tensor = tensor.detach().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().tobytes()
    return tensor.numpy().tobytes()


def flatten(value, prefix=""):
    """The documented naming (docs/pytorch-files.md), written independently of the C reader."""
    names = {}
    for key, item in value.items():
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            continue
        name = prefix + str(key)
        if isinstance(item, torch.Tensor):
            names[name] = item
        elif isinstance(item, dict):
            names.update(flatten(item, name + "."))
    return names


def expect_ok(file, obj, names=None):
    """Lists FILE's tensors: those of `names`, or the flattening of `obj`."""
    names = flatten(obj) if names is None else names
    manifest.append(f"ok\t{file}\t{len(names)}")
    for index, (name, tensor) in enumerate(sorted(names.items())):
        dump = f"{file}.{index}.bin"
        with open(path_of(dump), "wb") as stream:
            stream.write(tensor_bytes(tensor))
        shape = ",".join(str(size) for size in tensor.shape)
        mapped = "-" if tensor.numel() == 0 else ("1" if tensor.is_contiguous() else "0")
        manifest.append(f"tensor\t{name}\t{DTYPES[tensor.dtype]}\t{shape}\t{dump}\t{mapped}")


def expect_fail(file, status, text):
    manifest.append(f"fail\t{file}\t{status}\t{text}")


def save(file, obj, **options):
    torch.save(obj, path_of(file), **options)
    return file


def weights_only_refuses(file):
    try:
        torch.load(path_of(file), weights_only=True)
        return False
    except Exception:  # torch raises RuntimeError, UnpicklingError, ... depending on the check
        return True


def check_torch_refuses(file):
    if not weights_only_refuses(file):
        problems.append(f"torch.load(weights_only=True) accepts {file}, which the C reader must refuse")


def check_torch_reads(file, obj):
    loaded = torch.load(path_of(file), weights_only=True)
    expected, found = flatten(obj), flatten(loaded)
    if sorted(expected) != sorted(found) or any(not torch.equal(expected[k], found[k]) for k in expected):
        problems.append(f"torch.load reads {file} differently from what was written")


# ---- an independent ZIP writer (PKWARE APPNOTE 4.3), laid out as miniz lays out torch.save's ----

def write_zip(file, entries, zip64=False, hole=0, comment=b"", zip64_end=True):
    """entries: dicts of name, data, and optionally method (8: deflate), crc (a wrong one), flags.
    zip64: every size and offset goes through zip64 extra fields. hole: that many bytes of
    nothing (a sparse region) after the first entry."""
    records = []
    with open(path_of(file), "wb") as stream:
        for index, entry in enumerate(entries):
            if index == 1 and hole:
                stream.seek(hole, os.SEEK_CUR)
            name, data = entry["name"].encode(), entry["data"]
            method = entry.get("method", 0)
            stored = data
            if method == 8:
                packer = zlib.compressobj(9, zlib.DEFLATED, -15)
                stored = packer.compress(data) + packer.flush()
            crc = entry.get("crc", zlib.crc32(data))
            flags = entry.get("flags", 0)
            offset = stream.tell()
            extra = struct.pack("<HHQQ", 1, 16, len(data), len(stored)) if zip64 else b""
            start = offset + 30 + len(name) + len(extra) + 4
            padding = (-start) % 64  # data aligned to 64 bytes behind an "FB" field, as PyTorch does
            extra += b"FB" + struct.pack("<H", padding) + b"Z" * padding
            sizes = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (len(stored), len(data))
            stream.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, flags, method, 0, 0x21, crc,
                                     sizes[0], sizes[1], len(name), len(extra)))
            stream.write(name + extra + stored)
            records.append((name, method, crc, flags, len(data), len(stored), offset))
        directory_start = stream.tell()
        for name, method, crc, flags, size, stored_size, offset in records:
            wide = zip64 or offset >= 0xFFFFFFFF
            extra = struct.pack("<HHQQQ", 1, 24, size, stored_size, offset) if wide else b""
            fields = (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF) if wide else (stored_size, size, offset)
            stream.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45 if wide else 20, flags, method, 0, 0x21,
                                     crc, fields[0], fields[1], len(name), len(extra), 0, 0, 0, 0, fields[2]))
            stream.write(name + extra)
        directory_size = stream.tell() - directory_start
        count = len(records)
        if zip64_end:
            end64 = stream.tell()
            stream.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, directory_size,
                                     directory_start))
            stream.write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        stream.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                                 min(directory_size, 0xFFFFFFFF), min(directory_start, 0xFFFFFFFF), len(comment)))
        stream.write(comment)
    return file


def entries_of(file):
    """The records of a torch.save archive, in order, for rewriting."""
    with zipfile.ZipFile(path_of(file)) as archive:
        return [{"name": info.filename, "data": archive.read(info)} for info in archive.infolist()]


# ---- a pickle emitter for hand-made data.pkl files ----

def text(value):
    data = value.encode() if isinstance(value, str) else value
    return b"X" + struct.pack("<I", len(data)) + data


def integer(value):
    if 0 <= value < 256:
        return b"K" + bytes([value])
    if -(1 << 31) <= value < (1 << 31):
        return b"J" + struct.pack("<i", value)
    data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data


def tuple_of(*items):
    return b"(" + b"".join(items) + b"t"


def storage(kind, key, numel):
    return tuple_of(text("storage"), b"ctorch\n" + kind.encode() + b"\n", text(key), text("cpu"), integer(numel)) + b"Q"


def rebuild(kind, key, numel, offset, size, stride):
    return (b"ctorch._utils\n_rebuild_tensor_v2\n" +
            tuple_of(storage(kind, key, numel), integer(offset), tuple_of(*map(integer, size)),
                     tuple_of(*map(integer, stride)), b"\x89", b"ccollections\nOrderedDict\n)R") + b"R")


def state(*pairs):
    """A protocol 2 pickle of a dict of name -> pickled value."""
    return b"\x80\x02}(" + b"".join(text(name) + value for name, value in pairs) + b"u."


def crafted(file, pickle_bytes, storages=(), zip64=False, **options):
    """An archive named FILE holding `pickle_bytes` as data.pkl and raw storages data/<key>."""
    entries = [{"name": "archive/data.pkl", "data": pickle_bytes}]
    entries += [{"name": f"archive/data/{key}", "data": data} for key, data in storages]
    entries.append({"name": "archive/version", "data": b"3\n"})
    return write_zip(file, entries, zip64=zip64, **options)


FLOATS = numpy.arange(24, dtype=numpy.float32).tobytes()  # storage "0": 24 floats 0..23


def main():
    torch.manual_seed(20260301)
    os.makedirs(directory, exist_ok=True)

    # A module's state dict: an OrderedDict with _metadata, F32 weights, an I64 scalar buffer.
    module = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.LayerNorm(7), torch.nn.BatchNorm1d(7),
                                 torch.nn.Embedding(11, 4))
    module_state = module.state_dict()
    expect_ok(save("module_state.pt", module_state), module_state)

    # Every dtype, a scalar, empty tensors.
    dtypes = {
        "f16": torch.randn(3, 4).half(), "bf16": torch.randn(2, 5).bfloat16(), "f64": torch.randn(6).double(),
        "i64": torch.arange(-5, 5, dtype=torch.int64) * (1 << 40), "i32": torch.arange(-3, 9, dtype=torch.int32),
        "i8": torch.arange(-8, 8, dtype=torch.int8), "u8": torch.arange(0, 250, 10, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True, True]), "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0), "empty_rows": torch.zeros(3, 0, 2), "rank4": torch.randn(2, 1, 3, 2),
    }
    expect_ok(save("dtypes.pt", dtypes), dtypes)

    # Views of one storage at offsets, and one tensor under two names (tied weights).
    base = torch.arange(40, dtype=torch.float32)
    tied = torch.randn(4, 3)
    shared = {"base": base, "middle": base[5:12], "rows": base.view(8, 5)[2:5], "tied.a": tied, "tied.b": tied}
    expect_ok(save("shared.pt", shared), shared)

    # Views that are not contiguous: copied by the reader.
    matrix = torch.randn(5, 3)
    strided = {"transposed": matrix.t(), "every_other": base[::2], "expanded": torch.randn(3, 1).expand(3, 4),
               "permuted": torch.randn(2, 3, 4).permute(2, 0, 1), "column": matrix[:, 1], "matrix": matrix}
    expect_ok(save("strided.pt", strided), strided)

    # A training checkpoint: nested dicts, integer keys, leaves of every other kind, skipped.
    nested = {
        "state_dict": {"fc.weight": torch.randn(2, 2), "fc.bias": torch.randn(2)},
        "optimizer": {"state": {0: {"exp_avg": torch.randn(2, 2), "step": 3}}, "param_groups": [{"lr": 0.1}]},
        "epoch": 3, "name": "model", "none": None, "ratio": 1.5, "big": 1 << 70, "list": [torch.ones(2)],
        "tuple": (torch.zeros(1), 2), "size": torch.Size([2, 3]), "dtype": torch.float16,
        "device": torch.device("cpu"), "flags": [True, False],
    }
    expect_ok(save("nested.pt", nested), nested)

    # Protocol 4: FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL.
    expect_ok(save("protocol4.pt", module_state, pickle_protocol=4), module_state)

    # UForm 3's encoders are BF16 state dicts (BFloat16Storage).
    bf16_module = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.LayerNorm(6)).to(torch.bfloat16)
    bf16_state = bf16_module.state_dict()
    expect_ok(save("uform3_bf16.pt", bf16_state), bf16_state)

    # Parameters, not detached tensors: _rebuild_parameter.
    parameters = module.state_dict(keep_vars=True)
    expect_ok(save("parameters.pt", parameters), parameters)

    # The legacy format (PyTorch before 1.6), which old pytorch_model.bin files on the hub have.
    expect_ok(save("legacy.pt", module_state, _use_new_zipfile_serialization=False), module_state)
    expect_ok(save("legacy_dtypes.pt", dtypes, _use_new_zipfile_serialization=False, pickle_protocol=4), dtypes)
    expect_ok(save("legacy_views.pt", {**shared, **strided}, _use_new_zipfile_serialization=False), {**shared, **strided})
    with open(path_of("legacy.pt"), "rb") as stream:
        legacy = stream.read()
    with open(path_of("legacy_cut.pt"), "wb") as stream:
        stream.write(legacy[:-7])
    expect_fail("legacy_cut.pt", "format", "run past the end of the")
    version = pickle.dumps(1001, protocol=2)
    at = legacy.index(version, 10)
    with open(path_of("legacy_version.pt"), "wb") as stream:
        stream.write(legacy[:at] + pickle.dumps(1000, protocol=2) + legacy[at + len(version):])
    expect_fail("legacy_version.pt", "unsupported", "not the version 1001")

    # Formats this reader does not read.
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path_of("scripted.pt"))
    expect_fail("scripted.pt", "unsupported", "TorchScript")
    expect_fail(save("bare_tensor.pt", torch.ones(3)), "unsupported", "not a dict of tensors")
    expect_fail(save("int16.pt", {"short": torch.arange(4, dtype=torch.int16)}), "unsupported", "int16")
    expect_fail(save("complex.pt", {"c": torch.zeros(2, dtype=torch.complex64)}), "format", "ComplexFloatStorage")

    # The same records laid out by this script: zip64 fields everywhere, then a byteorder record.
    records = entries_of("module_state.pt")
    expect_ok(write_zip("zip64_fields.pt", records, zip64=True), module_state)
    check_torch_reads("zip64_fields.pt", module_state)
    expect_ok(write_zip("comment.pt", records, zip64_end=False, comment=b"written by torch_write.py"), module_state)
    check_torch_reads("comment.pt", module_state)
    little = records[:1] + [{"name": records[0]["name"].split("/")[0] + "/byteorder", "data": b"little"}] + records[1:]
    expect_ok(write_zip("little.pt", little), module_state)
    big = [dict(entry, data=b"big") if entry["name"].endswith("/byteorder") else entry for entry in little]
    expect_fail(write_zip("big.pt", big), "unsupported", "big-endian")

    # Offsets past 4 GiB: a sparse hole of 4.25 GiB after the first record.
    write_zip("past_4gib.pt", records[-1:] + records[:-1], hole=(17 << 28))
    if os.stat(path_of("past_4gib.pt")).st_blocks * 512 < (64 << 20):
        expect_ok("past_4gib.pt", module_state)
        check_torch_reads("past_4gib.pt", module_state)
    else:  # a file system without sparse files: do not keep 4 GiB of zeros around
        os.unlink(path_of("past_4gib.pt"))
        print("note: no sparse files here, the 4 GiB case is left out")

    # Hand-made pickles that are valid: a view at an offset, a strided copy, an OrderedDict from pairs.
    pairs = (b"ccollections\nOrderedDict\n" + b"(]" + tuple_of(text("x"), rebuild("FloatStorage", "0", 24, 0, (2,), (1,))) +
             b"at" + b"R")
    valid = state(("offset", rebuild("FloatStorage", "0", 24, 6, (2, 3), (3, 1))),
                  ("columns", rebuild("FloatStorage", "0", 24, 1, (3, 2), (1, 4))), ("pairs", pairs))
    values = torch.arange(24, dtype=torch.float32)
    made = {"offset": values[6:12].view(2, 3), "columns": values.as_strided((3, 2), (1, 4), 1),
            "pairs": {"x": values[0:2]}}
    expect_ok(crafted("made.pt", valid, [("0", FLOATS)]), made)
    check_torch_reads("made.pt", made)

    # ---- hostile files ----
    class Evil:
        def __reduce__(self):
            return (eval, ("__import__('os').system('echo pwned')",))

    system = b"\x80\x02}(" + text("x") + b"cos\nsystem\n" + tuple_of(text("echo pwned")) + b"Ru."
    hostile = [
        ("os_system.pt", system, "format", "global 'os.system' is not on the allow-list"),
        ("builtins_eval.pt", pickle.dumps({"x": Evil()}, protocol=2), "format", "global '__builtin__.eval'"),
        ("eval_protocol4.pt", pickle.dumps({"x": Evil()}, protocol=4), "format", "global 'builtins.eval'"),
        ("numpy_array.pt", pickle.dumps({"x": numpy.zeros(3)}, protocol=2), "format", "numpy.core.multiarray._reconstruct"),
        ("reduce_storage.pt", state(("x", b"ctorch\nFloatStorage\n)R")), "format", "may only be named, not called"),
        ("reduce_string.pt", state(("x", text("os") + b")R")), "format", "REDUCE calls a string"),
        ("inst.pt", b"\x80\x02(X\x02\x00\x00\x00lsios\nsystem\n.", "format", "INST"),
        ("long4.pt", b"\x80\x02\x8b\x01\x00\x00\x00\x01.", "format", "LONG4"),
    ]
    for file, data, status, message in hostile:
        crafted(file, data)
        expect_fail(file, status, message)
        if file != "reduce_storage.pt":  # torch's own list lets a storage type be called (an empty storage)
            check_torch_refuses(file)

    structural = [
        ("storage_too_big.pt", state(("x", rebuild("FloatStorage", "0", 25, 0, (25,), (1,)))), "format",
         "more than the 96 bytes of entry 'archive/data/0'"),
        ("view_past_storage.pt", state(("x", rebuild("FloatStorage", "0", 24, 20, (2, 3), (3, 1)))), "format",
         "reaches element 25 of a storage of 24 elements"),
        ("missing_storage.pt", state(("x", rebuild("FloatStorage", "7", 4, 0, (4,), (1,)))), "format",
         "no entry 'archive/data/7'"),
        ("shape_overflow.pt", state(("x", rebuild("FloatStorage", "0", 24, 0, (1 << 40, 1 << 40), (0, 0)))), "format",
         "reach past 2^64 elements"),
        ("negative_stride.pt", state(("x", rebuild("FloatStorage", "0", 24, 23, (4,), (-1,)))), "format",
         "stride[0] is negative"),
        ("huge_long1.pt", state(("x", rebuild("FloatStorage", "0", 24, 0, (1 << 2000,), (1,)))), "format",
         "an int wider than 64 bits"),
        ("deep_marks.pt", b"\x80\x02" + b"(" * 100000 + b"}.", "format", "more than 1024 MARKs"),
        ("memo_far.pt", b"\x80\x02}r\xff\xff\xff\x7f.", "format", "memo slot 2147483647"),
        ("memo_unset.pt", b"\x80\x02}h\x05.", "format", "memo slot 5 is read before"),
        ("no_stop.pt", state(("x", integer(1)))[:-1], "format", "without a STOP"),
        ("truncated_pickle.pt", state(("x", rebuild("FloatStorage", "0", 24, 0, (24,), (1,))))[:50], "format",
         "the pickle ends inside"),
        ("self_dict.pt", b"\x80\x02}q\x00X\x01\x00\x00\x00ah\x00s.", "format", "a dict contains itself"),
        ("dag.pt", b"\x80\x02}q\x00" + b"".join(b"}q" + bytes([i + 1]) + b"(" + text("a") + b"h" + bytes([i]) + text("b") +
                                                  b"h" + bytes([i]) + b"u" for i in range(60)) + b".",
         "format", "step limit"),
        ("build_tensor.pt", state(("x", rebuild("FloatStorage", "0", 24, 0, (24,), (1,)) + b"}" + text("k") + integer(1) +
                                   b"sb")), "unsupported", "BUILD sets a dict as a tensor's state"),
        ("persistent_kind.pt", state(("x", tuple_of(text("module"), text("x")) + b"Q")), "format",
         "persistent id is a tuple of 2 items"),
        ("top_list.pt", b"\x80\x02]q\x00.", "unsupported", "holds a list, not a dict"),
        ("bad_key.pt", b"\x80\x02}(X\x02\x00\x00\x00\xc3(" + rebuild("FloatStorage", "0", 24, 0, (1,), (1,)) + b"u.",
         "format", "not valid UTF-8"),
        ("protocol6.pt", b"\x80\x06}.", "unsupported", "pickle protocol 6"),
    ]
    for file, data, status, message in structural:
        expect_fail(crafted(file, data, [("0", FLOATS)]), status, message)
    for file in ("memo_unset.pt", "no_stop.pt", "bad_key.pt"):
        check_torch_refuses(file)
    # For the record (docs/pytorch-files.md): what PyTorch's own restricted loader makes of the rest.
    accepted = [file for file, _, _, _ in structural if not weights_only_refuses(file)]
    print(f"torch.load(weights_only=True) accepts {len(accepted)} of the {len(structural)} malformed pickles the C "
          f"reader refuses: {', '.join(accepted)}")

    # Archives that are broken as archives.
    good = state(("x", rebuild("FloatStorage", "0", 24, 0, (24,), (1,))))
    write_zip("bad_crc.pt", [{"name": "archive/data.pkl", "data": good, "crc": 0x12345678},
                             {"name": "archive/data/0", "data": FLOATS}])
    expect_fail("bad_crc.pt", "format", "fails its CRC-32 check")
    write_zip("compressed.pt", [{"name": "archive/data.pkl", "data": good, "method": 8},
                                {"name": "archive/data/0", "data": FLOATS}])
    expect_fail("compressed.pt", "unsupported", "is compressed (method 8)")
    write_zip("compressed_storage.pt", [{"name": "archive/data.pkl", "data": good},
                                        {"name": "archive/data/0", "data": FLOATS, "method": 8}])
    expect_fail("compressed_storage.pt", "unsupported", "'archive/data/0' is compressed")
    write_zip("encrypted.pt", [{"name": "archive/data.pkl", "data": good, "flags": 1}])
    expect_fail("encrypted.pt", "unsupported", "is encrypted")
    write_zip("duplicate.pt", [{"name": "archive/data.pkl", "data": good}, {"name": "archive/data.pkl", "data": good}])
    expect_fail("duplicate.pt", "format", "appears twice")
    write_zip("no_folder.pt", [{"name": "data.pkl", "data": good}])
    expect_fail("no_folder.pt", "format", "is not inside a folder")
    write_zip("no_pickle.pt", [{"name": "archive/version", "data": b"3\n"}])
    expect_fail("no_pickle.pt", "format", "no entry 'archive/data.pkl'")
    with open(path_of("module_state.pt"), "rb") as stream:
        whole = stream.read()
    for cut in (len(whole) - 1, len(whole) - 30, len(whole) // 2, 100):
        with open(path_of(f"cut_{cut}.pt"), "wb") as stream:
            stream.write(whole[:cut])
        expect_fail(f"cut_{cut}.pt", "format", "")
    with open(path_of("bare.pkl"), "wb") as stream:
        stream.write(pickle.dumps({"x": 1}, protocol=2))
    expect_fail("bare.pkl", "format", "bare pickle")

    with open(path_of("manifest.tsv"), "w") as stream:
        stream.write("\n".join(manifest) + "\n")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


sys.exit(main())
