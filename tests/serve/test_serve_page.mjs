// The search page of `uform serve` in Debian's headless Chromium, driven through the DevTools
// protocol over --remote-debugging-pipe (no WebSocket library, no downloaded browser): load `/`,
// type a query and press Enter, see result tiles whose pictures loaded from /media; drop a picture
// file on the drop zone (Input.dispatchDragEvent, a real drop), see it find itself first; take a
// screenshot of each under WORK. The corpus is the media fixtures: pictures, recordings, clips.
//
// Usage: node test_serve_page.mjs UFORM CHECKPOINT FIXTURES WORK
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Tally, skip, startServer } from "./serve_node.mjs";

const [uform, checkpoint, fixtures, work] = process.argv.slice(2);
const browserPath = process.env.UFORM_CHROMIUM || "/usr/bin/chromium";
if (!existsSync(browserPath)) skip(`Debian's chromium (${browserPath})`);
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const t = new Tally();

// The corpus and its index.
const corpus = path.join(work, "corpus");
mkdirSync(corpus);
const files = ["baseline.jpg", "rgb8.png", "grey.png", "quadrants.gif", "lossy.webp", "palette.png", "progressive.jpg",
  "pcm16.wav", "stereo.flac", "counter.mp4", "counter.webm"];
for (const name of files) copyFileSync(path.join(fixtures, name), path.join(corpus, name));
writeFileSync(path.join(corpus, "caption.txt"), "a photo of a cat");
const index = path.join(work, "corpus.index");
execFileSync(uform, ["index", checkpoint, corpus, "--out", index, "--quiet"], { stdio: "inherit" });

// A minimal DevTools client over the pipe: fd 3 carries commands to the browser, fd 4 its replies,
// each message a JSON text ended by a NUL byte.
class Browser {
  constructor() {
    this.profile = mkdtempSync(path.join(os.tmpdir(), "uform-chromium-"));
    this.child = spawn(browserPath, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", "--remote-debugging-pipe",
      `--user-data-dir=${this.profile}`, "--window-size=1280,900", "about:blank"],
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
    this.log = "";
    this.child.stderr.on("data", (data) => { this.log += data; });
    this.next = 1;
    this.pending = new Map();
    this.listeners = [];
    let buffer = Buffer.alloc(0);
    this.child.stdio[4].on("data", (data) => {
      buffer = Buffer.concat([buffer, data]);
      let end;
      while ((end = buffer.indexOf(0)) >= 0) {
        const message = JSON.parse(buffer.subarray(0, end).toString("utf8"));
        buffer = buffer.subarray(end + 1);
        if (message.id && this.pending.has(message.id)) {
          const { resolve, reject } = this.pending.get(message.id);
          this.pending.delete(message.id);
          if (message.error) reject(new Error(`${message.error.message} (${message.error.code})`));
          else resolve(message.result);
        } else if (message.method) {
          for (const listener of this.listeners) listener(message);
        }
      }
    });
  }
  send(method, params = {}, sessionId) {
    const id = this.next++;
    const message = { id, method, params };
    if (sessionId) message.sessionId = sessionId;
    this.child.stdio[3].write(JSON.stringify(message) + "\0");
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      setTimeout(() => { if (this.pending.delete(id)) reject(new Error(`${method} timed out`)); }, 60000);
    });
  }
  waitFor(method, sessionId, seconds = 60) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${method} within ${seconds} s`)), seconds * 1000);
      const listener = (message) => {
        if (message.method === method && (!sessionId || message.sessionId === sessionId)) {
          clearTimeout(timer);
          this.listeners = this.listeners.filter((l) => l !== listener);
          resolve(message.params);
        }
      };
      this.listeners.push(listener);
    });
  }
  async close() {
    try { await this.send("Browser.close"); } catch { /* it may be gone */ }
    await new Promise((resolve) => { if (this.child.exitCode !== null) resolve(); else this.child.on("exit", resolve); setTimeout(resolve, 5000); });
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
    rmSync(this.profile, { recursive: true, force: true });
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const server = await startServer(uform, checkpoint, ["--index", index]);
const browser = new Browser();
try {
  const { targetId } = await browser.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await browser.send("Target.attachToTarget", { targetId, flatten: true });
  const page = (method, params) => browser.send(method, params, sessionId);
  const evaluate = async (expression) => {
    const { result, exceptionDetails } = await page("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
    if (exceptionDetails) throw new Error(`${expression}: ${exceptionDetails.text} ${JSON.stringify(exceptionDetails.exception)}`);
    return result.value;
  };
  const until = async (expression, seconds = 30) => {
    const deadline = Date.now() + seconds * 1000;
    while (Date.now() < deadline) {
      if (await evaluate(expression)) return true;
      await sleep(100);
    }
    return false;
  };
  // A screenshot, written to WORK/name; checked to be a PNG of the window's size with more in it
  // than a blank page's few kilobytes (a white 1280 x 900 PNG is ~5 KB; these measured ~61 KB).
  const screenshot = async (name) => {
    const { data } = await page("Page.captureScreenshot", { format: "png" });
    const bytes = Buffer.from(data, "base64"), file = path.join(work, name);
    writeFileSync(file, bytes);
    const png = bytes.length > 24 && bytes.subarray(1, 4).toString("latin1") === "PNG" && bytes.subarray(12, 16).toString("latin1") === "IHDR";
    const size = png ? `${bytes.readUInt32BE(16)} x ${bytes.readUInt32BE(20)}` : "not a PNG";
    t.check(png && size === "1280 x 900" && bytes.length > 30000, `a screenshot of the page: ${file}, ${size}, ${bytes.length} bytes`);
    return file;
  };
  // Every tile of `kind` shows its media from /media, and there are `count` such tiles.
  const mediaShown = (kind, count) =>
    `(() => { const media = [...document.querySelectorAll('#results .tile.${kind} img')];` +
    ` return media.length === ${count} && media.every(i => i.complete && i.naturalWidth > 0 && i.src.includes('/media/')); })()`;
  const pictures = files.filter((name) => /\.(jpg|png|gif|webp)$/.test(name)).length;
  await page("Page.enable");
  await page("Runtime.enable");
  await page("Emulation.setDeviceMetricsOverride", { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });
  const loaded = browser.waitFor("Page.loadEventFired", sessionId);
  await page("Page.navigate", { url: `http://127.0.0.1:${server.port}/` });
  await loaded;
  t.check(await evaluate("document.title") === "UForm search", "the page loads");
  t.check(await until("document.getElementById('model').textContent.includes('items indexed')"), "the page describes the model and index");

  // Type a query and press Enter.
  await evaluate("document.getElementById('query').focus()");
  for (const character of "a photo of a cat") {
    await page("Input.dispatchKeyEvent", { type: "keyDown", text: character, key: character, unmodifiedText: character });
    await page("Input.dispatchKeyEvent", { type: "keyUp", key: character });
  }
  t.check(await evaluate("document.getElementById('query').value") === "a photo of a cat", "the query is typed");
  await page("Input.dispatchKeyEvent", { type: "keyDown", key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, text: "\r" });
  await page("Input.dispatchKeyEvent", { type: "keyUp", key: "Enter", code: "Enter", windowsVirtualKeyCode: 13 });
  t.check(await until("document.querySelectorAll('#results .tile').length > 0"), "result tiles after the query");
  const tiles = await evaluate("[...document.querySelectorAll('#results .tile')].map(t => ({kind: t.className, item: t.dataset.item, caption: t.querySelector('.caption').textContent, score: t.querySelector('.score').textContent}))");
  t.check(tiles.length === files.length + 1, `${tiles.length} tiles for ${files.length + 1} items`);
  t.check(tiles[0].caption === "caption" && tiles[0].kind.includes("text"), `the caption finds itself first: ${JSON.stringify(tiles[0])}`);
  t.check(new Set(tiles.map((tile) => tile.kind)).size >= 4, `tiles of every modality: ${tiles.map((tile) => tile.kind)}`);
  t.check(await until(mediaShown("image", pictures)), `all ${pictures} picture tiles show their pictures from /media`);
  t.check(await evaluate("(() => { const clips = [...document.querySelectorAll('#results .tile.video video')];" +
    " return clips.length === 2 && clips.every(v => v.loop && v.muted && v.src.includes('/media/')); })()"),
    "both clips are looping videos from /media");
  t.check(await evaluate("document.querySelectorAll('#results .tile.audio audio[controls]').length") === 2, "recordings have players");
  t.check(await until("document.querySelector('#results .tile.text blockquote').textContent === 'a photo of a cat'"),
    "the text tile shows the file's text");
  t.check(/results for/.test(await evaluate("document.getElementById('status').textContent")), "the status line counts results");
  const first = await screenshot("page-text-query.png");

  // Drop a picture on the drop zone.
  const dropped = path.join(corpus, "grey.png"); // the one picture of the fixtures no other file repeats
  const box = await evaluate("(() => { const r = document.getElementById('drop').getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  const data = { items: [], files: [dropped], dragOperationsMask: 1 };
  for (const type of ["dragEnter", "dragOver", "drop"]) await page("Input.dispatchDragEvent", { type, x: box.x, y: box.y, data });
  t.check(await until("document.getElementById('status').textContent.includes('results for grey.png')"), "the drop searched for the picture");
  const after = await evaluate("[...document.querySelectorAll('#results .tile')].map(t => ({kind: t.className, caption: t.querySelector('.caption').textContent, score: Number(t.querySelector('.score').textContent)}))");
  t.check(after.length > 0 && after[0].caption === "grey" && after[0].score > 0.999, `the dropped picture finds itself first: ${JSON.stringify(after[0])}`);
  t.check(await evaluate("!!document.querySelector('#query-preview img')"), "the dropped picture is shown as the query");
  t.check(await until(mediaShown("image", pictures)), "the pictures of the drop's results show");
  const second = await screenshot("page-dropped-picture.png");
  console.log(`screenshots: ${first} ${second}`);
} catch (error) {
  t.check(false, `unexpected: ${error.stack || error}\n${browser.log.slice(-2000)}`);
} finally {
  await browser.close();
  const code = await server.stop();
  t.check(code === 0, `the server's exit status ${code}`);
}
process.exit(t.finish());
