#!/usr/bin/python3
"""Trains small SentencePiece unigram models and writes the tokenizer files a published folder holds.

Usage (run by Debian's /usr/bin/python3, which has python3-sentencepiece and python3-protobuf):

    sp_make_models.py KIND OUT_FOLDER [--seed N] [--vocab-size N] [--normalization nmt_nfkc|identity]
                      [--byte-fallback] [--user-symbols A,B] [--with-tokenizer-json]

KIND and the files written into OUT_FOLDER (created if needed; existing files are replaced):

  xlm-roberta  sentencepiece.bpe.model (spm ids <unk>=0 <s>=1 </s>=2, as fairseq's XLM-R), tokenizer.json
               (XLMRobertaTokenizerFast: <s>=0 <pad>=1 </s>=2 <unk>=3, spm ids + 1, <mask> last; Precompiled +
               Strip(right) + Replace(" {2,}" -> "▁"), Metaspace(always), TemplateProcessing <s> $A </s>),
               tokenizer_config.json, special_tokens_map.json
  t5           spiece.model (<pad>=0 </s>=1 <unk>=2), tokenizer.json (T5TokenizerFast: the spm pieces then
               <extra_id_99> ... <extra_id_0>; $A </s>), tokenizer_config.json, special_tokens_map.json
  siglip       spiece.model (as t5), tokenizer_config.json (SiglipTokenizer, model_max_length 64,
               do_lower_case, pad "</s>"), special_tokens_map.json; google/siglip-* folders have no
               tokenizer.json, so none is written unless --with-tokenizer-json (then the T5 layout
               without extra ids)

The corpus is generated from --seed (default 0): sentences mixing Latin with accents, Cyrillic, Greek,
Arabic, CJK, Hangul, emoji, digits and punctuation. --vocab-size defaults to 1000 (2000 with
--byte-fallback is not needed: byte pieces are added on top). --normalization defaults to nmt_nfkc
(the rule XLM-R, T5 and SigLIP were trained with); identity gives an empty charsmap. Other engineers
call this script to add tokenizer files to random-weight model folders: keep the interface stable.

The tokenizer.json is written by our own conversion code, following transformers'
convert_slow_tokenizer (SpmConverter, XLMRobertaConverter, T5Converter) field for field.
"""
import argparse
import base64
import io
import json
import os
import random
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

SPACE = "\u2581"

WORDS = {
    "latin": ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "photo", "of", "a", "cat", "café",
              "naïve", "résumé", "Straße", "über", "façade", "mañana", "jalapeño", "Zürich", "smörgåsbord",
              "crème", "brûlée", "Ångström", "Łódź", "İstanbul", "ĳssel", "œuvre", "ﬁnance", "Ｆｕｌｌ", "ｗｉｄｔｈ"],
    "cyrillic": ["привет", "мир", "кошка", "собака", "Москва", "ёжик", "съешь", "ещё", "этих", "мягких"],
    "greek": ["καλημέρα", "κόσμε", "Σίσυφος", "ΟΔΥΣΣΕΥΣ", "φιλοσοφία", "λόγος"],
    "arabic": ["مرحبا", "بالعالم", "القطة", "الكلب", "كتاب", "سلام"],
    "cjk": ["你好", "世界", "猫", "狗", "日本語", "東京", "こんにちは", "カタカナ", "ひらがな", "漢字"],
    "hangul": ["안녕하세요", "세계", "고양이", "강아지"],
    "emoji": ["😀", "🐱", "🐶", "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "✨"],
    "digits": ["0", "1", "42", "2024", "3.14", "1,000", "½", "²", "①"],
    "punctuation": [".", ",", "!", "?", ";", ":", "-", "(", ")", "\"", "'", "…", "—", "«", "»", "„", "“"],
}


# Syllables that pseudo-words are built from, so the vocabulary gets real sub-word pieces.
SYLLABLES = {
    "latin": ["ka", "ri", "ne", "sto", "mar", "lé", "çu", "pho", "tra", "in", "gen", "über", "ño", "ß", "qu", "th"],
    "cyrillic": ["ка", "ри", "не", "сто", "мар", "ёж", "щи", "ль", "ый", "про"],
    "greek": ["κα", "λη", "μέ", "ρα", "σο", "φί", "ος", "ΣΤ"],
    "arabic": ["مر", "حب", "ال", "كت", "اب", "سل"],
    "cjk": ["你", "好", "世", "界", "日", "本", "語", "東", "京", "の", "は", "カ", "タ", "ナ"],
    "hangul": ["안", "녕", "하", "세", "요", "고", "양", "이"],
}


def make_corpus(seed, sentences=3000):
    rng = random.Random(seed)
    scripts = list(WORDS)
    lines = []
    for _ in range(sentences):
        main = rng.choice(scripts[:6])
        words = []
        for _ in range(rng.randint(3, 14)):
            if rng.random() < 0.5:
                word = "".join(rng.choice(SYLLABLES[main]) for _ in range(rng.randint(1, 4)))
            else:
                pool = WORDS[main] if rng.random() < 0.7 else WORDS[rng.choice(scripts)]
                word = rng.choice(pool)
            if rng.random() < 0.1:
                word = word.capitalize()
            words.append(word)
        lines.append(" ".join(words))
    return lines


def train(kind, seed, vocab_size, normalization, byte_fallback, user_symbols):
    corpus = make_corpus(seed)
    if kind == "xlm-roberta":
        ids = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    else:
        ids = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    writer = io.BytesIO()
    spm.set_random_generator_seed(seed + 1)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=writer, model_type="unigram", vocab_size=vocab_size,
        normalization_rule_name=normalization, byte_fallback=byte_fallback, character_coverage=0.995,
        num_threads=1, user_defined_symbols=user_symbols or [], hard_vocab_limit=False,
        minloglevel=2, **ids)
    return writer.getvalue()


def added(id, content, lstrip=False, rstrip=False, normalized=False, special=True):
    return {"id": id, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def template(single, pair, specials):
    def parse(items):
        out = []
        for item in items:
            if item in ("$A", "$B"):
                out.append({"Sequence": {"id": item[1], "type_id": 0}})
            else:
                out.append({"SpecialToken": {"id": item, "type_id": 0}})
        return out
    return {"type": "TemplateProcessing", "single": parse(single), "pair": parse(pair),
            "special_tokens": {name: {"id": name, "ids": [id], "tokens": [name]} for name, id in specials}}


def tokenizer_json(proto, kind):
    """What convert_slow_tokenizer's SpmConverter subclasses write for this proto."""
    pieces = [(p.piece, p.score) for p in proto.pieces]
    if kind == "xlm-roberta":
        vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + pieces[3:] + [("<mask>", 0.0)]
        unk_id = 3
        tokens = [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>")]
        post = template(["<s>", "$A", "</s>"], ["<s>", "$A", "</s>", "</s>", "$B", "</s>"], [("<s>", 0), ("</s>", 2)])
    else:
        extra = [f"<extra_id_{i}>" for i in range(99, -1, -1)] if kind == "t5" else []
        vocab = pieces + [(token, 0.0) for token in extra]
        unk_id = proto.trainer_spec.unk_id
        tokens = [added(i, p.piece) for i, p in enumerate(proto.pieces) if p.type in (2, 3)]
        tokens += [added(len(pieces) + i, token) for i, token in enumerate(extra)]
        eos = [i for i, p in enumerate(proto.pieces) if p.piece == "</s>"][0]
        post = template(["$A", "</s>"], ["$A", "</s>", "$B", "</s>"], [("</s>", eos)])
    # Control and user-defined pieces become added tokens (special for control ones) in the converter.
    known = {t["content"] for t in tokens}
    index = {piece: i for i, (piece, _) in enumerate(vocab)}
    for p in proto.pieces:
        if p.type in (3, 4) and p.piece not in known:
            tokens.append(added(index[p.piece], p.piece, special=p.type == 3))
    if kind == "xlm-roberta":
        tokens.append(added(len(vocab) - 1, "<mask>", lstrip=True))
    tokens.sort(key=lambda t: t["id"])
    normalizers = [{"type": "Strip", "strip_left": False, "strip_right": True},
                   {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": SPACE}]
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if charsmap:
        normalizers.insert(0, {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()})
    metaspace = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace, "post_processor": post, "decoder": dict(metaspace),
        "model": {"type": "Unigram", "unk_id": unk_id, "vocab": [[piece, score] for piece, score in vocab],
                  "byte_fallback": bool(proto.trainer_spec.byte_fallback)},
    }


def token_entry(content, lstrip=False, rstrip=False):
    return {"content": content, "lstrip": lstrip, "normalized": False, "rstrip": rstrip, "single_word": False,
            "special": True}


def configs(proto, kind):
    if kind == "xlm-roberta":
        size = len(proto.pieces) + 1
        decoder = {"0": token_entry("<s>"), "1": token_entry("<pad>"), "2": token_entry("</s>"),
                   "3": token_entry("<unk>"), str(size): token_entry("<mask>", lstrip=True)}
        config = {"added_tokens_decoder": decoder, "bos_token": "<s>", "clean_up_tokenization_spaces": True,
                  "cls_token": "<s>", "eos_token": "</s>", "mask_token": "<mask>", "model_max_length": 512,
                  "pad_token": "<pad>", "sep_token": "</s>", "tokenizer_class": "XLMRobertaTokenizer",
                  "unk_token": "<unk>"}
        special = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>",
                   "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False,
                                  "single_word": False},
                   "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"}
    elif kind == "t5":
        extra = [f"<extra_id_{i}>" for i in range(100)]
        decoder = {str(i): token_entry(p.piece) for i, p in enumerate(proto.pieces) if p.type in (2, 3)}
        for i, token in enumerate(reversed(extra)):
            decoder[str(len(proto.pieces) + i)] = token_entry(token)
        config = {"added_tokens_decoder": decoder, "additional_special_tokens": extra,
                  "clean_up_tokenization_spaces": True, "eos_token": "</s>", "extra_ids": 100, "legacy": True,
                  "model_max_length": 512, "pad_token": "<pad>", "tokenizer_class": "T5Tokenizer",
                  "unk_token": "<unk>"}
        special = {"additional_special_tokens": extra, "eos_token": "</s>", "pad_token": "<pad>",
                   "unk_token": "<unk>"}
    else:
        ids = {p.piece: i for i, p in enumerate(proto.pieces)}
        decoder = {str(ids["</s>"]): token_entry("</s>", True, True), str(ids["<unk>"]): token_entry("<unk>", True, True)}
        config = {"added_tokens_decoder": decoder, "additional_special_tokens": [],
                  "clean_up_tokenization_spaces": True, "do_lower_case": True, "eos_token": "</s>",
                  "model_input_names": ["input_ids"], "model_max_length": 64, "pad_token": "</s>",
                  "processor_class": "SiglipProcessor", "sp_model_kwargs": {}, "tokenizer_class": "SiglipTokenizer",
                  "unk_token": "<unk>"}
        entry = {"content": "", "lstrip": True, "normalized": False, "rstrip": True, "single_word": False}
        special = {name: dict(entry, content=content)
                   for name, content in (("eos_token", "</s>"), ("pad_token", "</s>"), ("unk_token", "<unk>"))}
    return config, special


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, ensure_ascii=False, indent=2)
        file.write("\n")


def make(kind, folder, seed=0, vocab_size=1000, normalization="nmt_nfkc", byte_fallback=False,
         user_symbols=None, with_tokenizer_json=False):
    """Trains and writes the files of `kind` into `folder`; answers the path of the .model file."""
    if kind not in ("xlm-roberta", "t5", "siglip"):
        raise ValueError(f"unknown kind {kind!r}: xlm-roberta, t5 or siglip")
    os.makedirs(folder, exist_ok=True)
    model = train(kind, seed, vocab_size, normalization, byte_fallback, user_symbols)
    proto = model_pb2.ModelProto()
    proto.ParseFromString(model)
    model_path = os.path.join(folder, "sentencepiece.bpe.model" if kind == "xlm-roberta" else "spiece.model")
    with open(model_path, "wb") as file:
        file.write(model)
    if kind != "siglip" or with_tokenizer_json:
        write_json(os.path.join(folder, "tokenizer.json"), tokenizer_json(proto, kind))
    config, special = configs(proto, kind)
    write_json(os.path.join(folder, "tokenizer_config.json"), config)
    write_json(os.path.join(folder, "special_tokens_map.json"), special)
    return model_path


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["xlm-roberta", "t5", "siglip"])
    parser.add_argument("folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--normalization", default="nmt_nfkc", choices=["nmt_nfkc", "identity", "nfkc", "nmt_nfkc_cf"])
    parser.add_argument("--byte-fallback", action="store_true")
    parser.add_argument("--user-symbols", default="", help="comma-separated user-defined symbols")
    parser.add_argument("--with-tokenizer-json", action="store_true")
    args = parser.parse_args(argv)
    symbols = [s for s in args.user_symbols.split(",") if s]
    path = make(args.kind, args.folder, args.seed, args.vocab_size, args.normalization, args.byte_fallback, symbols,
                args.with_tokenizer_json)
    print(f"wrote {path} and its tokenizer files")


if __name__ == "__main__":
    main(sys.argv[1:])
