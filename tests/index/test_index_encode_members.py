"""`uform index CKPT inputs...` encoded by K members (--processes K, --mesh) against one process.

Issue 35, part 3 (the encoding half). Every member reads every item and cuts the batches one process
cuts; member r encodes the batches handed over in its block of item positions, and member 0 writes
the gathered items and error lines. So K = 1, 2, 3 must write the same bytes as one process with no
mesh: the index and INDEX.errors.jsonl. The reference is the one-process path (no mesh code runs
there), and what the file holds is read with NumPy from the safetensors layout (index_check.py):
every item of the corpus present once, with its modality and name, and finite unit rows. The
corpus mixes texts and images (and a broken image) with a small --batch, so batches of the two
modalities interleave and a wrong share would reorder items. Generated from a fixed seed at test
time; loopback only. Run by CTest with UFORM_PYTEST_CLI and UFORM_PYTEST_TINY set.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import index_check  # noqa: E402  (tests/index/index_check.py)

CLI = os.environ.get("UFORM_PYTEST_CLI", "")
TINY = os.environ.get("UFORM_PYTEST_TINY", "")
FAILING_MODULE = os.environ.get("UFORM_TEST_FAILING_FAISS", "")
TEXTS, IMAGES, FOLDER_IMAGES = 11, 9, 3  # with the broken image, 24 items: never split evenly by 5


def run(*arguments, expect=0, timeout=90):
    finished = subprocess.run([CLI, *map(str, arguments)], capture_output=True, text=True, timeout=timeout)
    assert finished.returncode == expect, (arguments, finished.returncode, finished.stdout, finished.stderr)
    return finished


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    assert CLI and TINY and Path(TINY).exists(), "run by CTest: the tiny_checkpoint fixture makes the checkpoint"
    folder = tmp_path_factory.mktemp("encode-members")
    generator = np.random.default_rng(35)
    (folder / "images").mkdir()
    (folder / "walked").mkdir()
    for i in range(IMAGES):
        pixels = generator.integers(0, 256, (24 + 4 * i, 40, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / "images" / f"img-{i:02d}.png")
    for i in range(FOLDER_IMAGES):
        pixels = generator.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / "walked" / f"w-{i}.png")
    (folder / "images" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"not a png at all" * 4)
    words = ["a", "red", "cat", "on", "the", "mat", "blue", "sky", "over", "sea", "two", "dogs"]
    lines, image = [], 0
    # Texts and images interleaved, two texts without an id (named MANIFEST:LINE).
    for i in range(TEXTS + IMAGES + 1):
        if i % 2 == 0 and i // 2 < TEXTS:
            text = " ".join(generator.choice(words, size=3 + i % 5))
            lines.append({"text": text, "id": f"t{i}"} if i % 6 else {"text": text})
        elif image < IMAGES:
            lines.append({"path": f"images/img-{image:02d}.png"})
            image += 1
        else:
            lines.append({"path": "images/broken.png"})
    while sum("text" in line for line in lines) < TEXTS:  # texts that did not fit in the interleaving
        lines.append({"text": f"late text {len(lines)}", "id": f"late{len(lines)}"})
    assert sum("text" in line for line in lines) == TEXTS and sum("path" in line for line in lines) == IMAGES + 1
    (folder / "corpus.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder, len(lines) + FOLDER_IMAGES


def build(folder: Path, name: str, members):
    """Members None: one process, no mesh (the reference); else --processes K."""
    out = folder / f"{name}.index"
    mesh = [] if members is None else ["--processes", members]
    # Exit 3: finished with the broken image listed.
    finished = run("index", TINY, folder / "walked", "--manifest", folder / "corpus.jsonl", "--out", out, "--batch", 3,
                   "--threads", 1, "--quiet", *mesh, expect=3)
    assert "failed (exit" not in finished.stderr, finished.stderr  # exit 3 stops no member
    return out


def test_encoded_index_same_bytes_for_1_2_3_members(corpus):
    folder, items = corpus
    reference = build(folder, "alone", None)
    files = [build(folder, f"k{k}", k) for k in (1, 2, 3)]
    one = reference.read_bytes()
    errors = Path(str(reference) + ".errors.jsonl").read_bytes()
    for other in files:
        assert other.read_bytes() == one, f"{other} differs from {reference}"
        assert Path(str(other) + ".errors.jsonl").read_bytes() == errors
    # The broken image is listed once, by its path.
    listed = [json.loads(line) for line in errors.decode().splitlines()]
    assert len(listed) == 1 and listed[0]["path"].endswith("broken.png"), listed
    # What the file holds, read with NumPy: every other item once, text and image rows of unit norm.
    modality = index_check.tensor(reference, "items.modality")
    offsets = index_check.tensor(reference, "items.path_offsets")
    paths = index_check.tensor(reference, "items.paths").tobytes()
    assert len(modality) == items - 1 and len(offsets) == items
    names = [paths[offsets[i]:offsets[i + 1]].decode() for i in range(items - 1)]
    assert len(set(names)) == items - 1
    texts, images = index_check.tensor(reference, "embeddings.text"), index_check.tensor(reference, "embeddings.image")
    assert texts.shape[0] == TEXTS and images.shape[0] == IMAGES + FOLDER_IMAGES
    assert int((modality == 0).sum()) == TEXTS and int((modality == 1).sum()) == IMAGES + FOLDER_IMAGES
    for rows in (texts, images):
        norms = np.linalg.norm(rows.astype(np.float64), axis=1)
        # F32 rows the engine normalised, measured in double: within 4.6e-8 of 1 here; 1e-6 leaves room
        # for other inputs, while rows scaled by 1 + 2^-19 (norms 1.9e-6 off) fail it (tried once).
        assert np.all(np.isfinite(rows)) and np.allclose(norms, 1.0, rtol=0, atol=1e-6), norms
    # Distinct inputs give distinct rows (a member that encoded the wrong batch would repeat some).
    assert len({row.tobytes() for row in images}) == IMAGES + FOLDER_IMAGES


def test_shards_same_bytes_for_1_2_3_members(tmp_path):
    """WebDataset shards written with Python's tarfile: members share by the shard being read when a
    batch is handed over; the files equal one process's, and every sample is in them once."""
    import io
    import tarfile

    generator = np.random.default_rng(36)
    samples = 0
    for shard in range(5):
        with tarfile.open(tmp_path / f"s{shard}.tar", "w") as tar:
            for k in range(3 + shard % 3):  # 3, 4, 5, 3, 4 samples: uneven shards
                name = f"{shard:02d}{k:03d}"
                payloads = {"txt": f"caption {shard} {k} {'word ' * (k + 1)}".encode()}
                if (shard + k) % 2:
                    buffer = io.BytesIO()
                    Image.fromarray(generator.integers(0, 256, (20 + k, 30, 3), dtype=np.uint8)).save(buffer, format="PNG")
                    payloads["png"] = buffer.getvalue()
                if shard == 2 and k == 1:
                    payloads["png"] = b"\x89PNG\r\n\x1a\n broken"
                for extension, payload in payloads.items():
                    info = tarfile.TarInfo(f"{name}.{extension}")
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
                samples += 1
    shards = str(tmp_path / "s{0..4}.tar")
    files = []
    for members in (None, 1, 2, 3):
        out = tmp_path / f"shards-{members}.index"
        mesh = [] if members is None else ["--processes", members]
        run("index", TINY, "--shards", shards, "--out", out, "--batch", 2, "--threads", 1, "--quiet", *mesh, expect=3)
        files.append(out)
    for other in files[1:]:
        assert other.read_bytes() == files[0].read_bytes(), other
        assert Path(str(other) + ".errors.jsonl").read_bytes() == Path(str(files[0]) + ".errors.jsonl").read_bytes()
    listed = Path(str(files[0]) + ".errors.jsonl").read_text().splitlines()
    assert len(listed) == 1 and "02001" in listed[0], listed
    modality = index_check.tensor(files[0], "items.modality")
    assert len(modality) == samples - 1
    offsets = index_check.tensor(files[0], "items.path_offsets")
    paths = index_check.tensor(files[0], "items.paths").tobytes()
    assert len({paths[offsets[i]:offsets[i + 1]] for i in range(samples - 1)}) == samples - 1


def test_approximate_structure_after_encoding(corpus, tmp_path):
    """--ann over a mesh: the members build the .faiss together (uform_index_ann_build_members inside
    uform_index_build: member 0 trains, each member adds the rows it encoded, member 0 merges), and
    K = 1, 2 write the same bytes as one process. A 15-row training sample of the 23 items, so the
    members' blocks hold different shares of it. Debian's python3-faiss opens the file and finds each
    stored row first (IVF4,Flat probing every list)."""
    import faiss

    folder, items = corpus
    files = []
    for members in (None, 1, 2):
        out = tmp_path / f"ann-{members}.index"
        mesh = [] if members is None else ["--processes", members]
        run("index", TINY, folder / "walked", "--manifest", folder / "corpus.jsonl", "--out", out, "--batch", 3,
            "--threads", 1, "--ann=IVF4,Flat", "--ann-threads", 1, "--ann-train", 15, "--quiet", *mesh, expect=3)
        files.append(out)
    reference = files[0].with_suffix(".faiss").read_bytes()
    assert len(reference) > (items - 1) * 4  # a structure holding the rows, not an empty file
    for other in files[1:]:
        assert other.read_bytes() == files[0].read_bytes(), other
        assert other.with_suffix(".faiss").read_bytes() == reference, f"{other.with_suffix('.faiss')} differs"
    structure = faiss.read_index(str(files[2].with_suffix(".faiss")))
    assert structure.ntotal == items - 1
    faiss.extract_index_ivf(structure).nprobe = 4
    modality = index_check.tensor(files[2], "items.modality")
    images = index_check.tensor(files[2], "embeddings.image").astype(np.float32)
    image_items = np.flatnonzero(modality == 1)
    assert len(image_items) == len(images) == IMAGES + FOLDER_IMAGES
    _, ids = structure.search(images, 1)
    assert np.array_equal(ids[:, 0], image_items), (ids[:, 0], image_items)


def test_every_member_adds_the_rows_it_encoded(corpus, tmp_path):
    """Which member adds: member 1's FAISS module (tests/index/faiss_failing_add.c) refuses every add,
    so the run fails with member 1's message on both members exactly when member 1 adds its own rows
    (a structure built by member 0 alone from every row would never ask member 1's module)."""
    assert FAILING_MODULE and Path(FAILING_MODULE).exists(), "UFORM_TEST_FAILING_FAISS names no module"
    folder, _ = corpus
    out = tmp_path / "adds.index"
    members = []
    for rank in (0, 1):
        environment = dict(os.environ)
        if rank == 1:
            environment["UFORM_FAISS_MODULE"] = FAILING_MODULE
        members.append(subprocess.Popen(
            [CLI, "index", TINY, str(folder / "walked"), "--manifest", str(folder / "corpus.jsonl"), "--out", str(out),
             "--batch", "3", "--threads", "1", "--ann=IVF4,Flat", "--mesh", str(tmp_path), "--job", "adds", "--index",
             str(rank), "--count", "2", "--mesh-timeout", "60", "--mesh-address", "127.0.0.1", "--quiet"],
            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    finished = [m.communicate(timeout=90) for m in members]
    assert [m.returncode for m in members] == [1, 1], finished
    assert "member 1 of 2 failed while adding its rows" in finished[0][1], finished[0]
    assert "injected add failure" in finished[1][1], finished[1]
    assert out.exists() and not out.with_suffix(".faiss").exists()  # the index stays written; no structure


def test_members_asking_for_other_structures_all_fail(corpus, tmp_path):
    folder, _ = corpus
    out = tmp_path / "recipes.index"
    recipes = ["--ann=IVF4,Flat", "--ann=IVF2,Flat"]
    members = [subprocess.Popen([CLI, "index", TINY, "--manifest", str(folder / "corpus.jsonl"), "--out", str(out),
                                 recipes[i], "--mesh", str(tmp_path), "--job", "recipes", "--index", str(i), "--count", "2",
                                 "--mesh-timeout", "60", "--mesh-address", "127.0.0.1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    finished = [m.communicate(timeout=90) for m in members]
    for member, (_, err) in zip(members, finished):
        assert member.returncode == 1 and "member 1 asks for another approximate structure than member 0" in err, err
    assert not out.exists()


def test_member_that_fails_stops_the_others_at_once(corpus, tmp_path):
    folder, _ = corpus
    out = tmp_path / "failed.index"
    start = time.monotonic()
    # Member 1 cannot load its checkpoint: it still meets the others at the gather, with nothing,
    # so member 0 fails at once naming it rather than after the 60-second timeout.
    checkpoints = [TINY, str(tmp_path / "missing.safetensors")]
    members = [subprocess.Popen([CLI, "index", checkpoints[i], "--manifest", str(folder / "corpus.jsonl"), "--out", str(out),
                                 "--mesh", str(tmp_path), "--job", "failed", "--index", str(i), "--count", "2",
                                 "--mesh-timeout", "60", "--mesh-address", "127.0.0.1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    finished = [m.communicate(timeout=90) for m in members]
    assert time.monotonic() - start < 30
    assert members[0].returncode == 1 and "member 1 of 2 failed before the build" in finished[0][1], finished[0]
    assert members[1].returncode == 1 and "missing.safetensors" in finished[1][1], finished[1]
    assert not out.exists()
    assert not Path(str(out) + ".errors.jsonl").exists()


def test_members_given_other_inputs_all_fail(corpus, tmp_path):
    folder, _ = corpus
    out = tmp_path / "other.index"
    other = tmp_path / "other.jsonl"
    other.write_text((folder / "corpus.jsonl").read_text().replace('"t2"', '"changed"'))
    manifests = [folder / "corpus.jsonl", other]
    members = [subprocess.Popen([CLI, "index", TINY, "--manifest", str(manifests[i]), "--out", str(out), "--mesh", str(tmp_path),
                                 "--job", "other", "--index", str(i), "--count", "2", "--mesh-timeout", "60",
                                 "--mesh-address", "127.0.0.1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    finished = [m.communicate(timeout=90) for m in members]
    for member, (_, err) in zip(members, finished):
        assert member.returncode == 1 and "member 1 reads other inputs than member 0" in err, err
    assert not out.exists()


@pytest.mark.parametrize("flags, named", [
    (["--resume"], "--resume"),
    (["--checkpoint", "5"], "--checkpoint"),
])
def test_refused_over_a_mesh(corpus, tmp_path, flags, named):
    folder, _ = corpus
    finished = run("index", TINY, "--manifest", folder / "corpus.jsonl", "--out", tmp_path / "x.index", "--processes", 2,
                   *flags, expect=2)
    assert named in finished.stderr and "not supported with --processes / --mesh" in finished.stderr, finished.stderr
    assert not (tmp_path / "x.index").exists()
