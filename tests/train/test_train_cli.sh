#!/usr/bin/env bash
# `uform train` end to end on a generated manifest (PNG and JPEG pictures of coloured shapes drawn
# with PIL, choice examples): 6 steps equal 3 + --resume + 3 bit for bit (weights, moments and data
# order), the CSV log, held-out evaluation, and the failures: a bad manifest line names the line and
# the field, a missing or undecodable media file stops the run naming the file (exit 1) or is
# skipped with --skip-bad (exit 3), usage errors exit 2.
# Usage: test_train_cli.sh UFORM_BINARY PYTHON
set -u
uform=$1 python=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/checks.sh"

"$python" - "$work" <<'PY' || { echo "cannot generate the manifest" >&2; exit 1; }
import json, os, random, sys
from PIL import Image, ImageDraw
folder = sys.argv[1]
os.makedirs(os.path.join(folder, "img"))
random.seed(1)
colours = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 50, 220)}
lines, held = [], []
n = 0
for rep in range(3):
    for colour, rgb in colours.items():
        for shape in ("disc", "square"):
            for place, cx in (("left", 9), ("right", 23)):
                image = Image.new("RGB", (32, 32), (255, 255, 255))
                draw = ImageDraw.Draw(image)
                x, y, r = cx + random.randint(-2, 2), 16 + random.randint(-2, 2), 6
                (draw.ellipse if shape == "disc" else draw.rectangle)([x - r, y - r, x + r, y + r], fill=rgb)
                name = f"img/{n}.{'png' if n % 2 else 'jpg'}"
                image.save(os.path.join(folder, name))
                n += 1
                line = {"text": f"a {colour} {shape} on the {place}", "image": name}
                (held if rep == 2 else lines).append(json.dumps(line))
lines.append(json.dumps({"text": "is red a colour? ", "choices": "yn", "target": "y"}))
lines.append(json.dumps({"text": "pick a vowel: ", "choices": "aeiou", "target": "e"}))
open(os.path.join(folder, "train.jsonl"), "w").write("\n".join(lines) + "\n")
open(os.path.join(folder, "heldout.jsonl"), "w").write("\n".join(held) + "\n")
open(os.path.join(folder, "img", "bad.png"), "wb").write(bytes(random.getrandbits(8) for _ in range(300)))  # seeded above
bad = lines[:5] + [json.dumps({"text": "broken", "image": "img/bad.png"})] + lines[5:]
open(os.path.join(folder, "bad_media.jsonl"), "w").write("\n".join(bad) + "\n")
missing = lines[:5] + [json.dumps({"text": "gone", "image": "img/missing.png"})]
open(os.path.join(folder, "missing.jsonl"), "w").write("\n".join(missing) + "\n")
open(os.path.join(folder, "bad_line.jsonl"), "w").write(lines[0] + "\n" + json.dumps({"text": "x", "image": 5}) + "\n")
open(os.path.join(folder, "bad_target.jsonl"), "w").write(json.dumps({"text": "x", "choices": "ab", "target": "c"}) + "\n")
PY

common=(--batch 8 --seed 3 --threads 2 --warmup 2 --quiet)
# 6 steps in one run, and 3 + 3 with a resume in between: the same file, byte for byte.
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/six.safetensors" --steps 6 --log "$work/log.csv" "${common[@]}"
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/split.safetensors" --steps 3 --total-steps 6 "${common[@]}"
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/split.safetensors" --resume "$work/split.safetensors" --steps 3 --batch 8 --threads 2 --quiet
check cmp "$work/six.safetensors" "$work/split.safetensors"
check test "$(head -n 1 "$work/log.csv")" = "step,seconds,loss,contrastive,choice,learning_rate,grad_norm"
check test "$(wc -l < "$work/log.csv")" -eq 7
check "$uform" describe "$work/six.safetensors" > "$work/describe.txt"
check contains "$work/describe.txt" "hidden 128, depth 2"

# --minutes alone: the loop stops on time and the cosine runs on elapsed time (the rate falls). The
# stop is judged from the log, not by a clock here (a busy machine makes any wall-clock bound a
# guess): the loop checks the time before each step, so every step but the last ends before the
# 3 s and the last at them (less the moment between its log line and the check).
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/timed.safetensors" --minutes 0.05 --log "$work/timed.csv" "${common[@]}"
check "$python" - "$work/timed.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) >= 3, len(rows)
rates = [float(r["learning_rate"]) for r in rows]
assert rates[-1] < max(rates), rates          # past the warmup the cosine decays with time
seconds = [float(r["seconds"]) for r in rows]
assert all(s < 3.0 for s in seconds[:-1]), seconds   # no step started after the deadline
assert seconds[-1] >= 2.95, seconds                # and the loop did not stop before it
PY

# Ctrl-C: the running step is cancelled, --out holds the steps completed, exit 130. The signal goes
# once the log shows a completed step (not after a guessed time, which on a busy machine could land
# before the trainer exists; the log is buffered, so that is some tens of steps in); the run has
# 100,000 steps to go, so it is still running.
"$uform" train "$work/train.jsonl" --out "$work/interrupted.safetensors" --steps 100000 --log "$work/int.csv" \
  "${common[@]}" 2> "$work/int.txt" &
pid=$!
for wait_step in $(seq 1 12000); do                    # at most 120 s
    [ "$(wc -l < "$work/int.csv" 2> /dev/null || echo 0)" -ge 2 ] && break
    kill -0 $pid 2> /dev/null || break
    sleep 0.01
done
check test "$(wc -l < "$work/int.csv")" -ge 2
kill -INT $pid
wait $pid
check test $? -eq 130
check contains "$work/int.txt" "continue with --resume"
check "$uform" describe "$work/interrupted.safetensors" > /dev/null

# Held-out recall is printed per modality pair.
check status_is 0 "$uform" train "$work/train.jsonl" --out "$work/eval.safetensors" --steps 2 --eval "$work/heldout.jsonl" "${common[@]}" > "$work/eval.txt"
check contains "$work/eval.txt" "image   12 pairs  text->image R@1"

# Bad manifests and media.
check status_is 1 "$uform" train "$work/bad_line.jsonl" --out "$work/x.safetensors" --steps 1 2> "$work/err.txt"
check contains "$work/err.txt" "bad_line.jsonl:2: 'image' must be a non-empty string"
check status_is 1 "$uform" train "$work/bad_target.jsonl" --out "$work/x.safetensors" --steps 1 2> "$work/err.txt"
check contains "$work/err.txt" "bad_target.jsonl:1: 'target' 'c' is not among 'choices'"
check status_is 1 "$uform" train "$work/bad_media.jsonl" --out "$work/x.safetensors" --steps 2 --batch 100 --quiet 2> "$work/err.txt"
check contains "$work/err.txt" "img/bad.png, line 6 of"
check test ! -e "$work/x.safetensors"
check status_is 3 "$uform" train "$work/bad_media.jsonl" --out "$work/x.safetensors" --steps 2 --batch 100 --skip-bad 2> "$work/err.txt"
check contains "$work/err.txt" "skipped line 6"
check contains "$work/err.txt" "1 skipped"
check status_is 1 "$uform" train "$work/missing.jsonl" --out "$work/y.safetensors" --steps 1 --batch 100 --quiet 2> "$work/err.txt"
check contains "$work/err.txt" "missing.png"
check status_is 3 "$uform" train "$work/missing.jsonl" --out "$work/y.safetensors" --steps 1 --batch 100 --skip-bad --quiet

# Usage.
check status_is 2 "$uform" train "$work/train.jsonl" 2> "$work/err.txt"
check contains "$work/err.txt" "--out is missing"
check status_is 2 "$uform" train "$work/train.jsonl" --out x --frobnicate 2> "$work/err.txt"
check contains "$work/err.txt" "unknown flag --frobnicate"
check status_is 0 "$uform" train --help > "$work/help.txt"
check contains "$work/help.txt" "--skip-bad"

finish
