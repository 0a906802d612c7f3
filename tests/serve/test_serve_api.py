"""`uform serve` end to end, every route against the command line on the same checkpoint:
embeddings (float, base64, dimensions, texts and data: URIs of pictures, recordings and clips, in
order) against `uform encode` (the same compute on both sides: the same float32 bits; a `dimensions`
prefix within a few float32 steps, see check_embeddings), usage tokens, model names, search against the
index's own items, /media (bytes, content types, ranges), choices against `uform choose`,
/v1/models, /health, /metrics in Prometheus's format, the page, the API key, and --int8.

Usage: test_serve_api.py UFORM CHECKPOINT FIXTURES WORK"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, cosine, data_uri, encode, float_steps, pictures, same_floats  # noqa: E402

TEXTS = ["a photo of a cat", "a dog on a beach", "", "ünïcödé ✓ text", "x" * 300, "a red star at the top"]


def check_embeddings(t, server, uform, checkpoint, work):
    references = encode(uform, checkpoint, "text", TEXTS, work, "texts")
    status, answer, _ = server.post("/v1/embeddings", {"input": TEXTS, "model": "tiny"})
    t.check(status == 200, f"embeddings answered {status}: {answer}")
    if status != 200:
        return
    t.check(answer["object"] == "list" and answer["model"] == "tiny", f"the list's fields: {answer.get('object')}")
    t.check([d["index"] for d in answer["data"]] == list(range(len(TEXTS))), "indexes in order")
    t.check(all(d["object"] == "embedding" for d in answer["data"]), "every row an embedding")
    # The same compute (the default) on both sides: the same float32 bits, not merely close ones.
    for i, row in enumerate(answer["data"]):
        t.check(same_floats(row["embedding"], references[i]),
                f"text {i}: not uform encode's bits (cosine {cosine(row['embedding'], references[i])})")
    tokens = sum(min(len(text.encode()), 64) + 1 for text in TEXTS)
    t.check(answer["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}, f"usage {answer['usage']}, expected {tokens}")

    status, answer, _ = server.post("/v1/embeddings", {"input": TEXTS, "encoding_format": "base64"})
    t.check(status == 200 and len(answer["data"]) == len(TEXTS), f"base64 answered {status}")
    for i, row in enumerate(answer["data"]):
        vector = np.frombuffer(base64.b64decode(row["embedding"]), dtype="<f4")
        t.check(vector.shape == (64,) and same_floats(vector, references[i]), f"base64 text {i}: not uform encode's bits")

    # A prefix: the server renormalises the first `dims` values of the unit vector, `uform encode
    # --dims` normalises the head's first `dims` outputs; the two differ by rounding alone: at most
    # 0.51 of a float32 step of [0.5, 1) (2^-24) over these texts (2026-12-06). The bound is 2 steps;
    # the unrenormalised prefix (what a server that forgot to renormalise would answer) lies over
    # 1,000 steps away, checked, so the bound separates the two.
    for dims in (16, 32):
        prefix = encode(uform, checkpoint, "text", TEXTS, work, f"texts{dims}", dims)
        for i in range(len(TEXTS)):
            t.check(float_steps(references[i][:dims], prefix[i]) > 1000,
                    f"dimensions {dims} text {i}: the bound would not tell a prefix left unrenormalised")
        for fmt in ("float", "base64"):
            status, answer, _ = server.post("/v1/embeddings", {"input": TEXTS, "dimensions": dims, "encoding_format": fmt})
            t.check(status == 200 and len(answer["data"]) == len(TEXTS), f"dimensions {dims} {fmt}: {status}")
            for i, row in enumerate(answer["data"]):
                vector = (np.frombuffer(base64.b64decode(row["embedding"]), dtype="<f4") if fmt == "base64"
                          else np.array(row["embedding"]))
                steps = float_steps(vector, prefix[i])
                t.check(len(vector) == dims and steps <= 2,
                        f"dimensions {dims} {fmt} text {i}: {len(vector)} values, {steps} float32 steps from uform encode --dims")
                t.check(abs(np.linalg.norm(vector) - 1) < 1e-5, f"dimensions {dims}: the prefix is renormalised")
    status, answer, _ = server.post("/v1/embeddings", {"input": "a", "dimensions": 17})
    t.check(status == 400 and answer["error"]["code"] == "invalid_dimensions" and "16, 32, 64" in answer["error"]["message"],
            f"dimensions 17: {status} {answer}")

    status, answer, _ = server.post("/v1/embeddings", {"input": "a photo of a cat"})
    t.check(status == 200 and len(answer["data"]) == 1 and same_floats(answer["data"][0]["embedding"], references[0]),
            "a single string: uform encode's bits")
    status, answer, _ = server.post("/v1/embeddings", {"input": "a", "model": "text-embedding-3-small"})
    t.check(status == 404 and answer["error"]["code"] == "model_not_found" and "'tiny'" in answer["error"]["message"],
            f"another model: {status} {answer}")


def check_media(t, server, uform, checkpoint, work, fixtures):
    images = pictures(os.path.join(work, "queries"), 4, seed=5)
    image_refs = encode(uform, checkpoint, "image", images, work, "images")
    recordings = [os.path.join(fixtures, name) for name in ("pcm16.wav", "stereo.flac")]
    audio_refs = encode(uform, checkpoint, "audio", recordings, work, "recordings")
    clips = [os.path.join(fixtures, name) for name in ("counter.mp4", "short.mp4")]
    video_refs = encode(uform, checkpoint, "video", clips, work, "clips")
    inputs = [{"image": data_uri(images[0], "image/jpeg")}, "a photo of a cat", {"audio": data_uri(recordings[0])},
              {"image": data_uri(images[1], "image/png")}, {"video": data_uri(clips[0])}, {"text": "a dog on a beach"},
              {"audio": data_uri(recordings[1])}, {"video": data_uri(clips[1])}, {"image": data_uri(images[2])},
              {"image": data_uri(images[3])}]
    expected = [image_refs[0], None, audio_refs[0], image_refs[1], video_refs[0], None, audio_refs[1], video_refs[1],
                image_refs[2], image_refs[3]]
    texts = encode(uform, checkpoint, "text", ["a photo of a cat", "a dog on a beach"], work, "two")
    expected[1], expected[5] = texts[0], texts[1]
    status, answer, _ = server.post("/v1/embeddings", {"input": inputs})
    t.check(status == 200, f"mixed media answered {status}: {answer if status != 200 else ''}")
    if status == 200:
        t.check(len(answer["data"]) == len(inputs), f"mixed media: {len(answer['data'])} rows for {len(inputs)} inputs")
        for i, row in enumerate(answer["data"]):
            t.check(row["index"] == i and same_floats(row["embedding"], expected[i]),
                    f"mixed input {i}: not uform encode's bits (cosine {cosine(row['embedding'], expected[i])})")
        # tiny: 17 tokens a picture (4x4 patches + CLS), 33 a clip (2x4x4 + CLS), 26 a recording (1 s: 25 + CLS).
        tokens = 4 * 17 + 2 * 33 + 2 * 26 + (16 + 1) + (16 + 1)
        t.check(answer["usage"]["prompt_tokens"] == tokens, f"media usage {answer['usage']}, expected {tokens}")
    # A data: URI without base64 (percent-encoded bytes) reads the same file.
    with open(images[0], "rb") as file:
        raw = file.read()
    escaped = "data:image/jpeg," + "".join(f"%{b:02X}" for b in raw)
    status, answer, _ = server.post("/v1/embeddings", {"input": [{"image": escaped}]})
    t.check(status == 200 and len(answer["data"]) == 1 and same_floats(answer["data"][0]["embedding"], image_refs[0]),
            f"a %-encoded data: URI: {status}")


def check_search(t, server, uform, work, corpus, index):
    listed = subprocess.run([uform, "search", index, CHECKPOINT, "--text", "a photo of a cat", "--top", "5", "--json"],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    import json
    cli = [json.loads(line) for line in listed]
    status, answer, _ = server.post("/v1/search", {"query": "a photo of a cat", "top_k": 5})
    t.check(status == 200, f"search answered {status}: {answer}")
    if status != 200:
        return
    hits = answer["data"]
    t.check([h["rank"] for h in hits] == [1, 2, 3, 4, 5], "ranks 1..5")
    t.check([h["item"] for h in hits] == [c["item"] for c in cli], f"search items {[h['item'] for h in hits]}, "
            f"uform search {[c['item'] for c in cli]}")
    t.check(all(abs(h["score"] - c["score"]) < 1e-4 for h, c in zip(hits, cli)), "scores as uform search")
    t.check(hits[0]["path"].endswith("caption.txt") and hits[0]["score"] > 0.9999, f"the caption finds itself: {hits[0]}")
    status, answer, _ = server.post("/v1/search", {"query": {"text": "a photo of a cat"}, "top_k": 3, "modality": "audio"})
    t.check(status == 200 and len(answer["data"]) == 3 and all(h["modality"] == "audio" for h in answer["data"]),
            f"modality filter: {answer}")
    status, answer, _ = server.post("/v1/search", {"query": "x", "modality": ["image", "video"], "top_k": 50})
    t.check(status == 200 and answer["data"] and all(h["modality"] in ("image", "video") for h in answer["data"]),
            "a list of modalities")
    picture = sorted(p for p in os.listdir(os.path.join(corpus, "images")))[0]
    path = os.path.join(corpus, "images", picture)
    status, answer, _ = server.post("/v1/search", {"query": {"image": data_uri(path)}, "top_k": 2})
    t.check(status == 200 and answer["data"][0]["path"] == path and answer["data"][0]["score"] > 0.9999,
            f"a picture finds itself: {answer['data'][0] if status == 200 else answer}")
    if status != 200:
        return
    t.check(answer["data"][0].get("caption") == "a picture with a caption" and "caption" not in answer["data"][1],
            f"--captions: {answer['data'][:2]}")
    # Its file, from /media/ROW: the same bytes, a picture's content type, ranges.
    row = answer["data"][0]["item"]
    status, headers, body = server.get(f"/media/{row}")
    with open(path, "rb") as file:
        original = file.read()
    t.check(status == 200 and body == original, f"/media/{row}: {status}, {len(body)} bytes of {len(original)}")
    t.check(headers.get("content-type") in ("image/png", "image/jpeg"), f"content type {headers.get('content-type')}")
    status, headers, body = server.get(f"/media/{row}", {"Range": "bytes=2-11"})
    t.check(status == 206 and body == original[2:12] and headers.get("content-range") == f"bytes 2-11/{len(original)}",
            f"a range: {status} {headers.get('content-range')}")
    status, headers, body = server.get(f"/media/{row}", {"Range": "bytes=-5"})
    t.check(status == 206 and body == original[-5:], f"a suffix range: {status}")
    status, headers, _ = server.get(f"/media/{row}", {"Range": f"bytes={len(original)}-"})
    t.check(status == 416 and headers.get("content-range") == f"bytes */{len(original)}", f"an unsatisfiable range: {status}")


def check_choose(t, server, uform):
    printed = subprocess.run([uform, "choose", CHECKPOINT, "yes or n", "--choices", "oa"], check=True, capture_output=True,
                             text=True).stdout
    cli = [float(value) for value in re.findall(r"\s([0-9.]+)\s*$", printed, re.M)]
    status, answer, _ = server.post("/v1/choose", {"text": "yes or n", "choices": "oa"})
    t.check(status == 200, f"choose answered {status}: {answer}")
    if status == 200:
        got = [c["probability"] for c in answer["data"][0]["choices"]]
        t.check(len(got) == 2 and all(abs(a - b) < 2e-6 for a, b in zip(got, cli)), f"choose {got}, uform choose {cli}")
        t.check([c["text"] for c in answer["data"][0]["choices"]] == ["o", "a"], "choices in order")
        t.check(answer["usage"]["prompt_tokens"] == 8 + 2, f"choose usage {answer['usage']}")
    status, answer, _ = server.post("/v1/choose", {"input": [{"text": "yes or n", "choices": [111, 97]},
                                                             {"text": "1 + 1 = ", "choices": ["1", "2", "3"], "group": 0}]})
    t.check(status == 200 and len(answer["data"]) == 2, f"two choices: {status}")
    if status == 200:
        t.check(abs(sum(c["probability"] for c in answer["data"][1]["choices"]) - 1) < 1e-5, "probabilities sum to 1")
        t.check(abs(answer["data"][0]["choices"][0]["probability"] - cli[0]) < 2e-6, "byte values as choices")
    for bad in ({"text": "a", "choices": "aa"}, {"text": "a", "choices": ""}, {"text": "a", "choices": "ab", "group": 99},
                {"text": 5, "choices": "ab"}, {"text": "a", "choices": [300]}):
        status, answer, _ = server.post("/v1/choose", bad)
        t.check(status == 400 and "error" in answer, f"choose {bad}: {status}")


def check_info(t, server):
    status, _, body = server.get("/health")
    t.check(status == 200 and b'"ok"' in body, f"/health {status} {body}")
    status, _, body = server.get("/v1/models")
    import json
    models = json.loads(body)
    model = models["data"][0]
    t.check(status == 200 and model["id"] == "tiny" and model["object"] == "model" and model["dimensions"] == 64
            and model["matryoshka"] == [16, 32, 64] and model["index"]["items"] > 0, f"/v1/models {models}")
    status, _, _ = server.get("/v1/models/tiny")
    t.check(status == 200, "/v1/models/tiny")
    status, _, _ = server.get("/v1/models/other")
    t.check(status == 404, "/v1/models/other")
    status, headers, body = server.get("/")
    t.check(status == 200 and headers["content-type"].startswith("text/html") and b"UForm search" in body, "the page")
    status, headers, body = server.get("/metrics")
    t.check(status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4"), "/metrics content type")
    text = body.decode()
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? '
                        r'-?[0-9.eE+-]+$')
    bad = [line for line in text.splitlines() if line and not line.startswith("# ") and not sample.match(line)]
    t.check(not bad, f"every sample line is Prometheus text: {bad[:3]}")
    typed = set(re.findall(r"^# TYPE (\S+) (counter|gauge|histogram)$", text, re.M))
    t.check({name for name, _ in typed} >= {"uform_requests_total", "uform_request_duration_seconds", "uform_batch_size",
                                            "uform_queue_depth", "uform_in_flight_requests", "uform_items_total"},
            f"the metrics: {sorted(typed)}")
    served = re.search(r'^uform_requests_total\{route="/v1/embeddings",status="200"\} (\d+)$', text, re.M)
    t.check(served and int(served.group(1)) >= 8, "embeddings requests counted")
    # Histogram buckets are cumulative and end at the count.
    for name in ("uform_batch_size", "uform_request_duration_seconds"):
        series = {}
        for labels, le, value in re.findall(rf'^{name}_bucket\{{(.*?),?le="([^"]+)"\}} (\d+)$', text, re.M):
            series.setdefault(labels, []).append(int(value))
        counts = dict(re.findall(rf'^{name}_count\{{(.*?)\}} (\d+)$', text, re.M))
        for labels, values in series.items():
            t.check(values == sorted(values) and str(values[-1]) == counts.get(labels.rstrip(",")),
                    f"{name}{{{labels}}} buckets {values} count {counts.get(labels.rstrip(','))}")


def check_key(t, uform, work):
    key_file = os.path.join(work, "key")
    with open(key_file, "w") as file:
        file.write("sk-test-0123456789\n")
    server = Server(uform, CHECKPOINT, "--api-key-file", key_file)
    try:
        status, answer, headers = server.post("/v1/embeddings", {"input": "a"})
        t.check(status == 401 and answer["error"]["type"] == "authentication_error" and headers.get("www-authenticate") == "Bearer",
                f"no key: {status} {answer}")
        status, answer, _ = server.post("/v1/embeddings", {"input": "a"}, {"Authorization": "Bearer sk-test-0123456788"})
        t.check(status == 401 and answer["error"]["code"] == "invalid_api_key", f"a wrong key: {status}")
        status, answer, _ = server.post("/v1/embeddings", {"input": "a"}, {"Authorization": "Bearer sk-test-012345678"})
        t.check(status == 401, f"a key's prefix: {status}")
        status, answer, _ = server.post("/v1/embeddings", {"input": "a"}, {"Authorization": "Basic c2stdGVzdA=="})
        t.check(status == 401, f"another scheme: {status}")
        status, answer, _ = server.post("/v1/embeddings", {"input": "a"}, {"Authorization": "Bearer sk-test-0123456789"})
        t.check(status == 200 and len(answer["data"]) == 1, f"the key: {status}")
        for path in ("/health", "/metrics", "/"):
            t.check(server.get(path)[0] == 200, f"{path} without the key")
        t.check(server.get("/v1/models")[0] == 401, "/v1/models needs the key")
    finally:
        t.check(server.stop() == 0, "the keyed server exits 0")


def check_int8(t, uform, work):
    """--int8: I8 compute, named by /v1/models, embeddings with the bits `uform encode --int8` gives
    (the same compute on the same checkpoint), and not F32's: a server that ignored --int8 fails here
    (INT8 is within cosine 0.99997 of F32 on this model, so a cosine bound could not tell). With
    another compute flag a usage error naming both."""
    texts = ["a red star", "a blue circle on the left"]
    reference = os.path.join(work, "i8.npy")
    subprocess.run([uform, "encode", CHECKPOINT, "--text", *texts, "--int8", "--out", reference], check=True,
                   stderr=subprocess.DEVNULL)
    f32 = encode(uform, CHECKPOINT, "text", texts, work, "f32_for_int8")
    server = Server(uform, CHECKPOINT, "--int8")
    try:
        status, _, body = server.get("/v1/models")
        t.check(status == 200 and json.loads(body)["data"][0]["compute"] == "i8", f"--int8: /v1/models {body[:200]}")
        t.check(any("i8 compute" in line for line in server.lines), f"--int8: the ready line names i8: {server.lines[-1:]}")
        status, answer, _ = server.post("/v1/embeddings", {"input": texts})
        references = np.load(reference)
        t.check(status == 200 and len(answer["data"]) == len(texts), f"--int8 embeddings: {status}")
        for i, row in enumerate(answer["data"] if status == 200 else []):
            t.check(same_floats(row["embedding"], references[i]), f"--int8 text {i}: not uform encode --int8's bits")
            t.check(not same_floats(row["embedding"], f32[i]), f"--int8 text {i}: F32's bits, as if --int8 were ignored")
    finally:
        t.check(server.stop() == 0, "the --int8 server exits 0")
    refused = subprocess.run([uform, "serve", CHECKPOINT, "--port", "0", "--int8", "--bf16"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
    t.check(refused.returncode == 2 and "--int8 and --bf16 exclude each other" in refused.stderr,
            f"--int8 with --bf16: exit {refused.returncode}, {refused.stderr.strip()[-200:]}")


def main(argv):
    global CHECKPOINT
    uform, CHECKPOINT, fixtures, work = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    # The corpus of the index: pictures, recordings, clips and a caption.
    corpus = os.path.join(work, "corpus")
    pictures(os.path.join(corpus, "images"), 6, seed=11)
    os.makedirs(os.path.join(corpus, "sounds"))
    os.makedirs(os.path.join(corpus, "clips"))
    for name in ("pcm16.wav", "stereo.flac", "stereo.ogg", "stereo16.wav"):
        shutil.copy(os.path.join(fixtures, name), os.path.join(corpus, "sounds"))
    for name in ("counter.mp4", "counter.webm"):
        shutil.copy(os.path.join(fixtures, name), os.path.join(corpus, "clips"))
    with open(os.path.join(corpus, "caption.txt"), "w") as file:
        file.write("a photo of a cat")
    index = os.path.join(work, "corpus.index")
    subprocess.run([uform, "index", CHECKPOINT, corpus, "--out", index, "--quiet"], check=True)
    # Captions from a manifest in the training format, paths relative to its folder.
    manifest = os.path.join(corpus, "captions.jsonl")
    first = sorted(os.listdir(os.path.join(corpus, "images")))[0]
    with open(manifest, "w") as file:
        file.write(json.dumps({"text": "a picture with a caption", "image": "images/" + first}) + "\n")
        file.write(json.dumps({"text": "a file that is not there", "image": "images/missing.png"}) + "\n")
        file.write(json.dumps({"image": "images/" + first}) + "\n\n")
    server = Server(uform, CHECKPOINT, "--index", index, "--captions", manifest)
    t.check(any("captions for 1 of" in line for line in server.lines), f"the captions matched: {server.lines}")
    try:
        check_embeddings(t, server, uform, CHECKPOINT, work)
        check_media(t, server, uform, CHECKPOINT, work, fixtures)
        check_search(t, server, uform, work, corpus, index)
        check_choose(t, server, uform)
        check_info(t, server)
    finally:
        code = server.stop()
        t.check(code == 0, f"SIGTERM: exit status {code}")
    check_key(t, uform, work)
    check_int8(t, uform, work)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
