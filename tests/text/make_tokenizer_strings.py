#!/usr/bin/python3
"""Writes the test strings the tokenizer comparisons encode.

Usage: make_tokenizer_strings.py C_STRINGS REFERENCE_STRINGS [--seed N] [--count N]
  C_STRINGS          one string per line for tests/text/tokenize_dump: JSON string text, or
                     "!hex:<bytes>" for bytes that are not valid UTF-8 or hold a NUL (cJSON stops
                     at an escaped NUL)
  REFERENCE_STRINGS  the same strings as the references receive them, one JSON string per line:
                     the hex lines decoded by Python's bytes.decode("utf-8", errors="replace"),
                     which is what the C tokenizer promises to do with ill-formed UTF-8
The strings: ASCII sentences, accents (precomposed and combining), CJK, emoji sequences, Arabic,
Hebrew, Indic, Thai, Hangul, control and format characters (including some the unicode_categories
crate of Unicode 8.0 does not know), whitespace runs of every White_Space character, very long
words (up to 10,000 characters), the special tokens of every generated kind inside text, long
texts for truncation, random code points from every assigned block, and ill-formed UTF-8.
"""
import argparse
import json
import random
import unicodedata

WORDS = ("the quick brown fox jumps over lazy dog hello world photograph running unbelievable don't "
         "it's we're they've I'm you'll she'd encoder transformer tokenizer naïve café résumé Straße "
         "İstanbul ŞEHİR Ωμέγα Москва ёжик العربية مرحبا שלום नमस्ते ภาษาไทย 한국어 こんにちは 東京 中文 "
         "北京大学 ｆｕｌｌ ①② ﬁnance 3.14 2024 100% $5 e-mail C++ foo_bar x=y a/b #tag @user").split()
SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "<s>", "</s>", "<mask>", "<pad>", "<unk>",
            "<|endoftext|>", "<|startoftext|>", "<|sep|>", "hello world", "<bos>", "<cls>", "<sep>", "[mask]",
            "<MASK>", "Hello World"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u2029", "\u0085", "\u180e", "\u200b",
          "\u2003", "\u202f", "\u205f", "\u1680", "\x0b", "\x0c", "   \n\t "]
CONTROLS = ["\x01", "\x07", "\x1b", "\x7f", "\x80", "\x9f", "\u00ad", "\u200d", "\u200e", "\ufeff", "\u2066",
            "\u061c", "\ufffd", "\ue000", "\U000f0000", "\u08e2", "\U000110cd", "\U00013430", "\u0890",
            "\U0001bca0", "\U000e0001", "\ufff9"]
# Characters the unicode_categories crate (Unicode 8.0) reads as unassigned: Mn, P*, Cf added later.
NEWER = ["\u08d4", "\u1dfb", "\U0001e000", "\U0001e944", "\U00011d3a", "\u2e43", "\u2e4f", "\U0001e95e",
         "\u0c04", "\U00016fe2", "\U00011a3f", "\u08e2", "\U000110cd"]
EMOJI = ["😀", "🤣", "🥰", "👍🏽", "👨‍👩‍👧", "🇺🇸", "❤️", "🫠", "✨", "🚀", "🏳️‍🌈", "1️⃣"]
COMBINING = ["\u0301", "\u0308", "\u0327", "\u0303", "\u20dd", "\u0903", "\u093f", "\u05b4", "\u0651"]
BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x250, 0x36F), (0x370, 0x52F), (0x530, 0x8FF), (0x900, 0xDFF),
          (0xE00, 0xFFF), (0x1000, 0x1FFF), (0x2000, 0x2BFF), (0x2C00, 0x2FFF), (0x3000, 0x33FF),
          (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xABFF), (0xAC00, 0xD7AF), (0xF900, 0xFFFD),
          (0x10000, 0x1FFFF), (0x20000, 0x2FA1F)]


def assigned(c):
    """Assigned in Python's Unicode (14.0), so the Unicode 15/16 additions that differ between
    utf8proc and Rust's standard library stay out of the random soup."""
    return unicodedata.category(c) not in ("Cn", "Cs")


def random_char(rng):
    while True:
        low, high = rng.choice(BLOCKS)
        c = chr(rng.randint(low, high))
        if assigned(c):
            return c


def sentence(rng, words=None):
    count = words or rng.randint(1, 16)
    parts = []
    for _ in range(count):
        word = rng.choice(WORDS)
        if rng.random() < 0.2:
            word = word.upper() if rng.random() < 0.5 else word.capitalize()
        parts.append(word)
        parts.append(rng.choice([" ", " ", " ", ", ", ". ", "! ", "? ", " - ", "'", "\"", " (", ") "]))
    return "".join(parts).strip()


def make(rng, count):
    strings = ["", " ", "a", "A", "\n", "Hello, world!", "hello world", "Hello world", "helloworld",
               "hello world!", "xhello world", "<s>", "</s><s>", "[CLS][SEP]", "<mask>", "  <mask>  ",
               "a<mask>b", "<|endoftext|><|endoftext|>", "<|startoftext|>hi<|endoftext|>", "<|sep|>",
               "a <|sep|> b", "  <|sep|>  x", "[MASK] is [MASK]", "ß", "İ", "İstanbul", "ΣΑΣ", "ﬃ", "ǅ",
               "x" * 100, "x" * 101, "é" * 100, "ab" * 5000, "\u0300" * 10, "a\u0300" * 300,
               "don't", "DON'T", "'s 't 're 've 'm 'll 'd", "'S 'T 'RE", "1234567890", "١٢٣ ٤٥٦", "Ⅻ ½ ²",
               "¿Qué?", "«quote»", "—–-", "…", "中文字符测试", "한국어 텍스트", "日本語のテキスト", "e\u0301",
               "\u1100\u1161\u11a8", "A\u030a", "\u212b", "\uff21\uff22", "ｶﾀｶﾅ", "\u2160", "\U0001d400",
               "a" + "\u00a0" * 5 + "b", "tab\tseparated\tvalues", "line\nbreaks\r\nhere", "   leading",
               "trailing   ", "``quoted''", "x-y-z", "--", "3-4", "__init__", "_", "___a", "a___b"]
    generators = []

    def ascii_sentence():
        return sentence(rng)

    def accents():
        s = sentence(rng)
        out = []
        for c in s:
            out.append(c)
            if c.isalpha() and rng.random() < 0.3:
                out.append(rng.choice(COMBINING))
        text = "".join(out)
        return unicodedata.normalize(rng.choice(["NFC", "NFD", "NFKC", "NFKD"]), text) if rng.random() < 0.5 else text

    def scripts():
        return "".join(random_char(rng) if rng.random() < 0.3 else rng.choice(WORDS) + " " for _ in range(rng.randint(1, 12)))

    def emoji():
        return " ".join(rng.choice(EMOJI + WORDS) for _ in range(rng.randint(1, 8)))

    def controls():
        s = list(sentence(rng))
        for _ in range(rng.randint(1, 5)):
            s.insert(rng.randint(0, len(s)), rng.choice(CONTROLS + NEWER))
        return "".join(s)

    def whitespace():
        return "".join(rng.choice(WORDS) + "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 4)))
                       for _ in range(rng.randint(1, 6)))

    def long_word():
        length = rng.choice([50, 99, 100, 101, 150, 300, 1000, 3000])
        alphabet = rng.choice(["abcdefghij", "aaaa", "ab", "éèê", "中文字", "xyz0123", "𝔘𝔫𝔦"])
        return "".join(rng.choice(alphabet) for _ in range(length))

    def specials():
        parts = []
        for _ in range(rng.randint(1, 6)):
            parts.append(rng.choice([rng.choice(SPECIALS), rng.choice(WORDS)]))
            parts.append(rng.choice(["", " ", "  ", "\t", ",", "x"]))
        return "".join(parts)

    def long_text():
        return sentence(rng, rng.randint(80, 400))

    def soup():
        return "".join(random_char(rng) for _ in range(rng.randint(1, 30)))

    generators = [ascii_sentence, accents, scripts, emoji, controls, whitespace, long_word, specials, long_text,
                  soup, soup]
    while len(strings) < count:
        strings.append(rng.choice(generators)())
    return strings


def ill_formed(rng):
    """Byte strings that are not valid UTF-8: stray continuation bytes, truncated sequences,
    overlong forms, surrogates, bytes past U+10FFFF, and a NUL."""
    pieces = [b"\x80", b"\xbf", b"\xc0\xaf", b"\xc2", b"\xe0\x80\x80", b"\xe2\x82", b"\xed\xa0\x80", b"\xf0\x9f\x98",
              b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfe", b"\xff", b"\x00", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80"]
    out = []
    for _ in range(120):
        data = b""
        for _ in range(rng.randint(1, 6)):
            data += rng.choice(pieces) if rng.random() < 0.6 else rng.choice(WORDS).encode() + b" "
        out.append(data)
    return out


def write_unicode8(path):
    """The ranges of code points that are Cf, Mn or P* (Python's unicodedata) and were assigned
    by Unicode 8.0 (Perl's Unicode::UCD ages): what the unicode_categories crate of `tokenizers`
    knows; and of the marks assigned by Unicode 9.0, what its normalization crate knows. The
    comparison script uses them to recognise where transformers.js (the JavaScript engine's current
    Unicode) must depart from Python."""
    import subprocess
    perl = 'use Unicode::UCD qw(prop_invmap); my ($l, $m) = prop_invmap("Age"); ' \
           'print "$l->[$_] $m->[$_]\\n" for 0 .. $#$l;'
    lines = subprocess.run(["perl", "-e", perl], capture_output=True, text=True, check=True).stdout.split()
    starts = [(int(lines[i]), lines[i + 1]) for i in range(0, len(lines), 2)]
    unicode8, marks9 = [], []

    def add(ranges, code):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])

    for index, (start, age) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else 0x110000
        if age in ("Unassigned", "NA"):
            continue
        version = tuple(int(x) for x in age.split(".")[:2])
        if version > (9, 0):
            continue
        for code in range(start, end):
            category = unicodedata.category(chr(code))
            if version <= (8, 0) and (category in ("Cf", "Mn") or category.startswith("P")):
                add(unicode8, code)
            if category.startswith("M"):
                add(marks9, code)
    with open(path, "w") as out:
        json.dump({"unicode8_cf_mn_p": unicode8, "unicode9_marks": marks9}, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("c_strings")
    parser.add_argument("reference_strings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=2200)
    parser.add_argument("--unicode8", help="also write the Unicode 8.0 Cf/Mn/P and 9.0 mark ranges (JSON) here")
    arguments = parser.parse_args()
    if arguments.unicode8:
        write_unicode8(arguments.unicode8)
    rng = random.Random(arguments.seed)
    texts = [s.encode("utf-8") for s in make(rng, arguments.count)] + ill_formed(rng)
    with open(arguments.c_strings, "w", encoding="ascii") as c_out, \
            open(arguments.reference_strings, "w", encoding="ascii") as reference_out:
        for data in texts:
            decoded = data.decode("utf-8", errors="replace")
            if decoded.encode("utf-8") != data or "\x00" in decoded:
                c_out.write("!hex:" + data.hex() + "\n")
            else:
                c_out.write(json.dumps(decoded) + "\n")
            reference_out.write(json.dumps(decoded) + "\n")


if __name__ == "__main__":
    main()
