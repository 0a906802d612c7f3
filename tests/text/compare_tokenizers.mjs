// Compares the C tokenizer (tests/text/tokenize_dump) id by id with two independent
// implementations on a generated tokenizer folder and ~2,300 generated strings (COUNT + 120 ill-formed byte strings), with and without
// truncation:
//   - the Rust `tokenizers` crate, the code under Python's `tokenizers` and transformers' fast
//     tokenizers (npm `tokenizers` 0.23.2: Hugging Face's own Node bindings), which the C code must
//     match on EVERY string: it is "Python's behaviour";
//   - transformers.js (npm @huggingface/transformers 4.3.1, tokenizers from its own
//     @huggingface/tokenizers), loading the local folder offline, which must match too except in
//     the documented cases below where transformers.js departs from Python; each such string must
//     fall in one of those cases, and the Rust ids are then the ones checked.
// Usage: node compare_tokenizers.mjs NODE_DIR PYTHON TESTS_DIR DUMP WORK_DIR KIND [MAX_LENGTH [COUNT]]
// Prints both id lists for every mismatch, and "N passed, N failed".
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [nodeDir, python, testsDir, dump, workDir, kind, maxLengthText, countText] = process.argv.slice(2);
const maxLength = Number(maxLengthText || 24);
const require = createRequire(path.join(nodeDir, "node_modules", "index.js"));
const { AutoTokenizer, env } = await import(require.resolve("@huggingface/transformers"));
const { Tokenizer: RustTokenizer } = require("tokenizers");

// The generated folder and strings (Python writes both; seeds differ per kind).
const folder = path.join(workDir, kind);
fs.rmSync(folder, { recursive: true, force: true });
const seed = String([...kind].reduce((sum, c) => sum + c.charCodeAt(0), 0));
execFileSync(python, [path.join(testsDir, "make_tokenizers.py"), kind, folder, "--seed", seed]);
const cStrings = path.join(workDir, `${kind}.c.txt`), referenceStrings = path.join(workDir, `${kind}.ref.txt`);
const unicode8Path = path.join(workDir, `${kind}.unicode8.json`);
execFileSync(python, [path.join(testsDir, "make_tokenizer_strings.py"), cStrings, referenceStrings, "--seed", seed,
  "--unicode8", unicode8Path, "--count", countText || "2200"]);
const texts = fs.readFileSync(referenceStrings, "utf8").split("\n").filter((line) => line.length).map((line) => JSON.parse(line));

function cIds(limit) {
  const output = execFileSync(dump, [path.join(folder, "tokenizer.json"), cStrings, String(limit)], {
    maxBuffer: 1 << 28, encoding: "utf8",
  });
  return output.split("\n").slice(0, texts.length).map((line) => (line.length ? line.split(" ").map(Number) : []));
}

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = workDir + path.sep;
// transformers.js 4.3.1 has no CharDelimiterSplit pre-tokenizer: bpe-options is checked against Rust
// alone (every string), and this script fails if transformers.js refuses any other kind.
const jsCannotLoad = { "bpe-options": "Unknown PreTokenizer type: CharDelimiterSplit" };
let js = null;
try {
  js = await AutoTokenizer.from_pretrained(kind);
} catch (error) {
  if (!jsCannotLoad[kind] || !String(error.message).includes(jsCannotLoad[kind])) throw error;
  console.log(`transformers.js cannot load ${kind} (${error.message}): compared with Rust tokenizers only`);
}
const rust = RustTokenizer.fromFile(path.join(folder, "tokenizer.json"));
const config = JSON.parse(fs.readFileSync(path.join(folder, "tokenizer.json"), "utf8"));

function jsIds(text, limit) {
  const options = limit ? { truncation: true, max_length: limit } : {};
  try {
    const ids = js(text, options).input_ids;
    return Array.from(ids.data, Number);
  } catch (error) {
    return null; // a departure must explain it (wordlevel_unknown)
  }
}

async function rustIdsAll(limit) {
  if (limit) rust.setTruncation(limit);
  else rust.disableTruncation();
  const encodings = await rust.encodeBatch(texts);
  return encodings.map((encoding) => Array.from(encoding.getIds()));
}

// ---- Where transformers.js departs from Python's tokenizers (each checked on the string) ----------
const departures = {
  // transformers.js 4.3.1's WordLevel has no unknown-token fallback: a word outside the vocabulary
  // becomes undefined and the encoding throws ("Cannot convert undefined to a BigInt").
  wordlevel_unknown: (text, t) => config.model.type === "WordLevel" && t === null,
  // transformers.js's Punctuation ignores "behavior" and isolates runs of punctuation
  // ([^P]+|[P]+), where Python splits every punctuation character with the behaviour
  // (wordpiece-mixed: MergedWithPrevious): any text with punctuation may depart.
  punctuation_behavior: (text) => hasPreTokenizer("Punctuation") && /[\p{P}$+<=>^`|~]/u.test(text.normalize("NFKD")),
  // transformers.js's Digits splits on \d, which is ASCII in JavaScript; Python splits on every
  // numeric character (Nd, Nl, No: Arabic-Indic digits, Roman numerals, superscripts).
  non_ascii_digits: (text) => hasPreTokenizer("Digits") && /[^\P{N}0-9]/u.test(text),
  // transformers.js keeps single_word but never reads it: "hello world" is split out of
  // "xhello worldx" too, where Python leaves it to the model.
  single_word_ignored: (text) => config.added_tokens.some((token) => token.single_word && text.includes(token.content)),
  // transformers.js's Whitespace pre-tokenizer runs /\w+|[^\w\s]+/u, whose \w is ASCII in
  // JavaScript, where the Rust regex crate's \w is Unicode (letters, marks, digits, joiners): any
  // non-ASCII character may split differently.
  whitespace_ascii_word: (text) => hasPreTokenizer("Whitespace") && /[^\x00-\x7f]/u.test(text),
  // U+0085 (NEXT LINE) is \s for Oniguruma (the GPT-2 and CLIP patterns in Python) but not for
  // JavaScript's regular expressions.
  next_line_space: (text) => text.includes("\u0085") && /ByteLevel|Split|Replace/.test(JSON.stringify([config.normalizer, config.pre_tokenizer])),
  // transformers.js's character classes come from the JavaScript engine's Unicode (15.1 in Node 20),
  // while tokenizers' BERT normalizer, BertPreTokenizer and Punctuation read the unicode_categories
  // crate's Unicode 8.0 tables (and C follows the crate): Cf/Mn/P characters added since 8.0 depart.
  newer_than_unicode8: (text) => newerThanUnicode8(text),
  // transformers.js's BertNormalizer looks for CJK ideographs one UTF-16 unit at a time, so the
  // ideographs of the supplementary planes (U+20000-U+2FA1F) are not surrounded with spaces.
  supplementary_cjk: (text) => usesBertNormalizer() && /[\u{20000}-\u{2FA1F}]/u.test(text),
  // transformers.js lowercases with String.toLowerCase, whose final-sigma rule writes a capital
  // sigma at the end of a word as "ς"; Rust lowercases character by character ("σ").
  final_sigma: (text) => lowercases() && text.toLowerCase() !== [...text].map((c) => c.toLowerCase()).join(""),
  // The normalization crate under tokenizers has Unicode 9.0 tables: StripAccents keeps (and NF
  // forms leave alone) the marks added since, which JavaScript's \p{M} and normalize() know.
  marks_newer_than_unicode9: (text) => /StripAccents|NF/.test(JSON.stringify(config.normalizer)) && newerMarks(text),
  // Metaspace prepend_scheme "first": tokenizers prepends only when the normalized text still starts
  // where the input starts (its alignments); transformers.js prepends to its first piece even when
  // a normalizer removed or replaced the leading characters (whitespace runs, tabs, marks).
  prepend_first_after_normalizer: (text) => JSON.stringify(config.pre_tokenizer).includes('"prepend_scheme":"first"') &&
    /^(\s|\p{M})/u.test(text.normalize("NFKC")),
  // Unigram segmentations with equal total scores: tokenizers keeps one (see sentencepiece.h),
  // transformers.js may keep another; both sum to the same score, which is checked here.
  unigram_equal_score_tie: (text, t, r) => config.model.type === "Unigram" && t !== null &&
    Math.abs(unigramScore(t) - unigramScore(r)) < 1e-9,
  // When truncating, transformers.js cuts the whole post-processed sequence at max_length, dropping
  // the final special token(s) ([SEP], </s>, <|endoftext|>); Python cuts the content and keeps them.
  truncation_drops_specials: (text, t, r, limit) => limit > 0 && t !== null && r.length === limit && t.length === limit &&
    sameIds(t.slice(0, limit - 1), r.slice(0, limit - 1)),
};

function hasPreTokenizer(type) {
  const p = config.pre_tokenizer;
  return !!p && (p.type === type || (p.type === "Sequence" && p.pretokenizers.some((q) => q.type === type)));
}

function usesBertNormalizer() {
  const n = config.normalizer;
  return n && n.type === "BertNormalizer" && n.handle_chinese_chars;
}

function lowercases() {
  const n = config.normalizer;
  if (!n) return false;
  if (n.type === "BertNormalizer") return n.lowercase;
  return n.type === "Sequence" && n.normalizers.some((m) => m.type === "Lowercase");
}

function newerThanUnicode8(text) {
  // The characters of tests/text/make_tokenizer_strings.py's NEWER list, plus any code point whose
  // category the crate cannot know: checked with the same JavaScript regexes as transformers.js,
  // restricted to the kinds whose stages read the crate.
  if (!usesBertNormalizer() && !hasPreTokenizer("BertPreTokenizer") && !hasPreTokenizer("Punctuation")) return false;
  for (const c of text) {
    const code = c.codePointAt(0);
    if (/[\p{Cf}\p{Mn}\p{P}]/u.test(c) && !UNICODE8_CF_MN_P(code)) return true;
  }
  return false;
}

// The Cf, Mn and P characters of Unicode 8.0, from Python's unicodedata and Perl's Unicode::UCD ages
// (make_tokenizer_strings.py --unicode8), not from the C side's table.
const { unicode8_cf_mn_p: unicode8, unicode9_marks: marks9 } = JSON.parse(fs.readFileSync(unicode8Path, "utf8"));
function inRanges(ranges, code) {
  let low = 0, high = ranges.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (code < ranges[middle][0]) high = middle;
    else if (code > ranges[middle][1]) low = middle + 1;
    else return true;
  }
  return false;
}
const UNICODE8_CF_MN_P = (code) => inRanges(unicode8, code);

function newerMarks(text) {
  for (const c of text) if (/\p{M}/u.test(c) && !inRanges(marks9, c.codePointAt(0))) return true;
  return false;
}

function unigramScore(ids) {
  const vocab = config.model.vocab;
  return ids.reduce((sum, id) => sum + (id < vocab.length ? vocab[id][1] : 0), 0);
}

function sameIds(a, b) {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

let passed = 0, failed = 0;
const departed = {};
for (const limit of [0, maxLength]) {
  const c = cIds(limit), rustAll = await rustIdsAll(limit);
  for (let i = 0; i < texts.length; ++i) {
    const r = rustAll[i];
    if (!js) {
      ++passed;
      continue;
    }
    const t = jsIds(texts[i], limit);
    const label = `${kind} string ${i}${limit ? ` max_length ${limit}` : ""} ${JSON.stringify(texts[i]).slice(0, 120)}`;
    if (!sameIds(c[i], r)) {
      console.log(`MISMATCH with Rust tokenizers: ${label}\n  C:    ${c[i].join(" ")}\n  Rust: ${r.join(" ")}`);
      ++failed;
      continue;
    }
    if (t === null || !sameIds(c[i], t)) {
      const reason = Object.keys(departures).find((name) => departures[name](texts[i], t, r, limit));
      if (!reason) {
        console.log(`MISMATCH with transformers.js (C agrees with Rust): ${label}\n  C/Rust: ${c[i].join(" ")}\n  js:     ${t === null ? "(threw)" : t.join(" ")}`);
        ++failed;
        continue;
      }
      departed[reason] = (departed[reason] || 0) + 1;
    }
    ++passed;
  }
}
console.log(`${kind}: ${texts.length} strings x 2 (no limit, max_length ${maxLength}); transformers.js departures (Python followed): ${JSON.stringify(departed)}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
