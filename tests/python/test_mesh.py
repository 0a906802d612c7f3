"""The mesh from Python: a mesh of one is no mesh at all, two member processes stepping their
shares equal one process with the whole batch and each other (by hand in a folder, and started as
torchrun would start them, meeting at a tcp:// store), a launcher's variables read, a batch in chunks
equal to the batch at once, and refusals name what was wrong."""

import socket
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


from members import LAUNCHERS, clean_environment, run as run_processes


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_members(tmp_path, job, configs, shares, steps=2, timeout=60, count=None, torchrun=False):
    """Starts one process per member (with torchrun's variables when `torchrun`) and answers what
    each printed."""
    processes = []
    port = free_port() - 1
    for index, (config, pairs) in enumerate(zip(configs, shares)):
        contents, sides, relations = share(pairs)
        spec = {"index": index, "count": count or len(configs), "directory": str(tmp_path), "job": job,
                "timeout": timeout, "config": config, "contents": contents, "sides": sides, "relations": relations,
                "steps": steps, "save": str(tmp_path / f"{job}.member{index}.safetensors"), "agreement": {"pairs": 4}}
        environment = clean_environment()
        if torchrun:
            spec["launcher"] = "auto"
            environment.update(RANK=str(index), WORLD_SIZE=str(len(configs)), LOCAL_RANK=str(index),
                               LOCAL_WORLD_SIZE=str(len(configs)), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                               TORCHELASTIC_RUN_ID=job)
        processes.append((spec, environment))
    return run_processes(MEMBER, tmp_path, job, processes, timeout + 60, "a mesh member")


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


def test_members_started_as_torchrun_starts_them(tmp_path):
    config = {"seed": 3}
    by_hand = run_members(tmp_path, "hand", [config, config], [PAIRS[:2], PAIRS[2:]])
    launched = run_members(tmp_path, "launched", [config, config], [PAIRS[:2], PAIRS[2:]], torchrun=True)
    for index, answer in enumerate(launched):
        assert "error" not in answer, answer
        assert (answer["members_total"], answer["index"], answer["launcher"]) == (2, index, "torchrun"), answer
    assert [a["steps"] for a in launched] == [a["steps"] for a in by_hand], (launched, by_hand)
    assert (tmp_path / "launched.member0.safetensors").read_bytes() == (tmp_path / "hand.member0.safetensors").read_bytes()


def test_a_launchers_variables_are_read(monkeypatch):
    for key in LAUNCHERS:
        monkeypatch.delenv(key, raising=False)
    assert uform.Mesh.launch().launcher == "none"
    for key, value in {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_NODEID": "2",
                       "SLURM_STEP_TASKS_PER_NODE": "2(x4)", "SLURM_JOB_ID": "12345",
                       "SLURM_STEP_NODELIST": "gpu[07-10]"}.items():
        monkeypatch.setenv(key, value)
    launch = uform.Mesh.launch()
    assert (launch.launcher, launch.index, launch.count, launch.local_index, launch.local_count) == ("slurm", 5, 8, 1, 2)
    assert (launch.job, launch.rendezvous) == ("12345", "tcp://gpu07:22345"), launch
    monkeypatch.setenv("RANK", "9")  # torchrun's, read first, and incomplete
    with pytest.raises(uform.InvalidArgument, match="RANK=9 is set but WORLD_SIZE is not"):
        uform.Mesh.launch()
    with pytest.raises(uform.InvalidArgument, match="RANK=9 is set but WORLD_SIZE is not"):
        uform.Mesh.bootstrap(None, launcher="auto")
    with pytest.raises(uform.InvalidArgument, match="launcher"):
        uform.Mesh.bootstrap(None, launcher="slurm")


def test_a_batch_in_chunks_steps_like_the_whole_batch():
    contents, sides, relations = share(PAIRS)
    executor = uform.Executor.for_ram(threads=1)
    with uform.Trainer.init_ram(executor, seed=3) as whole, uform.Trainer.init_ram(executor, seed=3) as chunked:
        for _ in range(2):
            a = whole.on(executor).step(contents, "text", sides=sides, relations=relations)
            b = chunked.on(executor).step(contents, "text", sides=sides, relations=relations, accumulate=3, stats=True)
            assert b.stats.chunks == 3, b.stats
            for key in ("loss", "grad_norm"):
                assert abs(getattr(a, key) - getattr(b, key)) <= 1e-6 * abs(getattr(a, key)), (key, a, b)
            assert np.allclose(a.bag_embeddings, b.bag_embeddings, rtol=0, atol=1e-5)  # the weights differ by rounding


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
