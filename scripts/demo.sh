#!/usr/bin/env bash
# `make demo`: the whole pipeline on generated data, on this machine's CPU, with no downloads:
#   1. uform synth   pictures, clips and spoken captions with train / held-out / compositional manifests,
#                    and the training split as WebDataset shards
#   2. uform train   a small model from random weights, trained from the shards, evaluated on the
#                    held-out sets as it learns
#   3. the recall table of the last evaluation
#   4. uform index   of the held-out media, and uform search by text, by picture, by speech and by a clip's caption
#   5. build/demo/report.html: curves, recall, every search with its results inline
# Usage: scripts/demo.sh [BUILD_DIR]   (after the build; `make demo` does both)
# Environment: DEMO_THREADS (default 2), DEMO_SEED (default 0: the data's and the training's seed;
# DEMO_TRAIN_SEED sets the training's apart); for tests and benchmarks, DEMO_OUT
# (default BUILD_DIR/demo), other recipes with DEMO_LR, DEMO_WARMUP and DEMO_BATCH, and smaller runs with
# DEMO_PAIRS, DEMO_HELDOUT, DEMO_STEPS, DEMO_EVAL_EVERY, DEMO_SHARDS and
# DEMO_MODALITIES (default image,video,audio); DEMO_COMPUTE (f32 or bf16; default: uform train's, F32).
set -euo pipefail

build=${1:-build}
out=${DEMO_OUT:-$build/demo}
uform=$build/tools/uform
report=$build/tools/uform_demo_report
threads=${DEMO_THREADS:-2}
seed=${DEMO_SEED:-0}

# The recipe, chosen by measurement (README.md, "The demo"): data sizes, architecture, schedule.
modalities=${DEMO_MODALITIES:-image,video,audio}
shards=${DEMO_SHARDS:-8}
synth_flags=(--pairs "${DEMO_PAIRS:-3500,2500,1250}" --heldout "${DEMO_HELDOUT:-300}" --modalities "$modalities" --shards "$shards")
model_flags=(--audio-seconds 2)
train_flags=(--steps "${DEMO_STEPS:-1400}" --batch "${DEMO_BATCH:-128}" --lr "${DEMO_LR:-2e-3}" --warmup "${DEMO_WARMUP:-400}"
             --eval-every "${DEMO_EVAL_EVERY:-700}")
[ -n "${DEMO_COMPUTE:-}" ] && train_flags+=("--$DEMO_COMPUTE")

for program in "$uform" "$report"; do
  [ -x "$program" ] || { echo "demo: $program is missing: run 'make demo' (it builds first)" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out"
times=$out/times.tsv
: > "$times"
clock_ticks=$(getconf CLK_TCK)

# CPU seconds of every child this shell has waited for (fields 16 and 17 of /proc/PID/stat).
children_cpu() { awk -v ticks="$clock_ticks" '{ sub(/^.*\) /, ""); print ($14 + $15) / ticks }' "/proc/$$/stat"; }

# stage NAME COMMAND...: runs it, then appends NAME, wall and CPU seconds to times.tsv.
stage() {
  local name=$1 start cpu_start
  shift
  start=$(date +%s.%N) cpu_start=$(children_cpu)
  "$@"
  awk -v name="$name" -v start="$start" -v now="$(date +%s.%N)" -v cpu0="$cpu_start" -v cpu1="$(children_cpu)" \
    'BEGIN { printf "%s\t%.2f\t%.2f\n", name, now - start, cpu1 - cpu0 }' >> "$times"
}

say() { printf '\n== %s\n' "$*"; }

say "1/5 uform synth: generated pictures, clips and speech"
stage synth "$uform" synth "$out/data" --seed "$seed" "${synth_flags[@]}"

say "2/5 uform train: a model from random weights on $threads threads (eval lines: held-out, then compositional)"
last_shard=$(printf '%05d' $((shards - 1)))
train() {
  "$uform" train --shards "$out/data/shards/train-{00000..$last_shard}.tar" --out "$out/model.safetensors" \
    --seed "${DEMO_TRAIN_SEED:-$seed}" --threads "$threads" "${model_flags[@]}" "${train_flags[@]}" --log "$out/train.csv" \
    --eval "$out/data/heldout.jsonl" --eval "$out/data/novel.jsonl" --eval-log "$out/eval.jsonl" > "$out/eval.txt"
}
stage train train
grep "(heldout.jsonl)" "$out/eval.txt" | sed 's/  (heldout.jsonl)//'

say "3/5 held-out recall"
"$report" recall "$out"

say "4/5 uform index of the held-out media, and searches by text, picture, speech and a clip's caption"
stage index "$uform" index "$out/model.safetensors" "$out/data/heldout" --out "$out/heldout.index" --threads "$threads" --quiet
# Queries (each '|| true': under pipefail a grep that finds nothing in a reduced demo must not stop it):
# a held-out caption as text; a training picture and a training recording (not in the index).
text_query=$(grep -o '"text": "a large red star at the top"' "$out/data/heldout.jsonl" | head -1 | cut -d'"' -f4 || true)
[ -n "$text_query" ] || text_query=$(head -1 "$out/data/heldout.jsonl" | cut -d'"' -f4)
# first_media KIND WORDS: the file of the first training line of KIND whose caption holds WORDS,
# else of the first line of KIND at all.
first_media() {
  local lines
  lines=$(grep "\"$1\": " "$out/data/train.jsonl" || true)
  { grep "$2" <<< "$lines" || true; printf '%s\n' "$lines"; } | sed -n "s/.*\"$1\": \"\([^\"]*\)\".*/\1/p" | awk 'NR == 1'
}
image_query=$out/data/$(first_media image "blue square")
audio_query=$out/data/$(first_media audio "green triangle")
: > "$out/searches.tsv"
n=0
search() { # KIND QUERY
  "$uform" search "$out/heldout.index" "$out/model.safetensors" "--$1" "$2" --top 5 --json > "$out/search-$n.jsonl"
  printf '%s\t%s\t%s\n' "$1" "$2" "search-$n.jsonl" >> "$out/searches.tsv"
  "$report" search "$out" "$n"
  n=$((n + 1))
}
stage search search text "$text_query"
case ",$modalities," in *,image,*) stage search search image "$image_query" ;; esac
case ",$modalities," in *,audio,*) stage search search audio "$audio_query" ;; esac
# A fourth query, a held-out clip's caption ("... moving left"), so the report shows clips too.
video_text=$(grep '"video": ' "$out/data/heldout.jsonl" | awk 'NR == 1' | cut -d'"' -f4 || true)
[ -z "$video_text" ] || stage search search text "$video_text"

say "5/5 the report"
stage report "$report" html "$out"
awk -F'\t' '{ wall += $2; cpu += $3 } END { printf "demo: %.1f s wall, %.1f s CPU (%s)\n", wall, cpu, "times per stage in '"$times"'" }' "$times"
echo "open $out/report.html"
[ ! -f "$out/heldout.index" ] || echo "search it in a browser: $uform serve $out/model.safetensors --index $out/heldout.index --captions $out/data/heldout.jsonl  (then open http://127.0.0.1:8080/)"
