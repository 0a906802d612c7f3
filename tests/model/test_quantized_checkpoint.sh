#!/bin/sh
# `uform quantize`'s output read back by an independent reader (tests/reference/check_quantized.py,
# written from docs/int8.md alone) and compared with a NumPy quantization of the original: the tiny
# checkpoint as generated (BF16 matrices) and a copy with the doc's edge cases (F32 and F16
# matrices, zero and tiny rows, exact ties, a huge value, an optimizer tensor to drop).
# usage: test_quantized_checkpoint.sh UFORM CHECKPOINT PYTHON SOURCE_DIR
set -eu
uform=$1 checkpoint=$2 python=$3 source=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check="$source/tests/reference/check_quantized.py"
"$uform" quantize "$checkpoint" --out "$work/q.safetensors"
"$python" "$check" "$checkpoint" "$work/q.safetensors"
"$python" "$check" --edge-cases "$checkpoint" "$work/edge.safetensors"
"$uform" quantize "$work/edge.safetensors" --out "$work/edge_q.safetensors"
"$python" "$check" "$work/edge.safetensors" "$work/edge_q.safetensors"
