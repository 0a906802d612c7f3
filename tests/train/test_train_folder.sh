#!/usr/bin/env bash
# `uform train` on a folder dataset (docs/data.md, "Folders"; issue 37, item 5): 12 generated
# pictures (PNG and JPEG), each with a .txt caption, 4 of them in a subfolder, beside a note that is
# no sample and a hidden file. What the trainer saw is judged against the manifest reader, an
# independent path to the same pairs: the folder run must say "on 12 samples" and end with the
# optimizer state (weights, moments, step) of a run on a manifest listing the same pairs in the
# folder's walk order (byte order at each level), bit for bit, over 6 steps of batch 4, i.e. two
# epochs of reshuffled batches. Controls: a manifest with one pair left out, and one with two pairs
# swapped, each end elsewhere, so the comparison tells a missed item or another order. Then the bad
# folders and their documented errors: a picture without a caption ("no text"), a key with two
# media ("two media"), an undecodable picture (named, nothing saved; --skip-bad exits 3).
# Usage: test_train_folder.sh UFORM_BINARY PYTHON
set -u
uform=$1 python=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/checks.sh"
. "$here/../mesh/cli_common.sh"
clear_launchers

"$python" - "$work" <<'PY' || { echo "cannot generate the folder" >&2; exit 1; }
import json, os, random, shutil, sys
from PIL import Image, ImageDraw
work = sys.argv[1]
folder = os.path.join(work, "set")
os.makedirs(os.path.join(folder, "sub"))
random.seed(3)
colours = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 50, 220)}
pairs = {}
n = 0
for colour, rgb in colours.items():
    for shape in ("disc", "square"):
        for place, cx in (("left", 9), ("right", 23)):
            image = Image.new("RGB", (32, 32), (255, 255, 255))
            draw = ImageDraw.Draw(image)
            x, y, r = cx + random.randint(-2, 2), 16 + random.randint(-2, 2), 6
            (draw.ellipse if shape == "disc" else draw.rectangle)([x - r, y - r, x + r, y + r], fill=rgb)
            key = ("sub/" if n % 3 == 0 else "") + f"{n:02d}"
            picture = f"{key}.{'png' if n % 2 else 'jpg'}"
            image.save(os.path.join(folder, picture))
            caption = f"a {colour} {shape} on the {place}"
            open(os.path.join(folder, key + ".txt"), "w").write(caption + "\n")  # one line break, dropped
            pairs[key] = (picture, caption)
            n += 1
open(os.path.join(folder, "notes.md"), "w").write("a note: no medium, so no sample\n")
open(os.path.join(folder, ".hidden.txt"), "w").write("hidden: left out\n")
# The walk order docs/data.md states: names in byte order at each level ("sub" after the files).
order = sorted(k for k in pairs if "/" not in k) + sorted(k for k in pairs if "/" in k)
def manifest(name, keys):
    with open(os.path.join(work, name), "w") as out:
        for key in keys:
            picture, caption = pairs[key]
            out.write(json.dumps({"text": caption, "image": "set/" + picture}) + "\n")
manifest("same.jsonl", order)
manifest("one_less.jsonl", order[:-1])
manifest("swapped.jsonl", order[:4] + [order[5], order[4]] + order[6:])
assert len(order) == 12
# The bad folders.
for name in ("no_text", "two_media", "undecodable"):
    shutil.copytree(folder, os.path.join(work, name))
shutil.copy(os.path.join(folder, "01.png"), os.path.join(work, "no_text", "sub", "12.png"))
shutil.copy(os.path.join(folder, "02.jpg"), os.path.join(work, "two_media", "05.jpg"))
open(os.path.join(work, "undecodable", "sub", "03.png"), "wb").write(bytes(random.getrandbits(8) for _ in range(300)))
PY

common=(--steps 6 --batch 4 --seed 8 --warmup 2 --threads 1 --f32)
check status_is 0 "$uform" train "$work/set" --out "$work/folder.safetensors" "${common[@]}" 2> "$work/folder.err"
check contains "$work/folder.err" "on 12 samples, batch 4"
for name in same one_less swapped; do
  check status_is 0 "$uform" train "$work/$name.jsonl" --out "$work/$name.safetensors" "${common[@]}" --quiet
done
check identical_weights "$work/folder.safetensors" "$work/same.safetensors"
check status_is 1 identical_weights "$work/one_less.safetensors" "$work/same.safetensors"
check status_is 1 identical_weights "$work/swapped.safetensors" "$work/same.safetensors"

# Bad folders: the documented errors, naming the sample; nothing saved.
check status_is 1 "$uform" train "$work/no_text" --out "$work/bad.safetensors" "${common[@]}" 2> "$work/err.txt"
check contains "$work/err.txt" "'$work/no_text/sub/12': no text: no .txt or .json file with the key of '$work/no_text/sub/12.png'"
check status_is 1 "$uform" train "$work/two_media" --out "$work/bad.safetensors" "${common[@]}" 2> "$work/err.txt"
check contains "$work/err.txt" "'$work/two_media/05': two media"
check status_is 1 "$uform" train "$work/undecodable" --out "$work/bad.safetensors" "${common[@]}" --batch 100 2> "$work/err.txt"
check contains "$work/err.txt" "'$work/undecodable/sub/03': not an image"
check test ! -e "$work/bad.safetensors"
check status_is 3 "$uform" train "$work/undecodable" --out "$work/bad.safetensors" "${common[@]}" --batch 100 --skip-bad --quiet
finish
