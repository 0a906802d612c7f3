"""I8 compute's embeddings against F32 compute's, and held-out recall against BF16 compute's.

    /usr/bin/python3 tests/model/int8_quality.py CHECKPOINT HELDOUT.jsonl [--threads N]
        [--min-mean 0.995] [--min-worst 0.98] [--recall-points 1] [--no-recall] [--limit N] [--json FILE]

HELDOUT.jsonl is a manifest `uform synth` writes (one pair a line: "text" and one of "image",
"video", "audio", paths relative to the manifest's folder). Every caption and every medium is
encoded with F32, BF16 and I8 compute (uform.Model.load_ram(..., compute=...), the Python binding
over libuform). Judged, per modality (text: the captions; image, video, audio: the media):

- the cosine between each item's I8 and F32 embeddings: mean >= --min-mean, worst >= --min-worst;
- unless --no-recall: text->media R@1 scored by caption (a hit is a medium whose caption is the
  query's, as the demo scores it), I8's within --recall-points points of BF16's.

Prints a table and "N passed, N failed"; exits 1 on any failure. Needs PYTHONPATH to reach
python/uform and UFORM_LIBRARY (or an installed uform).
"""

import argparse
import json
import os
import sys

import numpy as np

import uform

MODALITIES = ("image", "video", "audio")


def read_manifest(path, limit):
    """(modality, caption, file bytes) per pair, at most `limit` per modality (0: all)."""
    folder = os.path.dirname(os.path.abspath(path))
    pairs, counts = [], {}
    with open(path) as handle:
        for line in handle:
            if not line.strip():
                continue
            entry = json.loads(line)
            for modality in MODALITIES:
                if modality in entry and (not limit or counts.get(modality, 0) < limit):
                    counts[modality] = counts.get(modality, 0) + 1
                    with open(os.path.join(folder, entry[modality]), "rb") as media:
                        pairs.append((modality, entry["text"], media.read()))
    return pairs


def encode(executor, checkpoint, compute, pairs, modalities):
    model = uform.Model.load_ram(executor, checkpoint, compute=compute)
    try:
        runner = model.on(executor)
        texts = [text for _, text, _ in pairs]
        result = {"text": np.concatenate([runner.text_encode(texts[i:i + 64]).embeddings for i in range(0, len(texts), 64)])}
        for modality in modalities:
            media = [data for m, _, data in pairs if m == modality]
            verb = {"image": runner.image_encode, "video": runner.video_encode, "audio": runner.audio_encode}[modality]
            result[modality] = np.concatenate([verb(media[i:i + 32]).embeddings for i in range(0, len(media), 32)])
        return result
    finally:
        model.close()


def recall_at_1(text_embeddings, media_embeddings, captions):
    scores = text_embeddings @ media_embeddings.T
    best = scores.argmax(axis=1)
    return float(np.mean([captions[best[i]] == captions[i] for i in range(len(captions))]))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("heldout")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-mean", type=float, default=0.995)
    parser.add_argument("--min-worst", type=float, default=0.98)
    parser.add_argument("--recall-points", type=float, default=1.0)
    parser.add_argument("--no-recall", action="store_true")
    parser.add_argument("--limit", type=int, default=0, help="pairs per modality (0: all)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    pairs = read_manifest(args.heldout, args.limit)
    with uform.Model.load_ram(None, args.checkpoint) as probe:
        present = set(probe.describe().modalities)
    modalities = [m for m in MODALITIES if m in present and any(p[0] == m for p in pairs)]
    pairs = [p for p in pairs if p[0] in modalities]
    passed = failed = 0
    report = {"checkpoint": args.checkpoint, "items": len(pairs), "modalities": {}}

    def judge(ok, label, detail):
        nonlocal passed, failed
        print(f"{'PASS' if ok else 'FAIL'} {label}: {detail}", flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    with uform.Executor.for_ram(args.threads) as executor:
        embeddings = {compute: encode(executor, args.checkpoint, compute, pairs, modalities) for compute in ("f32", "bf16", "i8")}
    print(f"{args.checkpoint}: {len(pairs)} held-out pairs ({', '.join(modalities)})")
    print(f"{'':8} {'items':>6} {'cos I8-F32 mean':>16} {'worst':>8} {'cos BF16-F32 mean':>18} {'worst':>8}"
          f" {'R@1 F32':>8} {'BF16':>6} {'I8':>6}")
    for kind in ("text",) + tuple(modalities):
        f32, bf16, i8 = (embeddings[c][kind] for c in ("f32", "bf16", "i8"))
        cos_i8, cos_bf16 = (i8 * f32).sum(axis=1), (bf16 * f32).sum(axis=1)
        row = {"items": len(f32), "i8_cosine_mean": float(cos_i8.mean()), "i8_cosine_worst": float(cos_i8.min()),
               "bf16_cosine_mean": float(cos_bf16.mean()), "bf16_cosine_worst": float(cos_bf16.min())}
        line = (f"{kind:8} {len(f32):6d} {cos_i8.mean():16.6f} {cos_i8.min():8.5f} {cos_bf16.mean():18.6f}"
                f" {cos_bf16.min():8.5f}")
        if kind != "text":
            indices = [i for i, p in enumerate(pairs) if p[0] == kind]
            captions = [pairs[i][1] for i in indices]
            recalls = {c: recall_at_1(embeddings[c]["text"][indices], embeddings[c][kind], captions) for c in ("f32", "bf16", "i8")}
            row.update({f"r1_{c}": r for c, r in recalls.items()})
            line += f" {recalls['f32']:8.3f} {recalls['bf16']:6.3f} {recalls['i8']:6.3f}"
        print(line)
        report["modalities"][kind] = row
    for kind, row in report["modalities"].items():
        judge(row["i8_cosine_mean"] >= args.min_mean, f"{kind} cosine mean",
              f"{row['i8_cosine_mean']:.6f} (needs >= {args.min_mean})")
        judge(row["i8_cosine_worst"] >= args.min_worst, f"{kind} cosine worst",
              f"{row['i8_cosine_worst']:.6f} (needs >= {args.min_worst})")
        if kind != "text" and not args.no_recall:
            points = 100 * abs(row["r1_i8"] - row["r1_bf16"])
            judge(points <= args.recall_points + 1e-9, f"{kind} text->{kind} R@1",
                  f"I8 {row['r1_i8']:.3f}, BF16 {row['r1_bf16']:.3f}: {points:.1f} points apart (at most {args.recall_points})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=1)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
