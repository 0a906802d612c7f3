#!/usr/bin/python3
"""Writes a realistic tokenizer folder, as the Hugging Face hub serves it, from a generated corpus.

Usage: make_tokenizers.py KIND OUT_FOLDER [--seed N]
  KIND   bert-uncased  WordPiece, BertNormalizer(lowercase), BertPreTokenizer, [CLS] $A [SEP]
                       (bert-base-uncased, MiniLM, bge, e5, UForm 3's text tower)
         bert-cased    the same without lowercasing or accent stripping (bert-base-cased)
         roberta       byte-level BPE with <s> </s> <mask>(lstrip), RobertaProcessing (roberta-base)
         gpt2          byte-level BPE with a prefix space, added tokens with single_word / lstrip /
                       rstrip, merges in the [a, b] form, Sequence[ByteLevel, BOS template]
         clip          CLIP's BPE: NFC + whitespace collapse + lowercase, the \\p{L}/\\p{N} Split,
                       ByteLevel without regex, merges with "</w>", <|startoftext|> <|endoftext|>
                       (openai/clip-vit-*, OpenCLIP folders)
         wordpiece-mixed  WordPiece behind the less common stages: NFKD, StripAccents, Lowercase,
                       Strip, Replace, Sequence pre-tokenizer of WhitespaceSplit, Punctuation,
                       Digits and a String Split, TemplateProcessing with two tokens in front
         wordlevel     WordLevel behind Whitespace and a regex Split, BertProcessing
         bpe-options   BPE with "##" continuing prefix, unk_token with fuse_unk, byte_fallback (ASCII
                       bytes only), ignore_merges, CharDelimiterSplit, Punctuation, Digits, Strip
         unigram       XLM-R-like: NFKC + Replace, Metaspace, Unigram, <s> $A </s> (the Unigram model,
                       Metaspace and Precompiled are the SentencePiece engineer's, src/text/sp_*.c)
         unigram-first the same with Metaspace prepend_scheme "first" (T5) behind normalizers that
                       remove or replace the first characters
  OUT_FOLDER is created if needed; it receives tokenizer.json, tokenizer_config.json,
  special_tokens_map.json and the files the slow tokenizers read (vocab.txt for WordPiece,
  vocab.json + merges.txt for BPE).
  --seed N  the corpus, hence vocabulary and merges (default 0). The same seed gives the same files.
Prints one line of JSON: {"kind", "vocab_size" (largest id + 1: the embedding rows a model needs),
"model" (WordPiece, BPE, WordLevel, Unigram), "added_tokens" (content -> id)}.

Stable interface: other tests call this to put tokenizer files into the random-weight model folders
they write. Runs in about a second per kind. Uses only the standard library.
"""
import argparse
import heapq
import json
import os
import random
import re
import sys
import unicodedata

# ---------------------------------------------------------------------------------------------
# The corpus: English words with Zipf-like frequencies, invented words, and words of other scripts.
# ---------------------------------------------------------------------------------------------

ENGLISH = """the of and to a in is it you that he was for on are with as his they be at one have this from
or had by hot word but what some we can out other were all there when up use your how said an each she
which do their time if will way about many then them write would like so these her long make thing see
him two has look more day could go come did number sound no most people my over know water than call
first who may down side been now find any new work part take get place made live where after back
little only round man year came show every good me give our under name very through just form sentence
great think say help low line differ turn cause much mean before move right boy old too same tell does
set three want air well also play small end put home read hand port large spell add even land here
must big high such follow act why ask men change went light kind off need house picture try us again
animal point mother world near build self earth father head stand own page should country found answer
school grow study still learn plant cover food sun four between state keep eye never last let thought
city tree cross farm hard start might story saw far sea draw left late run don't while press close
night real life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second book carry took
science eat room friend began idea fish mountain stop once base hear horse cut sure watch color face
wood main enough plain girl usual young ready above ever red list though feel talk bird soon body dog
family direct pose leave song measure door product black short numeral class wind question happen
complete ship area half rock order fire south problem piece told knew pass since top whole king space
heard best hour better true during hundred five remember step early hold west ground interest reach
fast verb sing listen six table travel less morning ten simple several vowel toward war lay against
pattern slow center love person money serve appear road map rain rule govern pull cold notice voice
unit power town fine certain fly fall lead cry dark machine note wait plan figure star box noun field
rest correct able pound done beauty drive stood contain front teach week final gave green oh quick
develop ocean warm free minute strong special mind behind clear tail produce fact street inch multiply
nothing course stay wheel full force blue object decide surface deep moon island foot system busy test
record boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate
photograph dogs cats running jumped encoder transformer embedding tokenizer multimodal retrieval
unbelievable internationalization antidisestablishmentarianism""".split()

OTHER_SCRIPTS = [
    # Accented Latin (precomposed and with combining marks), Greek, Cyrillic, Arabic, Hebrew,
    # Devanagari, Thai, Korean, Japanese, Chinese; the generator mixes them into the corpus.
    "café", "naïve", "résumé", "façade", "jalapeño", "über", "straße", "Ærøskøbing", "coöperate", "élève",
    "cafe\u0301", "Ångström", "İstanbul", "ŞEHİR", "crème", "brûlée", "piñata", "smörgåsbord", "Dvořák",
    "λόγος", "ἀρετή", "Σίσυφος", "москва", "Привет", "ёжик", "мир", "سلام", "العربية", "مرحبا", "שלום",
    "नमस्ते", "हिन्दी", "ภาษาไทย", "한국어", "안녕하세요", "こんにちは", "カタカナ", "ひらがな", "東京",
    "中文", "汉字", "北京大学", "机器学习", "模型", "你好世界", "ｆｕｌｌｗｉｄｔｈ", "①②③", "ﬁnance",
]

EMOJI = ["😀", "🤣", "🥰", "👍🏽", "👨‍👩‍👧", "🇺🇸", "❤️", "🫠", "✨", "🚀"]


def make_corpus(rng, words=6000):
    """A list of sentences (strings)."""
    invented = []
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    for _ in range(400):
        syllables = rng.randint(2, 4)
        invented.append("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    pool = ENGLISH + invented + OTHER_SCRIPTS
    weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(pool))]
    sentences = []
    made = 0
    while made < words:
        length = rng.randint(3, 14)
        chosen = rng.choices(pool, weights=weights, k=length)
        if rng.random() < 0.3:
            chosen[0] = chosen[0].capitalize()
        if rng.random() < 0.1:
            chosen.append(rng.choice(EMOJI))
        if rng.random() < 0.2:
            chosen.insert(rng.randint(0, len(chosen)), str(rng.randint(0, 2024)))
        sentence = " ".join(chosen) + rng.choice([".", ".", "!", "?", ",", ";", ""])
        sentences.append(sentence)
        made += length
    return sentences


# ---------------------------------------------------------------------------------------------
# A small BPE trainer over symbol sequences (lists of strings), merges by descending frequency
# with a lazy heap; ties broken by the pair itself so that runs are reproducible.
# ---------------------------------------------------------------------------------------------

def train_bpe(word_counts, merges_wanted, prefix=""):
    """`prefix`: the continuing_subword_prefix the symbols after the first carry; a merge drops the
    right symbol's prefix, as `tokenizers` builds the merged token."""
    words = [list(symbols) for symbols in word_counts]
    counts = list(word_counts.values())
    pair_counts, where = {}, {}
    for index, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_counts[pair] = pair_counts.get(pair, 0) + counts[index]
            where.setdefault(pair, set()).add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < merges_wanted:
        negative, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negative or -negative < 2:
            continue
        merges.append(pair)
        merged = pair[0] + (pair[1][len(prefix):] if prefix and pair[1].startswith(prefix) else pair[1])
        changed = {}
        for index in list(where.get(pair, ())):
            symbols, count = words[index], counts[index]
            i, out = 0, []
            while i < len(symbols):
                if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            for old in zip(symbols, symbols[1:]):
                pair_counts[old] -= count
                changed[old] = True
            for new in zip(out, out[1:]):
                pair_counts[new] = pair_counts.get(new, 0) + count
                where.setdefault(new, set()).add(index)
                changed[new] = True
            words[index] = out
        for changed_pair in changed:
            if pair_counts.get(changed_pair, 0) > 0:
                heapq.heappush(heap, (-pair_counts[changed_pair], changed_pair))
    return merges


def bytes_to_unicode():
    """GPT-2's byte-to-character table."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    characters = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return {byte: chr(character) for byte, character in zip(printable, characters)}


BYTE_CHARS = bytes_to_unicode()

# A rough stand-in for GPT-2's regex (Python's re has no \p{L}): enough to train merges on.
ROUGH_WORDS = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+""")


def byte_level(text):
    return "".join(BYTE_CHARS[b] for b in text.encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# The kinds.
# ---------------------------------------------------------------------------------------------

def added(id, content, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False):
    return {"id": id, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def template(first, last, extra_first=()):
    single = [{"SpecialToken": {"id": t, "type_id": 0}} for t in list(extra_first) + [first]]
    single += [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": last, "type_id": 0}}]
    pair = single + [{"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": last, "type_id": 1}}]
    return single, pair


def wordpiece_vocab(rng, sentences, lowercase, strip_accents, size):
    """[PAD] [unused..] [UNK] [CLS] [SEP] [MASK], characters, ##characters, words, ##suffixes."""
    vocab = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(vocab)

    def add(token):
        if token not in seen:
            seen.add(token)
            vocab.append(token)

    def normalize(word):
        if lowercase:
            word = word.lower()
        if strip_accents:
            word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
        return word

    words = {}
    for sentence in sentences:
        for word in re.findall(r"\w+|[^\w\s]", sentence):
            word = normalize(word)
            words[word] = words.get(word, 0) + 1
    characters = set()
    for word in words:
        characters.update(word)
    characters.update(chr(c) for c in range(0x21, 0x7F))
    characters.update("¡¢£¤¥¦§¨©ª«¬®¯°±²³´µ¶·¸¹º»¼½¾¿×÷")
    characters.update(chr(c) for c in range(0x4E00, 0x4E00 + 300))  # common-ish CJK ideographs
    characters.update(chr(c) for c in range(0x3041, 0x3097))  # hiragana
    characters.update("αβγδεζηθικλμνξοπρστυφχψωабвгдежзийклмнопрстуфхцчшщъыьэюя")
    if not lowercase:
        characters.update("ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ")
        characters.update("ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüý")
    if strip_accents or lowercase:
        characters = {normalize(c) for c in characters if normalize(c)}
    for c in sorted(characters):
        if len(c) == 1:
            add(c)
    for c in sorted(characters):
        if len(c) == 1 and not c.isspace():
            add("##" + c)
    ranked = sorted(words.items(), key=lambda item: (-item[1], item[0]))
    for word, _ in ranked:
        if len(vocab) >= size * 0.6:
            break
        if len(word) > 1:
            add(word)
    # Subword pieces: frequent prefixes and ## suffixes of the words, as WordPiece training finds.
    pieces = {}
    for word, count in words.items():
        for length in range(2, min(len(word), 7)):
            pieces[word[:length]] = pieces.get(word[:length], 0) + count
            pieces["##" + word[-length:]] = pieces.get("##" + word[-length:], 0) + count
    for piece, _ in sorted(pieces.items(), key=lambda item: (-item[1], item[0])):
        if len(vocab) >= size:
            break
        add(piece)
    return {token: index for index, token in enumerate(vocab)}


def bert(rng, lowercase):
    sentences = make_corpus(rng)
    vocab = wordpiece_vocab(rng, sentences, lowercase, lowercase, 8000)
    single, pair = template("[CLS]", "[SEP]")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(vocab[t], t) for t in specials],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing", "single": single, "pair": pair,
                           "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                                              for t in ("[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }
    config = {"do_lower_case": lowercase, "model_max_length": 512, "tokenizer_class": "BertTokenizer",
              "clean_up_tokenization_spaces": True, "tokenize_chinese_chars": True, "strip_accents": None,
              "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
              "mask_token": "[MASK]"}
    files = {"vocab.txt": "".join(token + "\n" for token in vocab)}
    return tokenizer, config, files


def byte_level_bpe(rng, merges_wanted, prefix_tokens, suffix_tokens):
    """Vocabulary and merges of a GPT-2-style byte-level BPE trained on the corpus."""
    sentences = make_corpus(rng)
    counts = {}
    for sentence in sentences:
        for word in ROUGH_WORDS.findall(" " + sentence):
            symbols = tuple(byte_level(word))
            counts[symbols] = counts.get(symbols, 0) + 1
    merges = train_bpe(counts, merges_wanted)
    vocab = {}
    for token in prefix_tokens:
        vocab[token] = len(vocab)
    for byte in range(256):
        character = BYTE_CHARS[byte]
        vocab.setdefault(character, len(vocab))
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    for token in suffix_tokens:
        vocab[token] = len(vocab)
    return vocab, merges


def bpe_files(vocab, merges):
    return {"vocab.json": json.dumps(vocab, ensure_ascii=False),
            "merges.txt": "#version: 0.2\n" + "".join("%s %s\n" % pair for pair in merges)}


def roberta(rng):
    vocab, merges = byte_level_bpe(rng, 3000, ["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"])
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<s>", normalized=True), added(1, "<pad>", normalized=True),
                         added(2, "</s>", normalized=True), added(3, "<unk>", normalized=True),
                         added(vocab["<mask>"], "<mask>", lstrip=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [" ".join(pair) for pair in merges]},
    }
    config = {"model_max_length": 512, "tokenizer_class": "RobertaTokenizer", "add_prefix_space": False,
              "errors": "replace", "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
              "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
              "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False,
                             "single_word": False, "special": True, "__type": "AddedToken"}}
    return tokenizer, config, bpe_files(vocab, merges)


def gpt2(rng):
    vocab, merges = byte_level_bpe(rng, 2500, [], ["<|endoftext|>"])
    vocab["hello world"] = len(vocab)
    vocab["<|sep|>"] = len(vocab)
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(vocab["<|endoftext|>"], "<|endoftext|>"),
                         added(vocab["hello world"], "hello world", special=False, normalized=True,
                               single_word=True),
                         added(vocab["<|sep|>"], "<|sep|>", rstrip=True, lstrip=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        # Sequence[ByteLevel, TemplateProcessing], as Llama-3-style files write a BOS-only template.
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [vocab["<|endoftext|>"]],
                                                  "tokens": ["<|endoftext|>"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        # The tuple form of the merges, as tokenizers >= 0.20 writes them.
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [list(pair) for pair in merges]},
    }
    config = {"model_max_length": 1024, "tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True,
              "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}
    return tokenizer, config, bpe_files(vocab, merges)


CLIP_PATTERN = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
ROUGH_CLIP = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d|[^\W\d_]+|\d|[^\s\w]+""")


def clip(rng):
    sentences = make_corpus(rng)
    counts = {}
    for sentence in sentences:
        text = re.sub(r"\s+", " ", unicodedata.normalize("NFC", sentence)).lower()
        for word in ROUGH_CLIP.findall(text):
            symbols = list(byte_level(word))
            symbols[-1] += "</w>"
            counts[tuple(symbols)] = counts.get(tuple(symbols), 0) + 1
    merges = train_bpe(counts, 3000)
    vocab = {}
    for byte in range(256):
        vocab.setdefault(BYTE_CHARS[byte], len(vocab))
    for byte in range(256):
        vocab.setdefault(BYTE_CHARS[byte] + "</w>", len(vocab))
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    start, end = len(vocab), len(vocab) + 1
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = start, end
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(start, "<|startoftext|>", normalized=True), added(end, "<|endoftext|>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
            {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CLIP_PATTERN}, "behavior": "Removed", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "RobertaProcessing", "sep": ["<|endoftext|>", end],
                           "cls": ["<|startoftext|>", start], "trim_offsets": False, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<|endoftext|>", "continuing_subword_prefix": "",
                  "end_of_word_suffix": "</w>", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [" ".join(pair) for pair in merges]},
    }
    config = {"model_max_length": 77, "tokenizer_class": "CLIPTokenizer", "do_lower_case": True,
              "errors": "replace", "bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
              "unk_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}
    return tokenizer, config, bpe_files(vocab, merges)


def wordpiece_mixed(rng):
    sentences = make_corpus(rng)
    vocab = wordpiece_vocab(rng, sentences, True, True, 6000)
    vocab["<bos>"] = len(vocab)
    single, pair = template("[CLS]", "[SEP]", extra_first=["<bos>"])
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(vocab[t], t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<bos>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "MergedWithPrevious"},
            {"type": "Digits", "individual_digits": True},
            {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext", "invert": False}]},
        "post_processor": {"type": "TemplateProcessing", "single": single, "pair": pair,
                           "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                                              for t in ("<bos>", "[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 24, "vocab": vocab},
    }
    config = {"model_max_length": 512, "tokenizer_class": "BertTokenizerFast", "do_lower_case": True}
    files = {"vocab.txt": "".join(token + "\n" for token in vocab)}
    return tokenizer, config, files


def wordlevel(rng):
    sentences = make_corpus(rng)
    counts = {}
    for sentence in sentences:
        for word in re.findall(r"\w+|[^\w\s]+", sentence):
            counts[word] = counts.get(word, 0) + 1
    vocab = {"<unk>": 0, "<cls>": 1, "<sep>": 2}
    for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        vocab.setdefault(word, len(vocab))
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<unk>"), added(1, "<cls>"), added(2, "<sep>")],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "_"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "_+"}, "behavior": "Removed", "invert": False},
            {"type": "Whitespace"},
            {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Contiguous", "invert": False}]},
        "post_processor": {"type": "BertProcessing", "sep": ["<sep>", 2], "cls": ["<cls>", 1]},
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }
    config = {"model_max_length": 256, "tokenizer_class": "PreTrainedTokenizerFast"}
    return tokenizer, config, {}


def bpe_options(rng):
    """A BPE that is not byte-level, with the options the published files rarely combine."""
    sentences = make_corpus(rng)
    counts = {}
    for sentence in sentences:
        for word in re.findall(r"\w+|[^\w\s]", unicodedata.normalize("NFC", sentence)):
            symbols = tuple([word[0]] + ["##" + c for c in word[1:]])
            counts[symbols] = counts.get(symbols, 0) + 1
    merges = train_bpe(counts, 2000, prefix="##")
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    # Byte fallback covers ASCII and the lead byte 0xC3 only: a missing accented Latin letter has
    # its lead byte but not its second byte, so it falls back to <unk> (fused with its neighbours).
    for byte in list(range(0x80)) + [0xC3]:
        vocab["<0x%02X>" % byte] = len(vocab)
    letters = sorted({c for symbols in counts for symbol in symbols for c in symbol.replace("##", "")})
    kept = [c for c in letters if c.isascii() or rng.random() < 0.5]
    for c in kept:
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    usable = []
    for left, right in merges:
        if left in vocab and right in vocab:
            vocab.setdefault(left + right[2:] if right.startswith("##") else left + right, len(vocab))
            usable.append((left, right))
    single, pair = template("<s>", "</s>")
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFC"}, {"type": "Strip", "strip_left": False, "strip_right": True}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "CharDelimiterSplit", "delimiter": "|"}, {"type": "WhitespaceSplit"},
            {"type": "Punctuation", "behavior": "Isolated"}, {"type": "Digits", "individual_digits": False}]},
        "post_processor": {"type": "TemplateProcessing", "single": single, "pair": pair,
                           "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in ("<s>", "</s>")}},
        "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": "##",
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": True,
                  "vocab": vocab, "merges": [" ".join(pair) for pair in usable]},
    }
    config = {"model_max_length": 512, "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>",
              "bos_token": "<s>", "eos_token": "</s>"}
    return tokenizer, config, bpe_files(vocab, usable)


def unigram(rng, first=False):
    """An XLM-R-like Unigram file (Metaspace, scores from piece frequencies): the pipeline around
    the SentencePiece engineer's Unigram model (src/text/sp_*.c). `first`: T5-style Metaspace that
    prepends only at the start of the text, behind normalizers that move that start."""
    sentences = make_corpus(rng)
    counts = {}
    for sentence in sentences:
        for word in unicodedata.normalize("NFKC", sentence).split():
            word = "\u2581" + word
            for start in range(len(word)):
                for end in range(start + 1, min(len(word), start + 8) + 1):
                    counts[word[start:end]] = counts.get(word[start:end], 0) + 1
    pieces = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:6000]
    total = float(sum(count for _, count in pieces))
    import math
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[piece, round(math.log(count / total), 4)] for piece, count in pieces]
    vocab.append(["<mask>", 0.0])
    mask = len(vocab) - 1
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
                         added(mask, "<mask>", lstrip=True)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}] + ([
            {"type": "StripAccents"}, {"type": "Replace", "pattern": {"String": "\t"}, "content": ""},
            {"type": "Replace", "pattern": {"String": "\n"}, "content": "\u2581"}] if first else [])},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first" if first else "always",
                          "split": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "pair": [],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                              "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    }
    config = {"model_max_length": 512, "tokenizer_class": "XLMRobertaTokenizer", "bos_token": "<s>",
              "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "sep_token": "</s>",
              "cls_token": "<s>", "mask_token": "<mask>"}
    return tokenizer, config, {}


KINDS = {
    "bert-uncased": lambda rng: bert(rng, True),
    "bert-cased": lambda rng: bert(rng, False),
    "roberta": roberta,
    "gpt2": gpt2,
    "clip": clip,
    "wordpiece-mixed": wordpiece_mixed,
    "wordlevel": wordlevel,
    "bpe-options": bpe_options,
    "unigram": unigram,
    "unigram-first": lambda rng: unigram(rng, first=True),
}


def special_tokens_map(config):
    keys = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
    return {key: config[key] for key in keys if key in config}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("out_folder")
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    rng = random.Random("%s/%d" % (arguments.kind, arguments.seed))
    tokenizer, config, files = KINDS[arguments.kind](rng)
    os.makedirs(arguments.out_folder, exist_ok=True)

    def write(name, text):
        with open(os.path.join(arguments.out_folder, name), "w", encoding="utf-8") as out:
            out.write(text)

    write("tokenizer.json", json.dumps(tokenizer, ensure_ascii=False, indent=2))
    model = tokenizer["model"]
    ids = [len(model["vocab"]) - 1] if isinstance(model["vocab"], list) else list(model["vocab"].values())
    ids += [token["id"] for token in tokenizer["added_tokens"]]
    summary = {"kind": arguments.kind, "vocab_size": max(ids) + 1, "model": model["type"],
               "added_tokens": {token["content"]: token["id"] for token in tokenizer["added_tokens"]}}
    write("tokenizer_config.json", json.dumps(config, ensure_ascii=False, indent=2))
    write("special_tokens_map.json", json.dumps(special_tokens_map(config), ensure_ascii=False, indent=2))
    for name, text in files.items():
        write(name, text)
    print(json.dumps(summary, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
