"""bench_serve: `uform serve` under load, against the same model in process and a FastAPI +
uvicorn server of it in PyTorch, in one run.

    build/bench/bench_serve [--checkpoint CKPT | --size tiny|small] [--seconds 4] [--rounds 3] [--quick]
                            [--no-torch] [--server-cpus 0] [--client-cpus 1] [--threads N] [--max-batch 32]
                            [--only text|pictures] [--compute best|f32|bf16] [--torch-precisions f32,bf16] [--json FILE]

The load generator is wrk (Debian's) with bench/serve_wrk.lua, on loopback, each run bounded by
--seconds: concurrency 1, 16 and 64, first single-text requests (1,024 different texts of 24 bytes,
round robin), then batch-32 picture requests (32 different 224x224 JPEG photos as data: URIs, one
request). Servers run pinned to --server-cpus and wrk to --client-cpus (taskset), so the load
generator does not take the servers' cores; the in-process figures run on the server's CPUs with
the same threads. Each side computes in its best mode: `uform serve` and the in-process peer in
--compute (default best: what `uform serve` runs unless told, BF16 on AVX-512 BF16 CPUs, else F32),
the FastAPI peer in each of --torch-precisions (F32, and BF16 under torch.autocast) and each of its
two modes (direct, dynamically batched), the best of those four counting. --compute f32 is the
like-for-like comparison in F32. Reported, per server and concurrency: requests/s, items/s, p50 and
p99 latency, errors. Everything runs --rounds times, the sides interleaved (in process, uform serve,
the FastAPI configurations, then again), and each figure is the best of its rounds (for a server: the
round with the highest throughput, with that round's latencies), so that a busy moment of a shared
machine does not decide a ratio. Then the issue's targets:
  - saturated throughput (best over the concurrencies) >= 90% of in-process batched encode
    (texts: batches of --max-batch; pictures: batches of the same 32 files, decoding included);
  - at concurrency 1, the single-text p50 <= in-process batch-1 p50 + 150 us;
  - at concurrency 16, >= 3x the FastAPI peer's throughput (its best configuration), with a lower p99.
A benchmark: it prints what it measured and exits 0 whatever the numbers say.
"""

import argparse
import base64
import io
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(port, process, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server on port {port} did not become healthy")


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def inputs(work, texts_count=1024, pictures_count=32):
    """Texts (24 bytes each) and 224x224 JPEG photos; -> (texts file, text bodies, picture paths, picture body)."""
    import numpy as np
    from PIL import Image, ImageFilter
    os.makedirs(work, exist_ok=True)
    texts = [f"a photo of item {i:07d}."[:24].ljust(24, ".") for i in range(texts_count)]
    texts_file = os.path.join(work, "texts.txt")
    with open(texts_file, "w") as file:
        file.write("\n".join(texts) + "\n")
    text_bodies = os.path.join(work, "text-bodies.jsonl")
    with open(text_bodies, "w") as file:
        for text in texts:
            file.write(json.dumps({"input": text, "model": "bench"}) + "\n")
    rng = np.random.default_rng(3)
    paths, uris = [], []
    for i in range(pictures_count):
        # A photo-like picture: smooth colour fields with texture (what JPEG is made for).
        base = rng.integers(0, 256, (8, 8, 3)).astype(np.uint8)
        image = Image.fromarray(base).resize((224, 224), Image.BICUBIC)
        noise = Image.fromarray(rng.integers(0, 40, (224, 224, 3)).astype(np.uint8)).filter(ImageFilter.GaussianBlur(1))
        image = Image.blend(image, noise, 0.25)
        path = os.path.join(work, f"photo-{i:02d}.jpg")
        image.save(path, quality=90)
        paths.append(path)
        with open(path, "rb") as file:
            uris.append("data:image/jpeg;base64," + base64.b64encode(file.read()).decode())
    picture_bodies = os.path.join(work, "picture-bodies.jsonl")
    with open(picture_bodies, "w") as file:
        file.write(json.dumps({"input": [{"image": uri} for uri in uris], "model": "bench"}) + "\n")
    return texts_file, text_bodies, paths, picture_bodies


def wrk(port, bodies, concurrency, seconds, client_cpus):
    environment = dict(os.environ, WRK_BODIES=bodies)
    command = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "30s", "-s",
               os.path.join(HERE, "serve_wrk.lua"), f"http://127.0.0.1:{port}"]
    if client_cpus:
        command = ["taskset", "-c", client_cpus] + command
    output = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=seconds + 120).stdout
    line = next((line for line in output.splitlines() if line.startswith('{"requests"')), None)
    if line is None:
        raise RuntimeError("wrk printed no summary:\n" + output)
    result = json.loads(line)
    result["requests_per_second"] = result["requests"] / (result["duration_us"] * 1e-6)
    return result


def cpu_seconds(pid):
    """User + system CPU seconds of a process and all its threads so far (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def wait_idle(pid, seconds=120):
    """Waits until the server has finished the requests wrk left in flight (a run ends on time, not
    when its answers are in: 64 picture requests are 2,048 pictures of work): until the process
    used under 5% of a CPU over 200 ms, so that the next run neither starts behind leftovers nor
    counts their CPU time."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        before = cpu_seconds(pid)
        time.sleep(0.2)
        if cpu_seconds(pid) - before < 0.01:
            return


def batch_sizes(port):
    """Mean batch size per queue so far, from /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    sums = dict(re.findall(r'^uform_batch_size_sum\{queue="(\w+)"\} (\d+)', text, re.M))
    counts = dict(re.findall(r'^uform_batch_size_count\{queue="(\w+)"\} (\d+)', text, re.M))
    return {q: (int(sums[q]), int(counts.get(q, 0))) for q in sums}


def describe(name, load, concurrency, result):
    head = f"{name:<22} {load:<8} c={concurrency:<3}"
    if not result["requests"]:
        return head + "   no request answered within the run (each waits behind the others longer)"
    return (head + f" {result['requests_per_second']:9.1f} req/s {result['items_per_second']:9.1f} items/s "
            f"{result.get('items_per_cpu_second', 0):9.1f} /CPU-s  p50 {result['p50_us'] / 1000:8.3f} ms  "
            f"p99 {result['p99_us'] / 1000:8.3f} ms  errors {result['socket_errors'] + result['non_2xx']}")


def run_server(name, command, port, loads, args, scrape=False):
    """Starts a server, warms it up, runs every load; -> {load name: {concurrency: result}}."""
    if args.server_cpus:
        command = ["taskset", "-c", args.server_cpus] + command
    environment = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment)
    results = {}
    try:
        wait_healthy(port, process)
        for load, (bodies, items) in loads.items():
            wrk(port, bodies, 16, 1, args.client_cpus)  # warm-up: allocations, caches, lazy loading
            results[load] = {}
            for concurrency in args.concurrency:
                wait_idle(process.pid)
                before = batch_sizes(port) if scrape else {}
                cpu_before = cpu_seconds(process.pid)
                result = wrk(port, bodies, concurrency, args.seconds, args.client_cpus)
                # CPU of the run's window: the work of its answers, plus the part of the requests left
                # in flight at its end that was done within it (small against a run of seconds).
                cpu = cpu_seconds(process.pid) - cpu_before
                result["items_per_second"] = result["requests_per_second"] * items
                result["cpu_seconds"] = cpu
                result["items_per_cpu_second"] = result["requests"] * items / cpu if cpu > 0 else 0
                if scrape:
                    after = batch_sizes(port)
                    queue = "text" if load == "text" else "image"
                    done = [after.get(queue, (0, 0))[k] - before.get(queue, (0, 0))[k] for k in (0, 1)]
                    result["mean_batch"] = done[0] / done[1] if done[1] else 0
                results[load][concurrency] = result
                print(f"  {describe(name, load, concurrency, result)}"
                      + (f"  mean batch {result['mean_batch']:.1f}" if scrape else ""), flush=True)
    finally:
        stop(process)
    return results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--uform", required=True)
    parser.add_argument("--inproc", required=True)
    parser.add_argument("--tiny-tool", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--checkpoint")
    parser.add_argument("--size", default="tiny", choices=("tiny", "small", "base"))
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round of 2-second runs")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--server-cpus", default=None, help="CPU list for the servers (default: all but the last)")
    parser.add_argument("--client-cpus", default=None, help="CPU list for wrk (default: the last CPU)")
    parser.add_argument("--threads", type=int, default=None, help="compute threads (default: the server CPUs)")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--only", choices=("text", "pictures"))
    parser.add_argument("--compute", choices=("best", "f32", "bf16"), default="best",
                        help="uform serve's and the in-process peer's compute (default: the CPU's best)")
    parser.add_argument("--torch-precisions", default="f32,bf16", help="the FastAPI peer's precisions to run (f32, bf16)")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "serve.json"))
    args = parser.parse_args(argv)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    if args.quick:
        args.seconds, args.rounds = 2, 1
    cpus = sorted(os.sched_getaffinity(0))
    if args.server_cpus is None and len(cpus) >= 2:
        args.server_cpus = ",".join(str(c) for c in cpus[:-1])
        args.client_cpus = args.client_cpus or str(cpus[-1])
    server_count = len(args.server_cpus.split(",")) if args.server_cpus else len(cpus)
    threads = args.threads or server_count
    for tool in ("wrk", "taskset"):
        if not shutil.which(tool):
            print(f"bench_serve: {tool} is missing (scripts/install-deps.sh installs it)")
            return 0

    os.makedirs(args.work, exist_ok=True)
    checkpoint = args.checkpoint
    if not checkpoint:
        checkpoint = os.path.join(args.work, f"bench-{args.size}.safetensors")
        if not os.path.exists(checkpoint):
            subprocess.run([args.tiny_tool, checkpoint, "--seed", "1", "--size", args.size], check=True, stdout=subprocess.DEVNULL)
    # The model's name is the file's: copy it to bench.safetensors so both servers answer "bench".
    named = os.path.join(args.work, "bench.safetensors")
    shutil.copyfile(checkpoint, named)
    texts_file, text_bodies, pictures, picture_bodies = inputs(os.path.join(args.work, "inputs"))
    described = subprocess.run([args.uform, "describe", named], capture_output=True, text=True).stdout
    kernels = re.search(r"kernels\s+(\S+),", described)
    cpu_class = kernels.group(1) if kernels else "unknown"
    cpu_name = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"bench_serve: {cpu_name} ({cpu_class}), servers on CPUs {args.server_cpus or 'all'} with {threads} threads, "
          f"wrk on CPUs {args.client_cpus or 'all'}, {args.seconds} s a run, load average {os.getloadavg()[0]:.2f}; "
          f"uform compute {args.compute}, PyTorch {args.torch_precisions}", flush=True)

    loads = {"text": (text_bodies, 1), "pictures": (picture_bodies, 32)}
    if args.only:
        loads = {args.only: loads[args.only]}
    inproc_command = [args.inproc, named, args.compute, str(threads), str(args.max_batch), str(args.seconds / 2), "1", texts_file, *pictures]
    if args.server_cpus:
        inproc_command = ["taskset", "-c", args.server_cpus] + inproc_command
    compute_flag = [] if args.compute == "best" else [f"--{args.compute}"]
    servers = {}
    inproc = None
    for round_ in range(args.rounds):
        print(f"round {round_ + 1} of {args.rounds} (load average {os.getloadavg()[0]:.2f})", flush=True)
        measured = json.loads(subprocess.run(inproc_command, capture_output=True, text=True, check=True).stdout)
        print(f"  in process: text batch-1 p50 {measured['text_batch1_p50_us']:.1f} us (p99 {measured['text_batch1_p99_us']:.1f}), "
              f"texts in batches of {args.max_batch} {measured['text_batched_items_per_second']:.0f}/s "
              f"({measured['text_batched_items_per_cpu_second']:.0f}/CPU-s), pictures in batches of 32 "
              f"{measured['image_batched_items_per_second']:.1f}/s ({measured['image_batched_items_per_cpu_second']:.1f}/CPU-s)",
              flush=True)
        if inproc is None:
            inproc = measured
        else:
            for key in ("text_batched_items_per_second", "image_batched_items_per_second",
                        "text_batched_items_per_cpu_second", "image_batched_items_per_cpu_second"):
                inproc[key] = max(inproc[key], measured[key])
            if measured["text_batch1_p50_us"] < inproc["text_batch1_p50_us"]:
                inproc["text_batch1_p50_us"], inproc["text_batch1_p99_us"] = measured["text_batch1_p50_us"], measured["text_batch1_p99_us"]
        port = free_port()
        runs = {"uform serve": run_server("uform serve", [args.uform, "serve", named, "--port", str(port), "--threads", str(threads),
                                                          "--max-batch", str(args.max_batch), "--quiet"] + compute_flag,
                                           port, loads, args, scrape=True)}
        for precision in [] if args.no_torch else args.torch_precisions.split(","):
            for mode in ("direct", "batched"):
                port = free_port()
                name = f"FastAPI {mode}" + (" bf16" if precision == "bf16" else "")
                runs[name] = run_server(
                    name, ["/usr/bin/python3", os.path.join(HERE, "serve_torch.py"), named, "--port", str(port),
                           "--threads", str(threads), "--mode", mode, "--max-batch", str(args.max_batch),
                           "--precision", precision], port, loads, args)
        for name, results in runs.items():
            for load, by_concurrency in results.items():
                for concurrency, result in by_concurrency.items():
                    kept = servers.setdefault(name, {}).setdefault(load, {})
                    if concurrency not in kept or result["items_per_second"] > kept[concurrency]["items_per_second"]:
                        kept[concurrency] = result
    print("\nbest of the rounds:")
    print(f"  in process: text batch-1 p50 {inproc['text_batch1_p50_us']:.1f} us, texts in batches of {args.max_batch} "
          f"{inproc['text_batched_items_per_second']:.0f}/s ({inproc['text_batched_items_per_cpu_second']:.0f}/CPU-s), "
          f"pictures in batches of 32 {inproc['image_batched_items_per_second']:.1f}/s "
          f"({inproc['image_batched_items_per_cpu_second']:.1f}/CPU-s)")
    for name, results in servers.items():
        for load, by_concurrency in results.items():
            for concurrency, result in sorted(by_concurrency.items()):
                print(f"  {describe(name, load, concurrency, result)}")

    # The targets. Each throughput ratio is taken both ways, per second of wall-clock and
    # per CPU-second of the processes, and a target is met only when both meet it: on a shared
    # machine one side of a wall-clock ratio can be starved by chance, never both figures.
    uform = servers["uform serve"]
    verdicts = []
    for load, reference_key in (("text", "text_batched_items_per_second"), ("pictures", "image_batched_items_per_second")):
        if load not in uform:
            continue
        best = max(r["items_per_second"] for r in uform[load].values())
        best_cpu = max(r.get("items_per_cpu_second", 0) for r in uform[load].values())
        ratio = best / inproc[reference_key]
        cpu_ratio = best_cpu / inproc[reference_key.replace("per_second", "per_cpu_second")]
        verdicts.append({"target": f"{load}: saturated throughput >= 90% of in-process batched encode",
                         "value": min(ratio, cpu_ratio), "met": min(ratio, cpu_ratio) >= 0.9,
                         "wall": ratio, "per_cpu_second": cpu_ratio,
                         "detail": f"{best:.1f} items/s against {inproc[reference_key]:.1f} in process ({ratio:.1%}); "
                                   f"per CPU-second {best_cpu:.1f} against "
                                   f"{inproc[reference_key.replace('per_second', 'per_cpu_second')]:.1f} ({cpu_ratio:.1%})"})
    if "text" in uform and 1 in uform["text"]:
        overhead = uform["text"][1]["p50_us"] - inproc["text_batch1_p50_us"]
        verdicts.append({"target": "text, concurrency 1: p50 <= in-process batch-1 p50 + 150 us", "value": overhead,
                         "met": overhead <= 150, "detail": f"p50 {uform['text'][1]['p50_us']:.1f} us, in process "
                                                           f"{inproc['text_batch1_p50_us']:.1f} us: +{overhead:.1f} us"})
    peers = [name for name in servers if name.startswith("FastAPI")]
    for load in uform:
        if not peers or 16 not in uform[load]:
            continue
        peer = max(peers, key=lambda name: servers[name][load][16]["items_per_second"])
        peer_cpu = max(servers[name][load][16].get("items_per_cpu_second", 0) for name in peers)
        mine, theirs = uform[load][16], servers[peer][load][16]
        ratio = mine["items_per_second"] / theirs["items_per_second"]
        cpu_ratio = mine.get("items_per_cpu_second", 0) / peer_cpu if peer_cpu else 0
        verdicts.append({"target": f"{load}, concurrency 16: >= 3x FastAPI's throughput, lower p99",
                         "value": min(ratio, cpu_ratio), "wall": ratio, "per_cpu_second": cpu_ratio,
                         "met": min(ratio, cpu_ratio) >= 3 and mine["p99_us"] < theirs["p99_us"],
                         "detail": f"{mine['items_per_second']:.1f} against {theirs['items_per_second']:.1f} items/s "
                                   f"({peer}): {ratio:.2f}x, per CPU-second {cpu_ratio:.2f}x; p99 "
                                   f"{mine['p99_us'] / 1000:.2f} against {theirs['p99_us'] / 1000:.2f} ms"})
    load_now = os.getloadavg()[0]
    if load_now > 1.5:
        print(f"\nnote: load average {load_now:.1f} from other processes: wall-clock figures are noisy; "
              "the per-CPU-second ones compare better")
    print("\ntargets:")
    for verdict in verdicts:
        print(f"  {'met    ' if verdict['met'] else 'NOT MET'}  {verdict['target']}: {verdict['detail']}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as file:
        json.dump({"benchmark": "serve", "cpu": cpu_name, "cpu_class": cpu_class, "server_cpus": args.server_cpus,
                   "client_cpus": args.client_cpus, "threads": threads, "seconds": args.seconds, "rounds": args.rounds,
                   "max_batch": args.max_batch, "compute": args.compute, "torch_precisions": args.torch_precisions,
                   "load_average": os.getloadavg()[0],
                   "checkpoint": checkpoint, "python": platform.python_version(), "in_process": inproc,
                   "servers": servers, "targets": verdicts}, file, indent=1)
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
