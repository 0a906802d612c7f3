// What the Node tests of `uform serve` share: a server in a child process on a free port, a tally
// printing "N passed, N failed", and skipping (exit 77) only outside CI when a tool is missing.
import { spawn } from "node:child_process";

export class Tally {
  constructor() { this.passed = 0; this.failed = 0; }
  check(condition, what) {
    if (condition) this.passed += 1;
    else { this.failed += 1; console.error(`FAILED: ${what}`); }
    return condition;
  }
  finish() {
    console.log(`${this.passed} passed, ${this.failed} failed`);
    return this.failed === 0 && this.passed > 0 ? 0 : 1;
  }
}

// A dependency the install script installs is missing: exits 77 ("skipped"), or 1 under CI=true,
// where a skip would hide a broken install step (as tests/common/skip.h and skip.sh do).
export function skip(why) {
  console.log(`skipped: ${why} (scripts/install-deps.sh installs it)`);
  if (process.env.CI === "true" || process.env.CI === "1") {
    console.log("CI=true: a missing dependency fails the test instead of skipping it");
    process.exit(1);
  }
  process.exit(77);
}

// Starts `uform serve CHECKPOINT --port 0 ...flags`; resolves once it says it is ready.
export function startServer(uform, checkpoint, flags = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(uform, ["serve", checkpoint, "--port", "0", ...flags], { stdio: ["ignore", "inherit", "pipe"] });
    const server = { child, port: null, lines: "" };
    const timer = setTimeout(() => reject(new Error("the server did not start: " + server.lines)), 120000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text) => {
      server.lines += text;
      const port = /listening on http:\/\/\S+?:(\d+)\//.exec(server.lines);
      if (port) server.port = Number(port[1]);
      if (/ready in/.test(server.lines) && server.port) { clearTimeout(timer); resolve(server); }
    });
    child.on("exit", (code) => { server.code = code; clearTimeout(timer); reject(new Error("the server exited: " + server.lines)); });
    server.stop = () => new Promise((done) => {
      if (server.code !== undefined) { done(server.code); return; }
      child.removeAllListeners("exit");
      child.on("exit", (code) => done(code));
      child.kill("SIGTERM");
    });
  });
}

// The cosine of two vectors; NaN (which fails every >= check) for different lengths or empty ones.
export function cosine(a, b) {
  if (!a || !b || a.length === 0 || a.length !== b.length) return NaN;
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return dot / Math.sqrt(na * nb);
}

// Whether `vector` (numbers from JSON, whose nine significant digits give every float32 back exactly,
// or a Float32Array) holds `reference`'s float32 values bit for bit, and as many.
export function sameFloats(vector, reference) {
  if (!vector || !reference || vector.length === 0 || vector.length !== reference.length) return false;
  for (let i = 0; i < vector.length; i++) if (Math.fround(vector[i]) !== reference[i]) return false;
  return true;
}

// The largest difference in float32 steps of [0.5, 1) (2^-24); Infinity for different lengths.
export function floatSteps(vector, reference) {
  if (!vector || !reference || vector.length === 0 || vector.length !== reference.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < vector.length; i++) worst = Math.max(worst, Math.abs(vector[i] - reference[i]));
  return worst / 2 ** -24;
}

// The rows of a 2-D little-endian float32 .npy file (as `uform encode --out X.npy` writes it), each a
// Float32Array.
export function readNpy(bytes) {
  const magic = bytes.subarray(0, 6).toString("latin1");
  if (magic !== "\x93NUMPY") throw new Error("not a .npy file");
  const major = bytes[6], headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLength, header = bytes.subarray(major === 1 ? 10 : 12, start).toString("latin1");
  if (!header.includes("'descr': '<f4'") || !header.includes("'fortran_order': False")) throw new Error(`not C-order float32: ${header}`);
  const shape = /'shape': \((\d+), (\d+)\)/.exec(header);
  if (!shape) throw new Error(`not 2-D: ${header}`);
  const rows = Number(shape[1]), columns = Number(shape[2]);
  const values = new Float32Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + start + rows * columns * 4));
  return Array.from({ length: rows }, (_, r) => values.subarray(r * columns, (r + 1) * columns));
}
