"""Member processes for the mesh tests (test_mesh.py, test_index_mesh.py): each member is a Python
script given the path of its JSON spec, which prints one JSON answer as its last line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The launchers' variables, which a member must not inherit from the test's own environment.
LAUNCHERS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
             "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID")


def clean_environment():
    """This process's environment without any launcher's variables."""
    return {key: value for key, value in os.environ.items() if key not in LAUNCHERS}


def run(script: Path, folder: Path, job: str, members, wait: float, what: str):
    """Writes each (spec, environment) of `members` to FOLDER/JOB.memberI.json, starts `script` on it,
    and answers the last line each printed, parsed; fails the test when one outlives `wait` seconds
    (every member is then killed) or exits non-zero."""
    processes = []
    for index, (spec, environment) in enumerate(members):
        path = folder / f"{job}.member{index}.json"
        path.write_text(json.dumps(spec))
        processes.append(subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env=environment))
    answers = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
                other.wait()
            pytest.fail(f"{what} did not finish")
        assert process.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    return answers
