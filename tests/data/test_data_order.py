"""The epoch orders a loader draws in, against this file's own computation of them from docs/data.md
("The epoch orders, exactly"): SplitMix64 and the Fisher–Yates shuffle written here in Python
integers, the lines' slot rule, and the shards' order with a one-sample buffer. Every cursor ever
written depends on these numbers, so a change to them (a salt, the shuffle, the seed's mixing) fails
here even where the engine's own resume tests, which compare the engine with itself, still pass.

    test_data_order.py DATA_ORDER CORPUS    (data_order: tests/data/data_order.c; CORPUS: make_shards.py's)
"""
import json
import os
import subprocess
import sys
import tarfile

MASK = (1 << 64) - 1
LINES_SALT = 0xD1B54A32D192ED03
SHARDS_SALT = 0x8CB92BA72F3D8DD7


def splitmix64(state):
    """The next value and the advanced state (Steele, Lea and Flood, 2014)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31), state


def shuffled(n, state):
    """0..n-1 by Fisher–Yates from the last slot down, each swapped with a slot drawn below it."""
    order = list(range(n))
    for i in range(n, 1, -1):
        value, state = splitmix64(state)
        j = value % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def epoch_order(n, seed, salt, epoch):
    return shuffled(n, (seed ^ (salt * (epoch + 1))) & MASK)


def lines_batches(captions, seed, batch, batches):
    """Each slot takes the first line of the rest of the epoch not in the batch yet, swapped forward."""
    n, epoch, position = len(captions), 0, 0
    order = epoch_order(n, seed, LINES_SALT, epoch)
    result = []
    for _ in range(batches):
        picked = []
        while len(picked) < batch:
            if position == n:
                epoch, position = epoch + 1, 0
                order = epoch_order(n, seed, LINES_SALT, epoch)
            fits = [j for j in range(position, n) if order[j] not in picked]
            if not fits:
                position = n
                continue
            j = fits[0]
            order[position], order[j] = order[j], order[position]
            picked.append(order[position])
            position += 1
        result.append([captions[i] for i in picked])
    return result


def shard_captions(path):
    """A shard's captions in member order, read with Python's tarfile: KEY.txt, else KEY.json's caption."""
    texts, jsons, keys = {}, {}, []
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            key, _, extension = member.name.partition(".")
            if key not in keys:
                keys.append(key)
            data = archive.extractfile(member).read()
            if extension == "txt":
                texts[key] = data.decode().rstrip("\n")
            elif extension == "json":
                jsons[key] = json.loads(data).get("caption")
    return [texts.get(key) or jsons.get(key) for key in keys]


def shards_batches(shards, seed, batch, batches):
    """One partition, a buffer of one sample: each epoch's shards in the shuffled order, each in order."""
    stream, epoch = [], 0
    while len(stream) < batch * batches:
        for shard in epoch_order(len(shards), seed, SHARDS_SALT, epoch):
            stream.extend(shards[shard])
        epoch += 1
    return [stream[b * batch:(b + 1) * batch] for b in range(batches)]


def engine_batches(tool, arguments):
    out = subprocess.run([tool] + [str(a) for a in arguments], check=True, capture_output=True, text=True).stdout
    return [chunk.split("\n")[:-1] if chunk else [] for chunk in out.split("--\n")[:-1]]


def main():
    tool, corpus = sys.argv[1], sys.argv[2]
    captions = json.load(open(os.path.join(corpus, "expected.json")))["captions"]
    shard_paths = sorted(os.path.join(corpus, "shards", name) for name in os.listdir(os.path.join(corpus, "shards")))
    shards = [shard_captions(path) for path in shard_paths]
    assert len(captions) >= 40 and len(set(captions)) == len(captions), "the corpus has unique captions"
    assert len(shards) >= 4 and sum(map(len, shards)) == len(captions), "the shards hold the corpus"
    failures, checked = 0, 0
    # Seeds with the top bit set and 0 too; batches that end inside an epoch and across its boundary.
    for seed in (0, 7, 2**63 + 12345):
        for batch, batches in ((5, 23), (7, 15)):
            cases = [
                ("manifest", lines_batches(captions, seed, batch, batches),
                 ["manifest", os.path.join(corpus, "manifest.jsonl"), seed, batch, batches]),
                ("shards", shards_batches(shards, seed, batch, batches),
                 ["shards", os.path.join(corpus, "shards", "{000..%03d}.tar" % (len(shards) - 1)), seed, batch, batches, 1]),
            ]
            for name, expected, arguments in cases:
                got = engine_batches(tool, arguments)
                checked += 1
                if len(got) != batches or got != expected:
                    failures += 1
                    first = next((b for b in range(min(len(got), batches)) if got[b] != expected[b]), None)
                    print(f"FAIL {name} seed {seed} batch {batch}: {len(got)} batches; first difference at batch {first}:"
                          f" engine {got[first] if first is not None else None} expected {expected[first] if first is not None else None}")
    # Both samplers crossed at least two epoch boundaries: 23 batches of 5 are 115 samples, over 2 epochs of 48.
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures or checked != 12 else 0


if __name__ == "__main__":
    sys.exit(main())
