// The official `openai` npm package (installed from npm into the build folder by npm_install.sh)
// against `uform serve`: embeddings.create with its default encoding (the client asks for base64
// and decodes it itself), "float", "base64" and `dimensions`, one string and many, a data: URI
// input, models.list, and its error classes for a wrong model and a wrong key. Every vector is
// compared with `uform encode`'s on the same checkpoint and compute: the same float32 bits, and a
// `dimensions` prefix within 2 float32 steps (test_serve_api.py says why), after the row count.
//
// Usage: node test_serve_openai.mjs UFORM CHECKPOINT FIXTURES NODE_DIR WORK
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Tally, cosine, floatSteps, readNpy, sameFloats, skip, startServer } from "./serve_node.mjs";

const [uform, checkpoint, fixtures, nodeDir, work] = process.argv.slice(2);
let OpenAI;
try {
  const required = createRequire(path.join(path.resolve(nodeDir), "package.json"))("openai");
  OpenAI = required.OpenAI || required.default;
} catch (error) {
  skip(`the openai npm package in ${nodeDir} (the fixture serve_npm installs it): ${error.message}`);
}
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const t = new Tally();

// `uform encode` to .npy (float32 bits; its JSON lines print 7 digits, which do not give them back).
function encode(modality, items, dims) {
  const out = path.join(work, `reference-${modality}-${dims || "full"}.npy`);
  const args = ["encode", checkpoint, `--${modality}`, ...items, "--out", out];
  if (dims) args.push("--dims", String(dims));
  execFileSync(uform, args, { stdio: ["ignore", "ignore", "ignore"] });
  return readNpy(readFileSync(out));
}

function fromBase64(text) {
  const bytes = Buffer.from(text, "base64");
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

const texts = ["a photo of a cat", "a dog on a beach", "ünïcödé ✓", "a red star at the top of the picture"];
const references = encode("text", texts);
const server = await startServer(uform, checkpoint, ["--api-key", "sk-uform-test"]);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: "sk-uform-test", maxRetries: 0 });
try {
  // The client's default: it asks for base64 and hands back float arrays.
  let answer = await client.embeddings.create({ model: "tiny", input: texts });
  t.check(answer.object === "list" && answer.model === "tiny" && answer.data.length === texts.length, "the default answer's shape");
  answer.data.forEach((row, i) => {
    t.check(row.index === i && row.embedding.length === 64 && sameFloats(row.embedding, references[i]),
      `default encoding, text ${i}: not uform encode's bits (cosine ${cosine(row.embedding, references[i])})`);
  });
  const tokens = texts.reduce((sum, text) => sum + Math.min(Buffer.byteLength(text), 64) + 1, 0);
  t.check(answer.usage.prompt_tokens === tokens && answer.usage.total_tokens === tokens, `usage ${JSON.stringify(answer.usage)}`);

  answer = await client.embeddings.create({ model: "tiny", input: texts, encoding_format: "float" });
  t.check(answer.data.length === texts.length, `float: ${answer.data.length} rows for ${texts.length} texts`);
  answer.data.forEach((row, i) => {
    t.check(Array.isArray(row.embedding) && sameFloats(row.embedding, references[i]), `float, text ${i}: not uform encode's bits`);
  });

  answer = await client.embeddings.create({ model: "tiny", input: texts, encoding_format: "base64" });
  t.check(answer.data.length === texts.length, `base64: ${answer.data.length} rows for ${texts.length} texts`);
  answer.data.forEach((row, i) => {
    t.check(typeof row.embedding === "string" && sameFloats(fromBase64(row.embedding), references[i]), `base64, text ${i}: not uform encode's bits`);
  });

  for (const dims of [16, 32]) {
    const prefix = encode("text", texts, dims);
    for (const encoding_format of [undefined, "float", "base64"]) {
      answer = await client.embeddings.create({ model: "tiny", input: texts, dimensions: dims, encoding_format });
      t.check(answer.data.length === texts.length, `dimensions ${dims}: ${answer.data.length} rows for ${texts.length} texts`);
      answer.data.forEach((row, i) => {
        const vector = typeof row.embedding === "string" ? fromBase64(row.embedding) : row.embedding;
        const steps = floatSteps(vector, prefix[i]);
        t.check(vector.length === dims && steps <= 2, `dimensions ${dims} ${encoding_format || "default"}, text ${i}: ${steps} float32 steps`);
      });
    }
  }

  answer = await client.embeddings.create({ model: "tiny", input: "a photo of a cat" });
  t.check(answer.data.length === 1 && sameFloats(answer.data[0].embedding, references[0]), "one string: uform encode's bits");

  // Beyond OpenAI: a picture as a data: URI, through the same client.
  const picture = path.join(fixtures, "baseline.jpg");
  const pictureReference = encode("image", [picture])[0];
  const uri = "data:image/jpeg;base64," + readFileSync(picture).toString("base64");
  answer = await client.embeddings.create({ model: "tiny", input: [{ image: uri }, "a photo of a cat"] });
  t.check(answer.data.length === 2, `a picture and a text: ${answer.data.length} rows`);
  t.check(sameFloats(answer.data[0]?.embedding, pictureReference), "a picture as a data: URI: uform encode's bits");
  t.check(sameFloats(answer.data[1]?.embedding, references[0]), "a text after the picture: uform encode's bits");

  const models = await client.models.list();
  const listed = [];
  for await (const model of models) listed.push(model.id);
  t.check(listed.length === 1 && listed[0] === "tiny", `models.list: ${listed}`);

  try {
    await client.embeddings.create({ model: "text-embedding-3-small", input: "a" });
    t.check(false, "another model should throw");
  } catch (error) {
    t.check(error instanceof OpenAI.NotFoundError && error.status === 404 && error.code === "model_not_found",
      `another model: ${error.constructor.name} ${error.status} ${error.code}`);
  }
  try {
    await client.embeddings.create({ model: "tiny", input: "a", dimensions: 17 });
    t.check(false, "dimensions 17 should throw");
  } catch (error) {
    t.check(error instanceof OpenAI.BadRequestError && error.code === "invalid_dimensions", `dimensions 17: ${error.status} ${error.code}`);
  }
  const stranger = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
  try {
    await stranger.embeddings.create({ model: "tiny", input: "a" });
    t.check(false, "a wrong key should throw");
  } catch (error) {
    t.check(error instanceof OpenAI.AuthenticationError && error.status === 401, `a wrong key: ${error.constructor.name} ${error.status}`);
  }
} catch (error) {
  t.check(false, `unexpected: ${error.stack || error}`);
} finally {
  const code = await server.stop();
  t.check(code === 0, `the server's exit status ${code}`);
}
process.exit(t.finish());
