#!/usr/bin/env bash
# bench_data [--size small|tiny] [--batch B] [--steps N] [--rounds R] [--json FILE]: training from
# WebDataset shards against training from the same samples as loose files (a manifest), side by side
# in the same run: the demo's data (`uform synth --shards 8`: pictures, clips and speech), `small`
# (default; `--size tiny --batch 128` is the demo's own run), batch 32, 2 threads, the default
# compute; rounds alternate loose / shards, and the best steps/s of each is kept. Reports steps/s, the ratio (the issue asks shards >= 0.95x loose) and the loader's stats
# from `uform train --json`: the seconds the steps waited for data as a share of the steps' time
# (asked: <= 2%), and the loader thread's reading and decoding seconds. A benchmark: exits 0 whatever
# it measured (non-zero only when a command failed).
set -u
source_dir=@PROJECT_SOURCE_DIR@
build_dir=@PROJECT_BINARY_DIR@
size=small batch=32 steps=30 rounds=3 json=$source_dir/bench/results/data.json
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "usage: bench_data [--size small|tiny] [--batch B] [--steps N] [--rounds R] [--json FILE]" >&2; exit 2 ;;
  esac
done
uform=$build_dir/tools/uform
work=$build_dir/bench/data
mkdir -p "$work" "$(dirname "$json")"
if [ ! -s "$work/data/shards/train-00007.tar" ]; then
  "$uform" synth "$work/data" --seed 0 --pairs 3500,2500,1250 --heldout 30 --shards 8 --quiet || exit 1
fi

load_before=$(cut -d' ' -f1 /proc/loadavg)
: > "$work/runs.jsonl"
for round in $(seq 1 "$rounds"); do
  for source in loose shards; do
    if [ $source = loose ]; then input=("$work/data/train.jsonl"); else input=(--shards "$work/data/shards/train-{00000..00007}.tar"); fi
    summary=$("$uform" train "${input[@]}" --out "$work/model-$source.safetensors" --seed 0 --threads 2 --size "$size" \
                --steps "$steps" --batch "$batch" --lr 1e-3 --warmup 10 --quiet --json) || { echo "bench_data: uform train ($source) failed" >&2; exit 1; }
    printf '{"round": %d, "source": "%s", "summary": %s}\n' "$round" "$source" "$summary" >> "$work/runs.jsonl"
  done
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

/usr/bin/python3 - "$work/runs.jsonl" "$json" "$steps" "$load_before" "$load_after" "$size" "$batch" <<'EOF'
import json, os, sys
runs_path, json_path, steps, load_before, load_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
size, batch = sys.argv[6], int(sys.argv[7])
runs = [json.loads(line) for line in open(runs_path)]
best = {}
for run in runs:
    summary = run["summary"]
    if run["source"] not in best or summary["steps_per_second"] > best[run["source"]]["steps_per_second"]:
        best[run["source"]] = summary
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"training {size} from the demo's data, batch {batch}, 2 threads, {steps} steps; best of {len(runs) // 2} alternating rounds")
print(f"  {cpu}, {os.cpu_count()} cores, load average {load_before} before, {load_after} after")
for source, name in (("loose", "loose files (train.jsonl)"), ("shards", "8 WebDataset shards")):
    s, d = best[source], best[source]["data"]
    print(f"  {name:28} {s['steps_per_second']:6.2f} steps/s; waited for data {d['wait_seconds']:.2f} s = "
          f"{100 * d['wait_fraction']:.2f}% of the steps' {s['stepping_seconds']:.1f} s; loader read {d['read_seconds']:.1f} s, "
          f"decoded {d['decode_seconds']:.1f} s, {d['bytes_read'] / 1e6:.0f} MB")
ratio = best["shards"]["steps_per_second"] / best["loose"]["steps_per_second"]
print(f"  shards / loose: {ratio:.3f}x (asked: >= 0.95x); data wait from shards {100 * best['shards']['data']['wait_fraction']:.2f}% (asked: <= 2%)")
with open(json_path, "w") as out:
    json.dump({"benchmark": "data", "cpu": cpu, "size": size, "batch": batch, "steps": steps, "load_before": load_before, "load_after": load_after,
               "best": best, "shards_vs_loose": ratio, "runs": runs}, out)
    out.write("\n")
print(f"  JSON: {json_path}")
EOF
