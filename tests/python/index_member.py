"""One member of an index built by a mesh, for test_index_mesh.py, started as its own process.

Usage: index_member.py SPEC.json — the spec names the member's index and count, the folder and job,
and what to build: "vectors" (the whole .npy matrix mapped, each member storing its block) or
"encode" (a manifest encoded with a checkpoint), with the FAISS recipe and its settings. Prints one
JSON line: the BuildResult's counts, or the error it raised (class, status, message).
"""

import json
import sys
from pathlib import Path

import numpy as np

import uform


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    answer = {}
    try:
        with uform.Executor.for_ram(threads=1) as executor:
            with uform.Mesh.bootstrap(executor, spec["index"], spec["count"], directory=spec["directory"],
                                      job=spec["job"], timeout=spec["timeout"], address="127.0.0.1") as mesh:
                settings = dict(out=spec["out"], mesh=mesh, ann=spec["ann"], ann_train=spec["ann_train"], ann_threads=1,
                                ann_ondisk=spec.get("ann_ondisk", False))
                if spec["kind"] == "vectors":
                    rows = np.load(spec["vectors"], mmap_mode="r")  # every member maps the whole matrix
                    result = uform.Index.build(vectors=rows, **settings)
                else:
                    with uform.Model.load_ram(executor, spec["checkpoint"]) as model:
                        result = uform.Index.build(model, manifests=[spec["manifest"]], executor=executor,
                                                   batch=spec["batch"], **settings)
                answer["indexed"], answer["failed"] = result.indexed, result.failed
    except uform.Error as error:
        answer["error"] = {"class": type(error).__name__, "status": int(error.status), "message": error.message}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
