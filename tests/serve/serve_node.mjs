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

export function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return dot / Math.sqrt(na * nb);
}
