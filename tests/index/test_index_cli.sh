#!/usr/bin/env bash
# `uform index` and `uform search` end to end on generated corpora (no media in git):
#   1. a folder with nested and hidden folders, every format the build decodes (the media
#      fixtures), a text file, a PNG renamed .wav, and bad files (empty, truncated, random bytes):
#      every good item indexed once with the right modality, every bad one listed with its message,
#      exit status 3; embeddings equal `uform encode`'s bit for bit (F32, and I8/B1 at 32 dims);
#   2. a manifest with paths, inline texts, a missing file and a malformed line; an index written
#      inside the folder it walks does not index itself;
#   3. search: an image finds itself, a caption finds its text, another checkpoint is refused;
#      through an approximate structure (--ann --from) the same JSON and hits as exact search;
#   4. peak RSS of 200 and 2,000 photos differs by less than 8 MiB;
#   5. kill -9 at 5 random points, each followed by --resume: the final index and errors file are
#      byte-identical to an uninterrupted run's; Ctrl-C exits 130 and --resume completes it.
# The seed (the random bytes of the corpus, the kill delays) is fixed: 20261201 unless the 5th
# argument or UFORM_TEST_SEED says otherwise.
# Usage: test_index_cli.sh UFORM MEDIA_FIXTURES CHECKPOINT PYTHON [SEED]
set -u
uform=$1 fixtures=$2 checkpoint=$3 python=$4 seed=${5:-${UFORM_TEST_SEED:-20261201}}
here=$(cd "$(dirname "$0")" && pwd)
check_py="$python $here/index_check.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "failed: $*" >&2; failed=$((failed + 1)); fi; }
status_is() { [ "$1" -eq "$2" ] || { echo "exit status $1, expected $2" >&2; return 1; }; }
echo "seed $seed (another: the 5th argument or UFORM_TEST_SEED)"
RANDOM=$seed

# ---- 1. the mixed corpus ----
"$fixtures" fixtures > /dev/null || { echo "media_fixtures failed"; exit 1; }
mkdir -p corpus/images/nested/deeper corpus/sounds corpus/clips corpus/.hidden
for f in fixtures/*; do
    case "$f" in
    *.jpg|*.png|*.webp) cp "$f" corpus/images/ ;;
    *.bmp|*.gif) cp "$f" corpus/images/nested/deeper/ ;;
    *.wav|*.flac|*.ogg|*.opus|*.mp3|*.m4a) cp "$f" corpus/sounds/ ;;
    *.mp4|*.webm|*.mkv) cp "$f" corpus/clips/ ;;
    esac
done
mv corpus/images/exif*.jpg corpus/images/nested/
# The corpus must hold what the checks below compare; clips exist only in builds with FFmpeg.
modalities="image audio"
check test "$(find corpus/images -type f | wc -l)" -ge 5
check test "$(find corpus/sounds -type f | wc -l)" -ge 3
if [ -n "$(ls corpus/clips)" ]; then modalities="$modalities video"; else echo "not exercised: video (media_fixtures made no clips: a build without FFmpeg)"; fi
printf 'a photo of a cat' > corpus/caption.txt
cp fixtures/rgba.png corpus/images/nested/renamed.wav
cp fixtures/baseline.jpg corpus/.hidden/skipped.jpg
cp fixtures/baseline.jpg corpus/.also_skipped.jpg
: > corpus/images/empty.jpg
head -c 300 fixtures/baseline.jpg > corpus/images/nested/truncated.jpg
"$python" -c "import random; random.seed($seed); open('corpus/sounds/random.bin','wb').write(bytes(random.getrandbits(8) for _ in range(4000)) + b'\x00')"

"$uform" index "$checkpoint" corpus --out corpus.index --checkpoint 7 --quiet; code=$?
check status_is $code 3
check $check_py corpus corpus.index corpus
for modality in $modalities; do
    $check_py paths corpus.index $modality > $modality.paths
    mapfile -t files < $modality.paths
    check "$uform" encode "$checkpoint" --$modality "${files[@]}" --out $modality.npy 2> /dev/null
    check $check_py equal corpus.index $modality $modality.npy
done
check "$uform" encode "$checkpoint" --text "a photo of a cat" --out text.npy 2> /dev/null
check $check_py equal corpus.index text text.npy
for scalar in i8 b1; do
    "$uform" index "$checkpoint" corpus/images --out images_$scalar.index --scalar $scalar --dims 32 --quiet; code=$?
    check status_is $code 3
    $check_py paths images_$scalar.index image > images_$scalar.paths
    mapfile -t files < images_$scalar.paths
    check "$uform" encode "$checkpoint" --image "${files[@]}" --scalar $scalar --dims 32 --out images_$scalar.npy 2> /dev/null
    check $check_py equal images_$scalar.index image images_$scalar.npy $scalar
done

# ---- 2. a manifest ----
mkdir -p man
cat > man/manifest.jsonl <<'EOF'
{"path": "../corpus/images/baseline.jpg"}
{"text": "hello world", "id": "greeting"}
{"path": "missing.jpg"}
this line is not JSON
{"path": "../corpus/sounds/pcm16.wav", "modality": "audio"}
{"text": "no id"}
EOF
"$uform" index "$checkpoint" --manifest man/manifest.jsonl --out manifest.index --quiet; code=$?
check status_is $code 3
check $check_py manifest manifest.index

# An index written inside the folder it walks never indexes itself or its errors file.
mkdir -p self && cp fixtures/baseline.jpg fixtures/pcm16.wav self/
"$uform" index "$checkpoint" self --out self/self.index --quiet && "$uform" index "$checkpoint" self --out self/self.index --quiet; code=$?
check status_is $code 0
check "$python" -c "
import json
raw = open('self/self.index', 'rb').read(); n = int.from_bytes(raw[:8], 'little')
assert json.loads(raw[8:8 + n])['__metadata__']['uform.index.count'] == '2'
"

# ---- 3. search (an image finding itself is checked on the photos below) ----
"$uform" search corpus.index "$checkpoint" --text "a photo of a cat" --top 1 > top.txt
check grep -q "corpus/caption.txt" top.txt
"$(dirname "$uform")/uform_tiny_checkpoint" other.safetensors --seed 12345 > /dev/null
"$uform" search corpus.index other.safetensors --text x 2> mismatch.txt; code=$?
check status_is $code 1
check grep -q "config_mismatch \[uform_index_open\]" mismatch.txt
"$uform" search corpus.index "$checkpoint" 2> /dev/null; code=$?
check status_is $code 2
"$uform" index "$checkpoint" corpus --out x.index --frobnicate 2> /dev/null; code=$?
check status_is $code 2

# ---- 4. memory stays bounded ----
"$fixtures" --photos 2000 photos 64 64 || exit 1
mkdir -p photos200
cp photos/photo_0000*.jpg photos/photo_0001*.jpg photos200/
rss() { "$python" -c "import json,sys; print(json.load(sys.stdin)['peak_rss_kib'])"; }
# Under AddressSanitizer freed memory waits in a quarantine, which grows RSS with every free: off here.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
small=$("$uform" index "$checkpoint" photos200 --out p200.index --json --quiet --checkpoint 100 | rss)
large=$("$uform" index "$checkpoint" photos --out p2000.index --json --quiet --checkpoint 100 | rss)
echo "peak RSS: 200 photos $small KiB, 2,000 photos $large KiB"
# Both runs must have reported a peak (an empty answer is a failure, not a difference of 0).
bounded() { [[ "$1" =~ ^[1-9][0-9]*$ && "$2" =~ ^[1-9][0-9]*$ ]] && [ $(($2 - $1)) -lt 8192 ]; }
check bounded "$small" "$large"

# An image finds itself first (the photos are all different), best first.
"$uform" search p2000.index "$checkpoint" --image photos/photo_001234.jpg --top 5 --json > hits.jsonl
check "$python" -c "
import json
hits = [json.loads(line) for line in open('hits.jsonl')]
assert len(hits) == 5 and [h['rank'] for h in hits] == [1, 2, 3, 4, 5], hits
assert hits[0]['path'] == 'photos/photo_001234.jpg' and hits[0]['score'] > 0.9999, hits
assert all(a['score'] >= b['score'] for a, b in zip(hits, hits[1:])), hits
"

# ---- 4b. approximate search: the same JSON through p2000.faiss, --exact still scans ----
check "$uform" index --ann --from p2000.index --ann-threads 1 --quiet
check test -s p2000.faiss
"$uform" search p2000.index "$checkpoint" --image photos/photo_001234.jpg --top 5 --json --rerank 20 > ann.jsonl
"$uform" search p2000.index "$checkpoint" --image photos/photo_001234.jpg --top 5 --json --exact > exact.jsonl
check cmp hits.jsonl exact.jsonl
check "$python" -c "
import json
ann = [json.loads(line) for line in open('ann.jsonl')]
exact = [json.loads(line) for line in open('hits.jsonl')]
assert [h['item'] for h in ann] == [h['item'] for h in exact], (ann, exact)   # HNSW32 with rerank finds these 5
assert [h['score'] for h in ann] == [h['score'] for h in exact], (ann, exact) # rescored as exact search scores
"
# A knob the structure cannot take (p2000.faiss is HNSW32: no inverted lists) is a usage error, as
# `uform serve` answers it with a 400 (tools/ann_choice.c).
"$uform" search p2000.index "$checkpoint" --image photos/photo_001234.jpg --nprobe 4 2> knobs.txt; code=$?
check status_is $code 2
check grep -q "nprobe chooses among an IVF's inverted lists.*HNSW32" knobs.txt
"$uform" search corpus.index "$checkpoint" --text x --nprobe 4 2> knobs.txt; code=$?
check status_is $code 2
check grep -q "corpus.faiss" knobs.txt

# ---- 5. kill -9 and --resume, Ctrl-C ----
cp fixtures/baseline.jpg photos/photo_000777_bad.jpg && head -c 200 fixtures/baseline.jpg > photos/photo_000777_bad.jpg
printf 'not media \x01' > photos/photo_001500_bad.jpg
started=$(date +%s.%N)
"$uform" index "$checkpoint" photos --out reference.index --checkpoint 100 --quiet; code=$?
check status_is $code 3
took=$(awk -v a=$started -v b=$(date +%s.%N) 'BEGIN { print b - a }')
echo "an uninterrupted run takes $took s; kills land 5-30% of that after each start"
resume="" landed=0
for kill in 1 2 3 4 5; do
    delay=$(awk -v r=$RANDOM -v t=$took 'BEGIN { printf "%.3f", t * (0.05 + 0.25 * (r % 1000) / 1000) }')
    "$uform" index "$checkpoint" photos --out killed.index --checkpoint 100 --quiet $resume 2> /dev/null &
    pid=$!
    sleep "$delay"
    kill -9 $pid 2> /dev/null
    wait $pid 2> /dev/null
    [ $? -eq 137 ] && landed=$((landed + 1))
    echo "kill $kill after $delay s: $( [ -f killed.index ] && $python -c "
import json; raw = open('killed.index','rb').read(); n = int.from_bytes(raw[:8],'little')
print(json.loads(raw[8:8+n])['__metadata__']['uform.index.count'], 'items checkpointed')" || echo 'no checkpoint yet')"
    resume=--resume
done
echo "$landed of 5 kills landed while a run was going"
check test $landed -ge 1     # else nothing was resumed from a killed run
"$uform" index "$checkpoint" photos --out killed.index --checkpoint 100 --quiet --resume; code=$?
check status_is $code 3
check cmp reference.index killed.index
check cmp reference.index.errors.jsonl killed.index.errors.jsonl

# Ctrl-C once the first checkpoint is on disk: mid-run by construction rather than by a guess of the
# time. Should a run still finish first, it is tried again (3 times at most), never passed unchecked.
interrupted=0
for attempt in 1 2 3; do
    rm -f interrupted.index interrupted.index.errors.jsonl
    "$uform" index "$checkpoint" photos --out interrupted.index --checkpoint 100 > /dev/null 2> interrupt.txt &
    pid=$!
    for wait_step in $(seq 1 3000); do                   # at most 30 s
        [ -f interrupted.index ] && break
        kill -0 $pid 2> /dev/null || break
        sleep 0.01
    done
    kill -INT $pid 2> /dev/null
    wait $pid; code=$?
    [ $code -ne 3 ] && { interrupted=1; break; }
    echo "attempt $attempt: the run finished before Ctrl-C arrived"
done
check test $interrupted -eq 1
check status_is $code 130
check grep -q -- "--resume" interrupt.txt
"$uform" index "$checkpoint" photos --out interrupted.index --checkpoint 100 --quiet --resume; code=$?
check status_is $code 3
check cmp reference.index interrupted.index

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
