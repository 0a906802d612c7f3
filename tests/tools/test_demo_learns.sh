#!/usr/bin/env bash
# The demo learns, in small: scripts/demo.sh on pictures only (1,000 training pairs, 100 held-out
# renders of 100 different captions), 300 steps, then the held-out text->image recall must be far
# above chance (chance R@1 is about 1/100: each caption appears once among the held-out pictures).
# The run is too short for the demo's schedule (its 800 warmup steps), so it pins its own: learning
# rate 1e-3 after 250 warmup steps. A faster start pulls every embedding together within tens of
# steps (loss ln 128, gradient norms ~1e-3), and when training leaves that plateau then depends on
# the seed and on the exact numerics: with 50 warmup steps, seeds 0-3 gave R@1 0.27 / 0.01 / 0.63 /
# 0.02 after 300 steps, and one changed rounding in the attention backward moved seed 0 to 0.08.
# With 250 warmup steps the same seeds gave 0.73 / 0.60 / 0.72 / 0.29, and 0.60 / 0.58 / 0.68 /
# 0.24 with that other rounding.
# Leaves the run in OUT_DIR for test_demo_report and test_demo_render.
# Usage: test_demo_learns.sh SOURCE_DIR BUILD_DIR OUT_DIR
set -u
source_dir=$1 build_dir=$2 out_dir=$3

start=$(date +%s)
if ! DEMO_OUT="$out_dir" DEMO_MODALITIES=image DEMO_PAIRS=1000 DEMO_HELDOUT=100 DEMO_STEPS=300 DEMO_EVAL_EVERY=100 DEMO_LR=1e-3 DEMO_WARMUP=250 \
     "$source_dir/scripts/demo.sh" "$build_dir"; then
  echo "FAILED: scripts/demo.sh exited non-zero" >&2
  exit 1
fi
echo "reduced demo: $(( $(date +%s) - start )) s"

# The last held-out evaluation: "eval step 300  image   100 pairs  text->image R@1 0.xxx R@5 0.yyy | ..."
line=$(grep "(heldout.jsonl)" "$out_dir/eval.txt" | grep " image " | tail -1)
r1=$(echo "$line" | sed -n 's/.*text->image R@1 \([0-9.]*\) R@5 \([0-9.]*\).*/\1/p')
r5=$(echo "$line" | sed -n 's/.*text->image R@1 \([0-9.]*\) R@5 \([0-9.]*\).*/\2/p')
if [ -z "$r1" ] || [ -z "$r5" ]; then
  echo "FAILED: no held-out image evaluation in $out_dir/eval.txt" >&2
  exit 1
fi
# R@1 at least 10x chance, R@5 at least 6x chance (5 of 100).
if awk -v r1="$r1" -v r5="$r5" 'BEGIN { exit !(r1 >= 0.10 && r5 >= 0.30) }'; then
  echo "held-out text->image R@1 $r1 (needs >= 0.10; chance 0.01), R@5 $r5 (needs >= 0.30; chance 0.05)"
  exit 0
fi
echo "FAILED: held-out text->image R@1 $r1 (needs >= 0.10; chance 0.01), R@5 $r5 (needs >= 0.30; chance 0.05)" >&2
exit 1
