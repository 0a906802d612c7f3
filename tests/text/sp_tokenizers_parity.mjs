// The tokenizer.json side of src/text/sentencepiece.h against Hugging Face's Rust `tokenizers`
// (npm `tokenizers`, its official Node bindings): on tokenizer.json files that sp_make_models.py
// converts from trained SentencePiece models (XLM-R with the nmt_nfkc charsmap, T5 with identity
// rules and byte fallback, T5 with nmt_nfkc, byte fallback and user-defined symbols), and the same
// 2,200 strings as sp_parity.py:
//   - the Precompiled normalizer alone: sp_tool precompiled vs precompiled(bytes).normalizeString;
//   - the whole converted pipeline without added tokens or post-processing (Precompiled, Strip,
//     Replace, Metaspace, Unigram): sp_tool json vs Tokenizer.encode(addSpecialTokens: false) on a
//     copy of the file whose "added_tokens" is empty, so both sides see the same Unigram matching.
// Usage: node sp_tokenizers_parity.mjs NODE_DIR PYTHON TESTS_DIR SP_TOOL WORK_DIR
// Prints both sides of every mismatch (10 per comparison) and "N passed, N failed".
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [nodeDir, python, testsDir, tool, workDir] = process.argv.slice(2);
const require = createRequire(path.join(nodeDir, "node_modules", "index.js"));
const { Tokenizer, precompiled } = require("tokenizers");

fs.mkdirSync(workDir, { recursive: true });
const stringsPath = path.join(workDir, "strings.json");
execFileSync(python, ["-c",
  "import json, sys; sys.path.insert(0, sys.argv[1]); import sp_parity; " +
  "json.dump(sp_parity.make_strings(), open(sys.argv[2], 'w', encoding='utf-8'), ensure_ascii=False)",
  testsDir, stringsPath]);
const strings = JSON.parse(fs.readFileSync(stringsPath, "utf8"));

const folders = [
  ["xlm-roberta nmt_nfkc", ["xlm-roberta", path.join(workDir, "xlmr"), "--seed", "0"]],
  ["t5 identity byte_fallback", ["t5", path.join(workDir, "t5"), "--seed", "1", "--normalization", "identity", "--byte-fallback"]],
  ["t5 nmt_nfkc byte_fallback user symbols", ["t5", path.join(workDir, "t5u"), "--seed", "3", "--byte-fallback", "--user-symbols", "<sep>,[MASK],ab"]],
];

let passed = 0, failed = 0;
function compare(label, ours, theirs) {
  let shown = 0;
  for (let i = 0; i < strings.length; ++i) {
    const a = JSON.stringify(ours[i]), b = JSON.stringify(theirs[i]);
    if (a === b) { ++passed; continue; }
    ++failed;
    if (shown++ < 10)
      console.log(`${label}: ${JSON.stringify(strings[i].slice(0, 80))}:\n  engine    ${a.slice(0, 300)}\n  tokenizers ${b.slice(0, 300)}`);
  }
  console.log(shown ? `${label}: ${shown} of ${strings.length} strings differ` : `${label}: ${strings.length} strings agree`);
}

function runTool(mode, file) {
  return JSON.parse(execFileSync(tool, [mode, file, stringsPath], { maxBuffer: 1 << 28 }).toString("utf8"));
}

for (const [label, args] of folders) {
  execFileSync(python, [path.join(testsDir, "sp_make_models.py"), ...args]);
  const json = JSON.parse(fs.readFileSync(path.join(args[1], "tokenizer.json"), "utf8"));
  json.added_tokens = [];
  json.post_processor = null;
  const stripped = path.join(args[1], "tokenizer.bare.json");
  fs.writeFileSync(stripped, JSON.stringify(json));

  const entry = (json.normalizer.normalizers || []).find((n) => n.type === "Precompiled");
  if (entry) {
    const normalizer = precompiled(Array.from(Buffer.from(entry.precompiled_charsmap, "base64")));
    compare(`${label}: Precompiled`, runTool("precompiled", stripped), strings.map((s) => normalizer.normalizeString(s)));
  }
  const tokenizer = Tokenizer.fromFile(stripped);
  const theirs = [];
  for (const s of strings) theirs.push((await tokenizer.encode(s, null, { addSpecialTokens: false })).getIds());
  compare(`${label}: pipeline ids`, runTool("json", stripped), theirs);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
