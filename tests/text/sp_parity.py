#!/usr/bin/python3
"""Every id of the engine's SentencePiece encoder against python3-sentencepiece (the C++ library).

Usage: sp_parity.py SP_TOOL WORKDIR

Trains small unigram models with sp_make_models.py (nmt_nfkc and identity rules, with and without
byte fallback, with user-defined symbols), generates >= 2,000 strings from a fixed seed (ASCII,
accents composed and decomposed, CJK, emoji sequences, Arabic, control characters, whitespace runs,
very long words, special tokens in text, texts past 64 ids), and compares:
  - uform__sp_model_encode with SentencePieceProcessor.encode, per model;
  - the same with add_dummy_prefix forced off (as SiglipTokenizer and T5Tokenizer(legacy=False) load);
  - XLM-R's fairseq ids with XLMRobertaTokenizer's mapping (spm id + 1, <unk> -> 3);
  - uform__sp_siglip_encode with SiglipTokenizer's steps re-done here in Python (its lower(), \\s,
    strip(), string.punctuation and the real sentencepiece), padding="max_length", truncation.
Prints both sides of every mismatch (the first 10 per comparison) and "N passed, N failed".
"""
import json
import os
import random
import re
import string
import subprocess
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
except ImportError:
    print("skipped: python3-sentencepiece / python3-protobuf missing (scripts/install-deps.sh installs them)")
    sys.exit(1 if os.environ.get("CI") in ("true", "1") else 77)

import sp_make_models  # noqa: E402

SPACE = "\u2581"


def make_strings(seed=1234, count=2200):
    rng = random.Random(seed)
    words = [w for pool in sp_make_models.WORDS.values() for w in pool]
    specials = ["<s>", "</s>", "<unk>", "<pad>", "<mask>", "<0x41>", SPACE, "<sep>", "[MASK]", "</S>", "<UNK>"]
    controls = [chr(c) for c in list(range(1, 32)) + [0x7F, 0x85, 0x200B, 0x200D, 0xFEFF, 0x2028, 0xAD]]
    spaces = [" ", "  ", "   ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2002", " \t ", "\u2009"]
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
              (0x900, 0x97F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2100, 0x214F), (0x2460, 0x24FF),
              (0x3000, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xACFF), (0xE000, 0xE0FF), (0xF900, 0xFAFF),
              (0xFB00, 0xFB4F), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x1D400, 0x1D4FF), (0x1F300, 0x1F6FF),
              (0x1F900, 0x1F9FF), (0x20000, 0x200FF), (0xFFF0, 0xFFFD)]

    def random_text():
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.45:
                parts.append(rng.choice(words))
            elif r < 0.6:
                lo, hi = rng.choice(blocks)
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 6))))
            elif r < 0.7:
                parts.append(rng.choice(controls))
            elif r < 0.8:
                parts.append(rng.choice(specials))
            else:
                parts.append(rng.choice(string.punctuation))
            parts.append(rng.choice(spaces) if rng.random() < 0.3 else (" " if rng.random() < 0.8 else ""))
        text = "".join(parts)
        r = rng.random()
        if r < 0.1:
            text = unicodedata.normalize("NFD", text)
        elif r < 0.15:
            text = text.upper()
        elif r < 0.2:
            text = rng.choice(spaces) + text + rng.choice(spaces)
        return text

    strings = ["", " ", "   ", "\t\n", SPACE, SPACE * 3, "Hello world", "hello  world", " leading", "trailing ",
               "a" * 3000, "café" * 400, "你好" * 500, "😀" * 300, "<s>hello</s>", "</s>", "<unk>", "Hello </s> World",
               " </s> ", "</s>hello", "hello</s>", "<unk><unk>", "A photo of a CAT.", "ΣΑΣ Σ", "İstanbul",
               "e\u0301", "ﬁ ﬂ ﬃ", "①②③", "Ｆｕｌｌｗｉｄｔｈ", "\u0301\u0301", "\ufffd", "x\u200dy", "👨‍👩‍👧‍👦 🇫🇷🇩🇪",
               " ".join(rng.choice(words) for _ in range(400)), "\u1160\u3164", "a\u00adb"]
    while len(strings) < count:
        strings.append(random_text())
    return strings


def run_tool(tool, mode, path, strings_path, *options):
    output = subprocess.run([tool, mode, path, strings_path, *options], check=True, capture_output=True, text=True)
    return json.loads(output.stdout)


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def compare(self, label, strings, ours, theirs):
        shown = 0
        for text, got, expected in zip(strings, ours, theirs):
            if got == expected:
                self.passed += 1
                continue
            self.failed += 1
            if shown < 10:
                print(f"{label}: {text[:80]!r}:\n  engine    {str(got)[:300]}\n  reference {str(expected)[:300]}")
            shown += 1
        if shown:
            print(f"{label}: {shown} of {len(strings)} strings differ")
        else:
            print(f"{label}: {len(strings)} strings agree")


def without_dummy_prefix(model_path):
    proto = model_pb2.ModelProto()
    with open(model_path, "rb") as file:
        proto.ParseFromString(file.read())
    proto.normalizer_spec.add_dummy_prefix = False
    processor = spm.SentencePieceProcessor()
    processor.LoadFromSerializedProto(proto.SerializeToString())
    return processor


def with_quantized_scores(model_path, step, out_path):
    """A copy of a model whose scores are rounded to multiples of `step` (0: all -1, so that every
    segmentation with the fewest pieces ties): segmentations then tie exactly, or nearly where float
    rounding decides (step 1/3), so the tie-breaking order and sentencepiece's mix of float and double
    arithmetic are both exercised."""
    proto = model_pb2.ModelProto()
    with open(model_path, "rb") as file:
        proto.ParseFromString(file.read())
    for piece in proto.pieces:
        if piece.type == 1:
            piece.score = round(piece.score / step) * step if step else -1.0
    with open(out_path, "wb") as file:
        file.write(proto.SerializeToString())
    return out_path


def siglip_reference(sp, text, max_length=64, pad=True, truncate=True, lowercase=True):
    """transformers' SiglipTokenizer(text, padding="max_length", truncation=True), step by step."""
    specials = ["</s>", "<unk>"]
    text = SPACE + text.replace(SPACE, " ")
    if lowercase:
        pattern = "(" + "|".join(re.escape(s) for s in specials) + r")|(.+?)"
        text = re.sub(pattern, lambda m: m.groups()[0] or m.groups()[1].lower(), text)
    # PreTrainedTokenizer's trie split on the added tokens, then their lstrip/rstrip.
    chunks = re.split("(" + "|".join(re.escape(s) for s in specials) + ")", text)
    for i, chunk in enumerate(chunks):
        if chunk in specials:
            if i + 1 < len(chunks) and chunks[i + 1]:
                chunks[i + 1] = chunks[i + 1].lstrip()
            if i > 0 and chunks[i - 1]:
                chunks[i - 1] = chunks[i - 1].rstrip()
    unk_length = len(sp.encode("<unk>", out_type=str))
    tokens = []
    for chunk in chunks:
        if not chunk:
            continue
        if chunk in specials:
            tokens.append(chunk)
            continue
        canonical = chunk.translate(str.maketrans("", "", string.punctuation))
        canonical = re.sub(r"\s+", " ", canonical).strip()
        pieces = sp.encode("<unk>" + canonical, out_type=str)
        tokens.extend(pieces[unk_length:] if len(pieces) >= unk_length else pieces)
    if len(tokens) > 1 and tokens[0] == SPACE and tokens[1] in specials:
        tokens = tokens[1:]
    ids = [sp.piece_to_id(token) for token in tokens]
    eos = sp.piece_to_id("</s>")
    if truncate and len(ids) + 1 > max_length:
        ids = ids[: max_length - 1]
    if not ids or ids[-1] != eos:
        ids = ids + [eos]
    if pad and len(ids) < max_length:
        ids = ids + [eos] * (max_length - len(ids))
    return ids


def main(tool, workdir):
    os.makedirs(workdir, exist_ok=True)
    strings = make_strings()
    strings_path = os.path.join(workdir, "strings.json")
    with open(strings_path, "w", encoding="utf-8") as file:
        json.dump(strings, file, ensure_ascii=False)
    checker = Checker()
    models = {
        "xlm-roberta nmt_nfkc": sp_make_models.make("xlm-roberta", os.path.join(workdir, "xlmr"), seed=0),
        "t5 identity byte_fallback": sp_make_models.make("t5", os.path.join(workdir, "t5"), seed=1,
                                                         normalization="identity", byte_fallback=True),
        "t5 nmt_nfkc byte_fallback user symbols": sp_make_models.make(
            "t5", os.path.join(workdir, "t5u"), seed=3, byte_fallback=True, user_symbols=["<sep>", "[MASK]", "ab"]),
        "siglip nmt_nfkc": sp_make_models.make("siglip", os.path.join(workdir, "siglip"), seed=2),
    }
    for label, path in list(models.items())[:2]:
        for name, step in (("0.5", 0.5), ("1/3", 1 / 3), ("-1 each", 0)):
            out = os.path.join(workdir, f"{os.path.basename(os.path.dirname(path))}-{name.replace('/', '_')}.model")
            models[f"{label}, scores rounded to {name}"] = with_quantized_scores(path, step, out)
    for label, path in models.items():
        sp = spm.SentencePieceProcessor(model_file=path)
        checker.compare(f"{label}: encode", strings, run_tool(tool, "model", path, strings_path),
                        [sp.encode(s) for s in strings])
        bare = without_dummy_prefix(path)
        checker.compare(f"{label}: encode without dummy prefix", strings,
                        run_tool(tool, "model", path, strings_path, "--no-dummy-prefix"), [bare.encode(s) for s in strings])
    # XLMRobertaTokenizer: <s>=0 <pad>=1 </s>=2 <unk>=3, spm ids + 1.
    path = models["xlm-roberta nmt_nfkc"]
    sp = spm.SentencePieceProcessor(model_file=path)
    checker.compare("xlm-roberta: fairseq ids", strings, run_tool(tool, "model", path, strings_path, "--xlmr"),
                    [[i + 1 if i else 3 for i in sp.encode(s)] for s in strings])
    # SiglipTokenizer, through the processor call of the model card (+ truncation), and variants.
    path = models["siglip nmt_nfkc"]
    bare = without_dummy_prefix(path)
    checker.compare("siglip: max_length 64", strings, run_tool(tool, "siglip", path, strings_path),
                    [siglip_reference(bare, s) for s in strings])
    checker.compare("siglip: no padding, no truncation, no lower-casing", strings,
                    run_tool(tool, "siglip", path, strings_path, "--no-pad", "--no-truncate", "--no-lowercase"),
                    [siglip_reference(bare, s, pad=False, truncate=False, lowercase=False) for s in strings])
    print(f"{checker.passed} passed, {checker.failed} failed")
    return 1 if checker.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
