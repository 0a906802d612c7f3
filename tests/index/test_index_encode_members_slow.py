"""A member that finishes its share of an encoded index early waits for the others past the mesh's timeout.

Issue 35, part 3 (the encoding half). Not in `make test` (about 10 s here: the `small` checkpoint
encodes 40 images): `make test-index-encode-members-slow`. Member 0's share is slow (images), member
1's fast (texts); under a 1-second mesh timeout, member 1 answers a round every 100 ms while member
0 works, so neither times out, and the file is the bytes one process writes (the reference: a run
with no mesh). Generated at test time from a fixed seed; loopback only.
"""

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
from PIL import Image

CLI = os.environ.get("UFORM_PYTEST_CLI", "")


def run(*arguments, expect=0, timeout=90):
    finished = subprocess.run([CLI, *map(str, arguments)], capture_output=True, text=True, timeout=timeout)
    assert finished.returncode == expect, (arguments, finished.returncode, finished.stdout, finished.stderr)
    return finished


def test_member_that_finishes_early_waits_past_the_timeout(tmp_path):
    """Member 0's share is 40 images for the `small` checkpoint (seconds), member 1's 40 short texts
    (a fraction of a second), under a 1-second mesh timeout: member 1 answers a round every 100 ms
    while it waits, so neither times out, and the file is one process's."""
    generator = np.random.default_rng(7)
    checkpoint = tmp_path / "small.safetensors"
    subprocess.run([str(Path(CLI).with_name("uform_tiny_checkpoint")), str(checkpoint), "--seed", "11", "--size", "small"],
                   check=True, capture_output=True, timeout=60)
    lines = []
    for i in range(40):
        Image.fromarray(generator.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(tmp_path / f"{i:02d}.png")
        lines.append({"path": f"{i:02d}.png"})
    lines += [{"text": f"caption {i}", "id": f"t{i}"} for i in range(40)]
    (tmp_path / "slow.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "slow.index"
    start = time.monotonic()
    members = [subprocess.Popen([CLI, "index", str(checkpoint), "--manifest", str(tmp_path / "slow.jsonl"), "--out", str(out),
                                 "--mesh", str(tmp_path), "--job", "slow", "--index", str(i), "--count", "2",
                                 "--mesh-timeout", "1", "--mesh-address", "127.0.0.1", "--threads", "1", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    finished = [m.communicate(timeout=90) for m in members]
    took = time.monotonic() - start
    assert [m.returncode for m in members] == [0, 0], finished
    assert took > 1.5, f"member 0's share took {took:.1f} s: too short to show the wait"
    one = tmp_path / "one.index"
    run("index", checkpoint, "--manifest", tmp_path / "slow.jsonl", "--out", one, "--threads", 1, "--quiet")
    assert out.read_bytes() == one.read_bytes()
