"""What the end-to-end tests of `uform serve` share: a server in a child process (on a free port,
stopped by signal), HTTP calls over http.client, generated media, references from `uform encode`,
and a tally that prints "N passed, N failed". Standard library, NumPy and PIL (Debian's python3)."""

import base64
import http.client
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def check(self, condition, what):
        with self.lock:
            if condition:
                self.passed += 1
            else:
                self.failed += 1
                print(f"FAILED: {what}", file=sys.stderr, flush=True)
        return condition

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 and self.passed > 0 else 1


class Server:
    """`uform serve CHECKPOINT --port 0 FLAGS...` until `stop`; its stderr is kept in `lines`."""

    def __init__(self, uform, checkpoint, *flags, wait_ready=True):
        self.process = subprocess.Popen([uform, "serve", checkpoint, "--port", "0", *flags],
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.lines = []
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            found = re.search(r"listening on http://\S+?:(\d+)/", line)
            if found:
                self.port = int(found.group(1))
                if not wait_ready:
                    break
            if "ready in" in line:
                break
        threading.Thread(target=self._drain, daemon=True).start()
        if self.port is None:
            raise RuntimeError("the server did not start: " + "".join(self.lines))

    def _drain(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def connection(self, timeout=120):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, connection=None, timeout=120):
        """-> (status, headers as a lower-case dict, body bytes)."""
        own = connection is None
        connection = connection or self.connection(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            connection.request(method, path, body=body, headers=dict(headers or {}))
            response = connection.getresponse()
            data = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, data
        finally:
            if own:
                connection.close()

    def post(self, path, body, headers=None, connection=None):
        """-> (status, parsed JSON or None, headers)."""
        status, response_headers, data = self.request("POST", path, body,
                                                      {"Content-Type": "application/json", **(headers or {})},
                                                      connection)
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = None
        return status, parsed, response_headers

    def get(self, path, headers=None):
        return self.request("GET", path, headers=headers)

    def metric(self, name):
        """The value of one sample of /metrics (`name` with its labels), or None."""
        status, _, data = self.get("/metrics")
        for line in data.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def stop(self, signal_number=signal.SIGTERM, timeout=60):
        if self.process.poll() is None:
            self.process.send_signal(signal_number)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


def data_uri(path, kind="application/octet-stream"):
    with open(path, "rb") as file:
        return f"data:{kind};base64," + base64.b64encode(file.read()).decode()


def encode(uform, checkpoint, modality, items, work, name, dims=None):
    """`uform encode` of items (texts, or files) -> float32 [n, E]."""
    out = os.path.join(work, name + ".npy")
    command = [uform, "encode", checkpoint, "--" + modality, *items, "--out", out]
    if dims:
        command += ["--dims", str(dims)]
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return np.load(out)


def pictures(folder, count, seed, size=(64, 48)):
    """`count` distinct pictures (PNG and JPEG) of coloured shapes; -> their paths."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(count):
        image = Image.new("RGB", size, tuple(int(v) for v in rng.integers(0, 256, 3)))
        draw = ImageDraw.Draw(image)
        for _ in range(3):
            x0, y0 = int(rng.integers(0, size[0] - 8)), int(rng.integers(0, size[1] - 8))
            box = [x0, y0, x0 + int(rng.integers(6, 30)), y0 + int(rng.integers(6, 30))]
            colour = tuple(int(v) for v in rng.integers(0, 256, 3))
            (draw.ellipse if rng.integers(2) else draw.rectangle)(box, fill=colour)
        path = os.path.join(folder, f"picture-{i:03d}." + ("png" if i % 2 else "jpg"))
        image.save(path)
        paths.append(path)
    return paths


def cosine(a, b):
    """The cosine of two vectors; NaN (which fails every >= check) for vectors of different lengths
    or empty ones, so a short or missing row never passes as similar."""
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.size == 0 or a.size != b.size:
        return float("nan")
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def same_floats(vector, reference):
    """Whether `vector` (a JSON list, whose nine significant digits give every float32 back exactly,
    or float32 from base64) holds `reference`'s float32 values bit for bit, and as many."""
    a, b = np.asarray(vector, dtype=np.float32).ravel(), np.asarray(reference, dtype=np.float32).ravel()
    return a.size > 0 and a.size == b.size and a.tobytes() == b.tobytes()


def float_steps(vector, reference):
    """The largest difference between `vector` and `reference` in float32 steps of 1 (2^-23 · 0.5: the
    spacing of floats in [0.5, 1), coarser than any below); inf for different lengths or empty ones."""
    a, b = np.asarray(vector, dtype=np.float64).ravel(), np.asarray(reference, dtype=np.float64).ravel()
    if a.size == 0 or a.size != b.size:
        return float("inf")
    return float(np.max(np.abs(a - b)) / 2.0 ** -24)


def wait_until(condition, seconds=30, step=0.02):
    """Polls `condition` until it holds or `seconds` pass; -> whether it held."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def raw_exchange(port, payload, read_seconds=10, pace=None):
    """Sends raw bytes on a new socket and reads until the server closes or `read_seconds` pass;
    -> the bytes read. `pace` (seconds) sends one byte at a time."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_seconds) as sock:
        try:
            if pace:
                for byte in payload:
                    sock.sendall(bytes([byte]))
                    time.sleep(pace)
            else:
                sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
        chunks = []
        deadline = time.time() + read_seconds
        while time.time() < deadline:
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and read_seconds < 0:
                break
        return b"".join(chunks)


def status_of(response):
    found = re.match(rb"HTTP/1\.[01] (\d{3})", response)
    return int(found.group(1)) if found else None
