"""One member of a mesh run for test_mesh.py, started as its own process (a mesh joins processes).

Usage: mesh_member.py SPEC.json — the spec names the member's index and count, the folder and job,
the trainer settings, its share of the batch and the number of steps. Prints one JSON line: the
mesh's description and each step's answers, or the error it raised (class, status, message).
"""

import json
import sys
from pathlib import Path

import uform


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    answer = {}
    try:
        with uform.Executor.for_ram(threads=1) as executor:
            if spec.get("launcher") == "auto":  # the index, count, job and rendezvous from the variables
                mesh = uform.Mesh.bootstrap(executor, launcher="auto", timeout=spec["timeout"], address="127.0.0.1",
                                            trainer_config=spec["config"], agreement=spec.get("agreement"))
            else:
                mesh = uform.Mesh.bootstrap(executor, spec["index"], spec["count"], directory=spec["directory"],
                                            job=spec["job"], timeout=spec["timeout"], address="127.0.0.1",
                                            trainer_config=spec["config"], agreement=spec.get("agreement"))
            with mesh:
                shape = mesh.describe()
                answer["members_total"], answer["index"] = shape.members_total, shape.host_domain_index
                answer["launcher"] = shape.launcher
                trainer = uform.Trainer.init_ram(executor, mesh=mesh, **spec["config"])
                steps = []
                for _ in range(spec["steps"]):
                    result = trainer.on(executor).step(spec["contents"], "text", sides=spec["sides"],
                                                       relations=[tuple(r) for r in spec["relations"]])
                    steps.append({"loss": result.loss.hex(), "grad_norm": result.grad_norm.hex(), "step": result.step})
                answer["steps"] = steps
                trainer.on(executor).save(spec["save"])
    except uform.Error as error:
        answer["error"] = {"class": type(error).__name__, "status": int(error.status), "message": error.message}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
