#!/usr/bin/python3
"""Prepares and runs the published-checkpoint benchmark (bench/bench_published.c); `make bench` and
the CMake target bench_published_run call it through the generated build/bench/bench_published.

    /usr/bin/python3 bench/published_run.py --bench PROGRAM --data DIR [--writers DIR] [--no-npm]
                                            [-- ARGUMENTS OF THE PROGRAM]

1. bench/published_data.py DIR: the three folders, 32 JPEG files, 32 sentences (kept when present).
2. bench/published_export.py --keep for each folder: DIR/onnx/<folder>/model.onnx and model_int8.onnx.
3. The ONNX Runtime peers' packages, pinned, into DIR/npm/<name>/node_modules from the npm registry
   (--ignore-scripts: onnxruntime-node's install script fetches GPU providers from outside the
   registry; the CPU library ships inside the package):
     ort121  onnxruntime-node 1.21.0 + @huggingface/transformers 3.5.2 (whose dependency it is)
     ort130  onnxruntime-node 1.30.0 + @huggingface/transformers 4.3.1 (whose dependency it is)
   Each pair is one ONNX Runtime in one process: transformers.js loads the onnxruntime-node it
   depends on, and the peer's sessions come from the same one. A pair that cannot be installed
   (no node, no npm, no registry) is left out with a message; the run goes on without it.
4. PROGRAM --data DIR --ort DIR/npm/<name> ... with the remaining arguments.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import published_data  # noqa: E402

PINS = {"ort121": {"onnxruntime-node": "1.21.0", "@huggingface/transformers": "3.5.2"},
        "ort130": {"onnxruntime-node": "1.30.0", "@huggingface/transformers": "4.3.1"}}
GRAPHS = {"clip-vit-b32": "image", "minilm-l6": "text", "bert-base": "text"}


def installed(prefix, package):
    try:
        with open(os.path.join(prefix, "node_modules", package, "package.json")) as handle:
            return json.load(handle).get("version")
    except OSError:
        return None


def npm_install(directory):
    """The prefixes whose pinned packages are in place (installing them when needed)."""
    ready = []
    for name, pins in PINS.items():
        prefix = os.path.join(directory, name)
        if all(installed(prefix, package) == version for package, version in pins.items()):
            ready.append(prefix)
            continue
        if not shutil.which("node") or not shutil.which("npm"):
            print(f"published_run: no node or npm: the ONNX Runtime peer {name} is left out", file=sys.stderr)
            continue
        os.makedirs(prefix, exist_ok=True)
        command = ["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
                   "--ignore-scripts"] + [f"{package}@{version}" for package, version in pins.items()]
        result = subprocess.run(command)
        if result.returncode == 0 and all(installed(prefix, p) == v for p, v in pins.items()):
            ready.append(prefix)
        else:
            print(f"published_run: `{' '.join(command)}` failed: the ONNX Runtime peer {name} is left out", file=sys.stderr)
    return ready


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", required=True, help="the bench_published program")
    parser.add_argument("--data", required=True)
    parser.add_argument("--writers", default=os.path.join(HERE, "..", "tests", "published"))
    parser.add_argument("--no-npm", action="store_true", help="run without the ONNX Runtime peers")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of the program (after --)")
    args = parser.parse_args(argv)
    published_data.main([args.data, "--writers", args.writers])
    for folder, kind in GRAPHS.items():
        subprocess.run([sys.executable, os.path.join(HERE, "published_export.py"), kind,
                        os.path.join(args.data, "folders", folder), os.path.join(args.data, "onnx", folder), "--keep"],
                       check=True)
    prefixes = [] if args.no_npm else npm_install(os.path.join(args.data, "npm"))
    command = [args.bench, "--data", args.data]
    for prefix in prefixes:
        command += ["--ort", prefix]
    command += [word for word in args.rest if word != "--"]
    for at, word in enumerate(command[:-1]):                  # the JSON's folder (bench/results is not in git)
        if word == "--json":
            os.makedirs(os.path.dirname(os.path.abspath(command[at + 1])), exist_ok=True)
    print("published_run:", " ".join(command), flush=True)
    os.execv(args.bench, command)


if __name__ == "__main__":
    main()
