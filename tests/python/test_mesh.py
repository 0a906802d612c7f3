"""The mesh from Python: a mesh of one is no mesh at all, two member processes stepping their
shares equal one process with the whole batch and each other, and refusals name what was wrong."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import uform

MEMBER = Path(__file__).with_name("mesh_member.py")
PAIRS = [("a red square", "red square picture"), ("a blue circle", "blue circle picture"),
         ("a green star", "green star picture"), ("a grey cross", "grey cross picture")]


def share(pairs):
    """Texts of query/document pairs: contents, sides and relations in the share's own indices."""
    contents = [text for pair in pairs for text in pair]
    return contents, [0, 1] * len(pairs), [(2 * i, 2 * i + 1) for i in range(len(pairs))]


def run_members(tmp_path, job, configs, shares, steps=2, timeout=60, count=None):
    """Starts one process per member and answers what each printed."""
    processes = []
    for index, (config, pairs) in enumerate(zip(configs, shares)):
        contents, sides, relations = share(pairs)
        spec = {"index": index, "count": count or len(configs), "directory": str(tmp_path), "job": job,
                "timeout": timeout, "config": config, "contents": contents, "sides": sides, "relations": relations,
                "steps": steps, "save": str(tmp_path / f"{job}.member{index}.safetensors"), "agreement": {"pairs": 4}}
        path = tmp_path / f"{job}.member{index}.json"
        path.write_text(json.dumps(spec))
        processes.append(subprocess.Popen([sys.executable, str(MEMBER), str(path)], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
    answers = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=timeout + 60)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
                other.wait()
            pytest.fail("a mesh member did not finish")
        assert process.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    return answers


def test_a_mesh_of_one_is_no_mesh():
    contents, sides, relations = share(PAIRS)
    executor = uform.Executor()
    with uform.Mesh.bootstrap(executor) as mesh:
        shape = mesh.describe()
        assert (shape.members_total, shape.host_domain_index, shape.members_per_host_domain) == (1, 0, 1), shape
        meshed = uform.Trainer.init_ram(executor, mesh=mesh, seed=3)
        with uform.Trainer.init_ram(executor, seed=3) as alone:
            for _ in range(2):
                a = meshed.on(executor).step(contents, "text", sides=sides, relations=relations)
                b = alone.on(executor).step(contents, "text", sides=sides, relations=relations)
                assert (a.loss.hex(), a.grad_norm.hex()) == (b.loss.hex(), b.grad_norm.hex()), (a, b)
                assert np.array_equal(a.bag_embeddings, b.bag_embeddings)
    with pytest.raises(uform.InvalidArgument, match="the trainer is closed"):
        meshed.describe()  # closing the mesh closed the trainers made over it


def test_two_members_equal_one_process(tmp_path):
    config = {"seed": 3}
    answers = run_members(tmp_path, "parity", [config, config], [PAIRS[:2], PAIRS[2:]])
    for index, answer in enumerate(answers):
        assert "error" not in answer, answer
        assert answer["members_total"] == 2 and answer["index"] == index, answer
    assert len(answers[0]["steps"]) == 2, answers  # two steps ran (the loop below compares each)
    assert answers[0]["steps"] == answers[1]["steps"], answers  # the global losses, bit for bit
    first, second = (tmp_path / "parity.member0.safetensors").read_bytes(), (tmp_path / "parity.member1.safetensors").read_bytes()
    assert first == second, "the members' weights differ"
    contents, sides, relations = share(PAIRS)
    with uform.Trainer.init_ram(None, **config) as alone:
        for k, member_step in enumerate(answers[0]["steps"]):
            result = alone.on(uform.Executor()).step(contents, "text", sides=sides, relations=relations)
            assert member_step["step"] == result.step
            for key in ("loss", "grad_norm"):
                theirs, ours = float.fromhex(member_step[key]), getattr(result, key)
                assert abs(theirs - ours) <= 1e-5 * abs(ours) + 1e-7, f"step {k + 1} {key}: mesh {theirs} vs one process {ours}"
    job = tmp_path / "parity"
    assert not job.exists() or not any(job.iterdir()), f"the job folder was not left clean: {list(job.iterdir())}"


def test_disagreements_and_absences_are_named(tmp_path):
    answers = run_members(tmp_path, "mismatch", [{"seed": 3}, {"seed": 4}], [PAIRS[:2], PAIRS[2:]], steps=1, timeout=20)
    for answer in answers:
        assert answer["error"]["class"] == "ConfigMismatch", answer
        assert "seed" in answer["error"]["message"], answer
    (alone,) = run_members(tmp_path, "absent", [{"seed": 3}], [PAIRS[:2]], steps=1, timeout=1, count=2)
    assert alone["error"]["class"] == "Timeout", alone
    assert "1" in alone["error"]["message"], alone
    with pytest.raises(uform.InvalidArgument, match="index"):
        uform.Mesh.bootstrap(None, index=2, count=2, directory=tmp_path, job="bad", timeout=1)
    with pytest.raises(uform.InvalidArgument, match="timeout"):
        uform.Mesh.bootstrap(None, timeout=-1)
    with pytest.raises(uform.InvalidArgument, match="agreement"):
        uform.Mesh.bootstrap(None, agreement={"a=b": 1})
    with pytest.raises(uform.InvalidArgument, match="not a trainer setting"):
        uform.Mesh.bootstrap(None, trainer_config={"mesh": None})
    with pytest.raises(uform.InvalidArgument, match="mesh: expected a uform.Mesh"):
        uform.Trainer.init_ram(None, mesh="mesh")
