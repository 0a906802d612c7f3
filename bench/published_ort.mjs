// ONNX Runtime peer of bench/bench_published.c: the graphs of bench/published_export.py run by
// onnxruntime-node, with transformers.js's tokenizer and image processor reading the same published
// folder, as a JavaScript user runs a model; serves timing requests on stdin.
//
//   node bench/published_ort.mjs KIND FOLDER INPUTS ONNX_DIR --modules DIR [--threads 2]
//     KIND      image (CLIP vision tower) or text (sentence-transformers BERT)
//     INPUTS    a folder of .jpg files (image) or a file of sentences, one a line (text)
//     ONNX_DIR  model.onnx (F32) and, when written, model_int8.onnx (dynamic INT8)
//     --modules a folder whose node_modules holds onnxruntime-node and @huggingface/transformers
//               (bench/published_npm_install.sh installs the pinned versions there)
//
// The protocol is bench/published_torch.py's: "modes", "run MODE BATCH SECONDS", "embed MODE PATH",
// "tokens", "quit"; one JSON line answers each. Modes: f32 (model.onnx) and int8 (model_int8.onnx).
//
// One call, timed as a whole: images: RawImage.fromBlob over the JPEG bytes held in memory (sharp
// decodes), the folder's processor (AutoImageProcessor: resize, centre crop, rescale, normalise),
// then session.run. Texts: the folder's tokenizer (AutoTokenizer over tokenizer.json) with padding
// to the longest text and truncation at sentence-transformers' max_seq_length, then session.run.
// Sessions: graphOptimizationLevel "all", intraOpNumThreads --threads, interOpNumThreads 1,
// sequential execution, the CPU memory arena on (ORT's defaults otherwise, spinning included).
import { createRequire } from "node:module";
import { readFileSync, readdirSync, existsSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
};
const threads = Number(option("--threads", "2"));
const modules = resolve(option("--modules", "."));
const [kind, folder, inputs, onnxDir] = args;
if (!["image", "text"].includes(kind) || !folder || !inputs || !onnxDir) {
  console.error("usage: node published_ort.mjs image|text FOLDER INPUTS ONNX_DIR --modules DIR [--threads N]");
  process.exit(2);
}

const require = createRequire(join(modules, "package.json"));
const ort = require("onnxruntime-node");
// The package's CommonJS build (what require.resolve finds) arrives under `default` when imported.
const loaded = await import(pathToFileURL(require.resolve("@huggingface/transformers")).href);
const transformers = loaded.env ? loaded : loaded.default;
const { env, AutoTokenizer, AutoImageProcessor, RawImage } = transformers;
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = dirname(resolve(folder));
const modelId = basename(resolve(folder));

const readJson = (name, fallback) => {
  const path = join(folder, name);
  return existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : fallback;
};

let items, tokenizer, processor, maxLength;
if (kind === "image") {
  items = readdirSync(inputs).filter((name) => name.endsWith(".jpg")).sort().map((name) => readFileSync(join(inputs, name)));
  processor = await AutoImageProcessor.from_pretrained(modelId);
  // A legacy integer "size" (openai/clip-vit-base-patch32's CLIPFeatureExtractor) means the shortest
  // edge in transformers' processor; transformers.js also caps the longest edge at it (640 x 480 ->
  // 224 x 168, then the crop pads), a different picture. Set as transformers reads it, so both
  // sides resize to 298 x 224 and crop the same centre.
  if (Number.isInteger(processor.size)) processor.size = { shortest_edge: processor.size };
} else {
  items = readFileSync(inputs, "utf8").split("\n").filter((line) => line.trim().length > 0);
  tokenizer = await AutoTokenizer.from_pretrained(modelId);
  maxLength = readJson("sentence_bert_config.json", {}).max_seq_length ?? readJson("tokenizer_config.json", {}).model_max_length ?? 512;
}

const files = { f32: join(onnxDir, "model.onnx"), int8: join(onnxDir, "model_int8.onnx") };
const modes = Object.keys(files).filter((mode) => existsSync(files[mode]));
const sessions = {};
async function session(mode) {
  if (!sessions[mode]) {
    sessions[mode] = await ort.InferenceSession.create(files[mode], {
      graphOptimizationLevel: "all",
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: "sequential",
      enableCpuMemArena: true,
    });
  }
  return sessions[mode];
}

// transformers.js tensors carry their own onnxruntime-common class; the feeds are re-made here with
// the session's, over the same typed arrays (no copy).
const feed = (tensor) => new ort.Tensor(tensor.type, tensor.data, tensor.dims);

async function prepare(chunk) {
  if (kind === "image") {
    const images = await Promise.all(chunk.map((bytes) => RawImage.fromBlob(new Blob([bytes]))));
    const { pixel_values } = await processor(images);
    return { pixel_values: feed(pixel_values) };
  }
  const encoded = tokenizer(chunk, { padding: true, truncation: true, max_length: maxLength });
  return { input_ids: feed(encoded.input_ids), attention_mask: feed(encoded.attention_mask) };
}

async function call(run, chunk) {
  const start = performance.now();
  const feeds = await prepare(chunk);
  const prepared = performance.now();
  const outputs = await run.run(feeds);
  return { embeddings: outputs.embeddings, prep: (prepared - start) / 1e3 };
}

const warm = new Set();
async function timed(mode, batch, seconds) {
  const run = await session(mode);
  const chunks = [];
  for (let i = 0; i < items.length; i += batch) chunks.push(items.slice(i, i + batch));
  if (!warm.has(`${mode}/${batch}`)) {
    for (const chunk of chunks.slice(0, 2)) await call(run, chunk);
    warm.add(`${mode}/${batch}`);
  }
  let calls = 0, prep = 0, count = 0;
  const start = performance.now();
  while (calls === 0 || performance.now() - start < seconds * 1e3) {
    const chunk = chunks[calls % chunks.length];
    prep += (await call(run, chunk)).prep;
    calls += 1;
    count += chunk.length;
  }
  const elapsed = (performance.now() - start) / 1e3;
  return { mode, batch, items_per_second: count / elapsed, calls, seconds: elapsed, prep_seconds: prep };
}

async function embed(mode, path) {
  const { embeddings } = await call(await session(mode), items);
  writeFileSync(path, Buffer.from(new Float32Array(embeddings.data).buffer));
  return { mode, rows: embeddings.dims[0], columns: embeddings.dims[1] };
}

function tokens() {
  return { tokens: items.map((text) => tokenizer(text, { truncation: true, max_length: maxLength }).input_ids.dims[1]) };
}

// Versions from the installed package.json files (the packages do not export them).
const installed = (name) => JSON.parse(readFileSync(join(modules, "node_modules", name, "package.json"), "utf8")).version;
const version = installed("onnxruntime-node");
const tjsVersion = installed("@huggingface/transformers");
console.log(JSON.stringify({ ready: true, onnxruntime: version, transformers: tjsVersion, items: items.length, modes }));
const lines = createInterface({ input: process.stdin, terminal: false });
for await (const line of lines) {
  const words = line.trim().split(/\s+/);
  if (words[0] === "") continue;
  if (words[0] === "quit") break;
  let answer;
  try {
    if (words[0] === "modes") answer = { modes };
    else if (words[0] === "run" && words.length === 4 && modes.includes(words[1]))
      answer = await timed(words[1], Number(words[2]), Number(words[3]));
    else if (words[0] === "embed" && words.length === 3 && modes.includes(words[1])) answer = await embed(words[1], words[2]);
    else if (words[0] === "tokens" && kind === "text") answer = tokens();
    else answer = { error: `unknown request: ${line.trim()}` };
  } catch (error) {
    answer = { error: String(error && error.message ? error.message : error) };
  }
  console.log(JSON.stringify(answer));
}
process.exit(0);
