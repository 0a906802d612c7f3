"""`uform serve`'s flags through the command line's one flag table (tools/serve/serve_flags.c over
tools/cli_flags.c): --help lists every flag the server had before the table (the list below is
written from docs/serve.md, not read from the code), the routes and the exit statuses; each range
and combination the table cannot state is refused with exit 2 before anything listens; values
parsed by the table reach the server (--max-body 1K: a 2 KB body answers 413 naming 1024 bytes,
a 100-byte one is read). Usage: test_serve_flags.py UFORM CHECKPOINT"""

import subprocess
import sys

from serve_harness import Server, Tally

FLAGS = ["--index", "--exact", "--captions", "--host", "--port", "--threads", "--decode-threads", "--bf16", "--f32",
         "--int8", "--max-batch", "--max-wait-us", "--spin-us", "--max-queue", "--max-body", "--timeout", "--api-key",
         "--api-key-file", "--http-threads", "--max-connections", "--quiet", "--help"]
ROUTES = ["POST /v1/embeddings", "POST /v1/search", "POST /v1/choose", "GET  /health  /v1/models  /metrics  /  /media/ROW"]


def run(uform, *arguments):
    return subprocess.run([uform, "serve", *arguments], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def main(argv):
    uform, checkpoint = argv[1:3]
    t = Tally()
    shown = run(uform, "--help")
    t.check(shown.returncode == 0 and shown.stderr == "", f"--help: exit {shown.returncode}, stderr {shown.stderr[:200]}")
    lines = shown.stdout.splitlines()
    t.check(len(lines) > 40 and lines[0].startswith("usage: uform serve CKPT"), f"--help starts with the usage: {lines[:1]}")
    for flag in FLAGS:
        t.check(any(line.startswith(f"  {flag} ") or line == f"  {flag}" for line in lines), f"--help lists {flag}")
    for route in ROUTES:
        t.check(route in shown.stdout, f"--help lists the route {route}")
    t.check("exit status: 0 stopped by a signal" in shown.stdout and "2 usage error" in shown.stdout, "--help ends with the statuses")

    refusals = [
        ([], "missing"),
        (["a.safetensors", "b.safetensors"], "unexpected argument"),
        ([checkpoint, "--port", "70000"], "--port"),
        ([checkpoint, "--port", "eighty"], "--port"),
        ([checkpoint, "--max-batch", "0"], "--max-batch"),
        ([checkpoint, "--max-batch", "65537"], "--max-batch"),
        ([checkpoint, "--max-wait-us", "60000001"], "--max-wait-us"),
        ([checkpoint, "--spin-us", "1000001"], "--spin-us"),
        ([checkpoint, "--max-queue", "0"], "--max-queue"),
        ([checkpoint, "--max-body", "63"], "--max-body"),
        ([checkpoint, "--max-body", "5G"], "--max-body"),
        ([checkpoint, "--max-body", "2X"], "--max-body"),
        ([checkpoint, "--timeout", "-1"], "--timeout"),
        ([checkpoint, "--timeout", "86401"], "--timeout"),
        ([checkpoint, "--http-threads", "257"], "--http-threads"),
        ([checkpoint, "--max-connections", "0"], "--max-connections"),
        ([checkpoint, "--threads", "4097"], "--threads"),
        ([checkpoint, "--exact"], "--exact"),
        ([checkpoint, "--captions", "c.jsonl"], "--captions"),
        ([checkpoint, "--api-key", "a", "--api-key-file", "f"], "--api-key"),
        ([checkpoint, "--api-key", ""], "--api-key"),
        ([checkpoint, "--f32", "--bf16"], "exclude each other"),
        ([checkpoint, "--index"], "--index needs a value"),
        ([checkpoint, "--no-such-flag"], "unknown flag --no-such-flag"),
    ]
    for arguments, said in refusals:
        refused = run(uform, *arguments)
        t.check(refused.returncode == 2 and said in refused.stderr and "listening" not in refused.stderr
                and refused.stderr.startswith("usage: uform serve"),
                f"{arguments}: exit {refused.returncode}, {refused.stderr.strip()[-200:]}")

    server = Server(uform, checkpoint, "--max-body", "1K", "--timeout", "20")
    try:
        status, answer, _ = server.post("/v1/embeddings", {"input": "a" * 2000})
        t.check(status == 413 and "1024" in answer["error"]["message"], f"--max-body 1K, 2 KB: {status} {answer}")
        status, answer, _ = server.post("/v1/embeddings", {"input": "a" * 100})
        t.check(status == 200 and len(answer["data"]) == 1, f"--max-body 1K, 100 bytes: {status}")
    finally:
        t.check(server.stop() == 0, "the server exits 0")
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
