"""The FastAPI + uvicorn peer of bench_serve: the same model on the same checkpoint in PyTorch
(bench/encode_torch.py's Encoder, nn.Linear blocks, torch.inference_mode) behind the same
POST /v1/embeddings request and answer shape as `uform serve`, for texts and {"image": data:} inputs.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/serve_torch.py CHECKPOINT --port P --threads T [--mode direct|batched]
        [--precision f32|bf16]

Its best mode, as a PyTorch user would tune it: uvicorn with uvloop and httptools (Debian's
python3-uvloop and python3-httptools), one worker process (one copy of the model; the engine's
server is one process too), torch.set_num_threads(T) with OMP_WAIT_POLICY=PASSIVE, the answer
serialised once with json.dumps into a plain Response (FastAPI's default encoder walks every float
again), and either
  direct   the model runs inside the async endpoint, one request at a time (no thread hop), or
  batched  requests queue to one model thread that takes whatever arrived (up to --max-batch
           inputs) per forward pass: dynamic batching, as the engine's server does it.
and in F32 or (--precision bf16) under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's own
mixed precision on CPUs (oneDNN's BF16 products where the CPU has them). bench_serve runs every
combination and reports the best at each concurrency. Texts of one batch are grouped by
length (the encoder has no padding mask); pictures go through PIL and torchvision's Resize
(antialias) + CenterCrop + Normalize, the preprocessing docs/preprocessing.md specifies.
"""

import argparse
import asyncio
import base64
import io
import json
import os
import sys
import threading

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response
from PIL import Image
from torchvision import transforms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import encode_torch  # noqa: E402
import uform_reference as R  # noqa: E402


class Model:
    def __init__(self, checkpoint, precision="f32"):
        config, tensors = R.load(checkpoint, torch.float32)
        self.bf16 = precision == "bf16"
        self.config = config
        self.text = encode_torch.Encoder(config, tensors, "text").eval()
        self.image = encode_torch.Encoder(config, tensors, "image").eval()
        size, image = config["image"]["size"], config["image"]
        self.transform = transforms.Compose([transforms.Resize(size, antialias=True), transforms.CenterCrop(size),
                                             transforms.ToTensor(), transforms.Normalize(image["mean"], image["std"])])
        self.text_bytes = config["text"]["bytes"]

    def prepare(self, item):
        """An input of the request -> ("text", bytes) or ("image", tensor)."""
        if isinstance(item, str):
            return "text", item.encode()[: self.text_bytes]
        if "text" in item:
            return "text", item["text"].encode()[: self.text_bytes]
        uri = item["image"]
        data = base64.b64decode(uri[uri.index(",") + 1:])
        return "image", self.transform(Image.open(io.BytesIO(data)).convert("RGB"))

    @torch.inference_mode()
    def encode(self, prepared):
        """[(kind, value)] -> [embedding as a list of floats], in order."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            return self.encode_groups(prepared)

    def encode_groups(self, prepared):
        rows = [None] * len(prepared)
        groups = {}
        for i, (kind, value) in enumerate(prepared):
            groups.setdefault((kind, len(value) if kind == "text" else 0), []).append(i)
        for (kind, _), indexes in groups.items():
            if kind == "text":
                ids = torch.tensor([[R.CLS_ID] + list(prepared[i][1]) for i in indexes])
                _, embeddings = self.text(ids)
            else:
                _, embeddings = self.image(torch.stack([prepared[i][1] for i in indexes]))
            for i, row in zip(indexes, embeddings.float().tolist()):
                rows[i] = row
        return rows


def answer(rows, name):
    data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
    return Response(json.dumps({"object": "list", "data": data, "model": name,
                                "usage": {"prompt_tokens": 0, "total_tokens": 0}}), media_type="application/json")


def build(model, mode, max_batch, name):
    app = FastAPI()
    inputs_of = lambda body: body["input"] if isinstance(body["input"], list) else [body["input"]]  # noqa: E731

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    if mode == "direct":
        @app.post("/v1/embeddings")
        async def embeddings(request: Request):
            body = json.loads(await request.body())
            return answer(model.encode([model.prepare(item) for item in inputs_of(body)]), name)
        return app

    # batched: one model thread takes what has queued (whole requests, up to max_batch inputs).
    pending = []
    lock = threading.Condition()

    def worker():
        while True:
            with lock:
                while not pending:
                    lock.wait()
                taken, count = [], 0
                while pending and (not taken or count + len(pending[0][0]) <= max_batch):
                    taken.append(pending.pop(0))
                    count += len(taken[-1][0])
            prepared = [p for items, _, _ in taken for p in items]
            try:
                rows = model.encode(prepared)
            except Exception as error:  # noqa: BLE001 - handed to the request
                rows = error
            at = 0
            for items, future, loop in taken:
                result = rows if isinstance(rows, Exception) else rows[at:at + len(items)]
                at += len(items)
                loop.call_soon_threadsafe(future.set_result, result)

    threading.Thread(target=worker, daemon=True).start()

    @app.post("/v1/embeddings")
    async def embeddings_batched(request: Request):
        body = json.loads(await request.body())
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        items = [model.prepare(item) for item in inputs_of(body)]
        with lock:
            pending.append((items, future, loop))
            lock.notify()
        rows = await future
        if isinstance(rows, Exception):
            raise rows
        return answer(rows, name)

    return app


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mode", choices=("direct", "batched"), default="direct")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--precision", choices=("f32", "bf16"), default="f32")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    model = Model(args.checkpoint, args.precision)
    name = os.path.basename(args.checkpoint).removesuffix(".safetensors")
    app = build(model, args.mode, args.max_batch, name)
    uvicorn.run(app, host="127.0.0.1", port=args.port, loop="uvloop", http="httptools", workers=1,
                log_level="warning", access_log=False)


if __name__ == "__main__":
    main(sys.argv[1:])
