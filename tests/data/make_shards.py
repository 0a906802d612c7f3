"""The data tests' corpus, written with Python's tarfile in img2dataset's layout (no fixture in git).

    make_shards.py OUT [--samples N] [--per-shard K] [--seed S]

OUT/loose/ and OUT/manifest.jsonl   N pictures (PNG and JPEG, 32x32) with unique captions, in order
OUT/shards/{000..}.tar              the same samples, K per shard, in the same order: KEY.jpg or
                                    KEY.png, KEY.txt (every third sample carries its caption in
                                    KEY.json's "caption" instead) and KEY.json
OUT/gz/{000..}.tar.gz               the same shards, gzip-compressed
OUT/pax/{000..}.tar                 the same samples under a 150-byte folder (pax long names)
OUT/bad/{000..003}.tar              one fault each: a medium renamed to garbage (KEY.xyz), a sample
                                    without text, an image of random bytes, a truncated shard
OUT/expected.json                   the captions in order and, for bad/, the key of each fault
"""
import argparse
import io
import json
import os
import random
import tarfile

from PIL import Image, ImageDraw

COLOURS = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 50, 220), "yellow": (230, 200, 20)}


def picture(rng, colour, shape, place):
    image = Image.new("RGB", (32, 32), tuple(rng.randint(200, 255) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    x = {"left": 9, "right": 23}[place] + rng.randint(-2, 2)
    y, r = 16 + rng.randint(-2, 2), 6
    (draw.ellipse if shape == "disc" else draw.rectangle)([x - r, y - r, x + r, y + r], fill=COLOURS[colour])
    return image


def encoded(image, kind):
    out = io.BytesIO()
    image.save(out, format="PNG" if kind == "png" else "JPEG", quality=90)
    return out.getvalue()


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def write_shard(path, members, mode="w", format=tarfile.USTAR_FORMAT):
    with tarfile.open(path, mode, format=format) as tar:
        for name, data in members:
            add(tar, name, data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--samples", type=int, default=48)
    parser.add_argument("--per-shard", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for folder in ("loose", "shards", "gz", "pax", "bad"):
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
    samples = []
    for i in range(args.samples):
        colour, shape, place = rng.choice(list(COLOURS)), rng.choice(["disc", "square"]), rng.choice(["left", "right"])
        kind = "png" if i % 2 else "jpg"
        samples.append({"key": f"{i:06d}", "caption": f"sample {i}: a {colour} {shape} on the {place}", "kind": kind,
                        "bytes": encoded(picture(rng, colour, shape, place), kind)})
    with open(os.path.join(args.out, "manifest.jsonl"), "w") as manifest:
        for s in samples:
            name = f"loose/{s['key']}.{s['kind']}"
            open(os.path.join(args.out, name), "wb").write(s["bytes"])
            manifest.write(json.dumps({"text": s["caption"], "image": name}) + "\n")

    def members(s, prefix=""):
        key = prefix + s["key"]
        listed = [(f"{key}.{s['kind']}", s["bytes"])]
        meta = {"key": s["key"], "width": 32, "height": 32}
        if int(s["key"]) % 3 == 2:
            meta["caption"] = s["caption"]          # the caption only in the JSON member
        else:
            listed.append((f"{key}.txt", s["caption"].encode()))
        listed.append((f"{key}.json", json.dumps(meta).encode()))
        return listed

    long_prefix = "deep/" + "x" * 150 + "/"
    shards = [samples[i:i + args.per_shard] for i in range(0, len(samples), args.per_shard)]
    for n, shard in enumerate(shards):
        flat = [m for s in shard for m in members(s)]
        write_shard(os.path.join(args.out, "shards", f"{n:03d}.tar"), flat)
        write_shard(os.path.join(args.out, "gz", f"{n:03d}.tar.gz"), flat, "w:gz")
        write_shard(os.path.join(args.out, "pax", f"{n:03d}.tar"), [m for s in shard for m in members(s, long_prefix)],
                    format=tarfile.PAX_FORMAT)

    # One fault per bad shard, in its third sample; the others stay good.
    faults = {}
    for n, fault in enumerate(["renamed", "no_text", "undecodable", "truncated"]):
        shard = shards[n]
        flat = []
        for j, s in enumerate(shard):
            listed = members(s)
            if j == 2 and fault == "renamed":
                listed = [(name.replace("." + s["kind"], ".xyz"), data) for name, data in listed]
            if j == 2 and fault == "no_text":
                listed = [(name, data) for name, data in listed if not name.endswith(".txt")]
                listed = [(name, json.dumps({"key": s["key"]}).encode() if name.endswith(".json") else data)
                          for name, data in listed]
            if j == 2 and fault == "undecodable":
                listed = [(name, bytes(rng.getrandbits(8) for _ in range(600)) if name.endswith(s["kind"]) else data)
                          for name, data in listed]
            flat += listed
        path = os.path.join(args.out, "bad", f"{n:03d}.tar")
        write_shard(path, flat)
        if fault == "truncated":
            raw = open(path, "rb").read()
            open(path, "wb").write(raw[:len(raw) // 2 + 100])
        faults[fault] = {"shard": n, "key": shard[2]["key"]}
    json.dump({"captions": [s["caption"] for s in samples], "per_shard": args.per_shard, "faults": faults},
              open(os.path.join(args.out, "expected.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
