# Shared by the mesh's command-line tests (sourced; `python` must be set): a generated manifest of
# 12 picture pairs and 2 choice examples (train.jsonl, and broken.jsonl with a missing picture), and
# same_weights A B, the comparison of two checkpoints' master weights.

mesh_cli_manifest() {
  "$python" - "$1" <<'PY'
import json, os, random, sys
from PIL import Image, ImageDraw
folder = sys.argv[1]
os.makedirs(os.path.join(folder, "img"))
random.seed(2)
colours = {"red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 50, 220)}
lines = []
n = 0
for colour, rgb in colours.items():
    for shape in ("disc", "square"):
        for place, cx in (("left", 9), ("right", 23)):
            image = Image.new("RGB", (32, 32), (255, 255, 255))
            draw = ImageDraw.Draw(image)
            x, y, r = cx + random.randint(-2, 2), 16 + random.randint(-2, 2), 6
            (draw.ellipse if shape == "disc" else draw.rectangle)([x - r, y - r, x + r, y + r], fill=rgb)
            name = f"img/{n}.png"
            image.save(os.path.join(folder, name))
            n += 1
            lines.append(json.dumps({"text": f"a {colour} {shape} on the {place}", "image": name}))
lines.insert(3, json.dumps({"text": "is red a colour? ", "choices": "yn", "target": "y"}))
lines.insert(9, json.dumps({"text": "pick a vowel: ", "choices": "aeiou", "target": "e"}))
open(os.path.join(folder, "train.jsonl"), "w").write("\n".join(lines) + "\n")
broken = lines[:10] + [json.dumps({"text": "gone", "image": "img/missing.png"})] + lines[10:]
open(os.path.join(folder, "broken.jsonl"), "w").write("\n".join(broken) + "\n")
PY
}

# compare_checkpoints close|identical|near A B (tests/common/same_weights.py). close: the optimizer.weights.* tensors of two checkpoints
# are within ||a - b|| / ||b|| <= 1e-5 over all of them and <= 1e-4 per tensor (test_mesh_parity.c
# says why the two bounds differ); identical: every optimizer.* tensor (master weights, moments,
# step) is the same bits — a resumed run that must be exactly an uninterrupted one; near: within
# 1e-3 overall and 1e-2 per tensor, for runs of tens of steps whose sums ran in another order (the
# rounding grows through training's fast phase: 2 and 3 members of test_mesh_resume's 60 steps end
# 8e-5 apart, while another --seed, i.e. another data order, ends 0.8 apart).
compare_checkpoints() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  case $1 in
    identical) "$python" "$here/../common/same_weights.py" --identical "$2" "$3" ;;
    close) "$python" "$here/../common/same_weights.py" "$2" "$3" ;;
    near) "$python" "$here/../common/same_weights.py" "$2" "$3" 1e-2 1e-3 ;;
    *) echo "compare_checkpoints: unknown mode '$1'" >&2; return 2 ;;
  esac
}
same_weights() { compare_checkpoints close "$1" "$2"; }
identical_weights() { compare_checkpoints identical "$1" "$2"; }

# Unsets every launcher's variables: whatever launched the test suite is not what a test is about.
clear_launchers() {
  unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT TORCHELASTIC_RUN_ID \
    OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE \
    PMI_RANK PMI_SIZE MPI_LOCALRANKID MPI_LOCALNRANKS SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID
}

# A TCP port of 127.0.0.1 that was free a moment ago.
free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
