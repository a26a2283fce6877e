"""squeue/sinfo JSON as Slurm 22.05 and later releases print it, and what a job's state says of a cell."""

from __future__ import annotations

import json

import pytest

from refenv.engines.slurm import state
from refenv.errors import RefenvError
from refenv.model.matrix import Host
from refenv.model.placement import SlurmPlacement

# Slurm 22.05.8 (Debian 12), trimmed from a real `squeue --json`.
SQUEUE_22 = {"jobs": [
    {"job_id": 7, "name": "refenv-run-1", "job_state": "COMPLETED", "state_reason": "None", "exit_code": 0,
     "nodes": "vm", "start_time": 1796133253, "array_job_id": 0, "array_task_id": None},
    {"job_id": 8, "name": "refenv-run-1", "job_state": "TIMEOUT", "state_reason": "TimeLimit", "exit_code": 0,
     "nodes": "vm", "start_time": 1796133260, "array_job_id": 0, "array_task_id": None},
    {"job_id": 9, "name": "x", "job_state": "PENDING", "state_reason": "BadConstraints", "exit_code": 0,
     "nodes": "", "start_time": 0, "array_job_id": 0, "array_task_id": None},
]}
# Slurm 24.x prints states as lists and numbers as {set, infinite, number}.
SQUEUE_24 = {"jobs": [
    {"job_id": 12, "name": "refenv-r", "job_state": ["FAILED"], "state_reason": "NonZeroExitCode",
     "exit_code": {"status": ["EXITED"], "return_code": {"set": True, "infinite": False, "number": 1}},
     "nodes": "n1", "start_time": {"set": True, "infinite": False, "number": 1796133253},
     "array_job_id": {"set": True, "number": 11}, "array_task_id": {"set": True, "number": 3}},
]}
SINFO = {"nodes": [
    {"name": "n1", "state": "idle", "features": "driver_r535,h100", "active_features": "driver_r535,h100",
     "gres": "gpu:h100:8(S:0-1)", "partitions": ["gpu"], "cpus": 64, "real_memory": 512000},
    {"name": "n2", "state": ["MIXED"], "features": "driver_r570,a100", "active_features": "driver_r570,a100",
     "gres": "gpu:a100:4,shard:8", "partitions": ["gpu", "debug"], "cpus": 32, "real_memory": 256000},
]}


def test_squeue_of_slurm_22_and_later_releases() -> None:
    old = state.jobs(json.dumps(SQUEUE_22))
    assert old["7"].state == "COMPLETED" and old["7"].terminal and old["7"].started
    assert old["9"].state == "PENDING" and not old["9"].terminal and not old["9"].started
    assert old["9"].reason in state.NEVER
    new = state.jobs(json.dumps(SQUEUE_24))
    task = new["11_3"]
    assert task.state == "FAILED" and task.exit_code == 1 and task.started and task.name == "refenv-r"


def test_sinfo_nodes() -> None:
    n1, n2 = state.nodes(json.dumps(SINFO))
    assert n1.features == ("driver_r535", "h100") and n1.partitions == ("gpu",) and n1.cpus == 64
    assert n2.state == "mixed" and n2.memory_mb == 256000
    assert state.gres_types([n1, n2]) == {"gpu", "gpu:h100", "gpu:a100", "shard"}


@pytest.mark.parametrize(("constraint", "features"), [
    ("driver_r535", ("driver_r535",)),
    ("driver_r535&h100", ("driver_r535", "h100")),
    ("[driver_r535|driver_r570]&h100*2", ("driver_r535", "driver_r570", "h100")),
    ("(a|b)&c", ("a", "b", "c")),
])
def test_constraint_features(constraint: str, features: tuple[str, ...]) -> None:
    assert state.constraint_features(constraint) == features


def _job(state_: str, started: bool = True, reason: str = "None") -> state.Job:
    return state.Job("1", "refenv-r", state_, reason, 0, "n1" if started else "", started)


def test_scheduler_states_only_fill_the_gaps() -> None:
    assert state.gap(_job("TIMEOUT")).kind == "timeout"
    assert state.gap(_job("OUT_OF_MEMORY")).kind == "oom"
    never = state.gap(_job("CANCELLED", started=False, reason="BadConstraints"))
    assert never.kind == "not_run" and "BadConstraints" in never.reason
    assert state.gap(_job("CANCELLED")).kind == "error"
    assert state.gap(_job("NODE_FAIL")).kind == "error"


def test_an_unknown_constraint_is_refused_with_the_clusters_features() -> None:
    nodes = state.nodes(json.dumps(SINFO))
    ok = Host("r535-h100", "real", slurm=SlurmPlacement(constraint="driver_r535&h100", gres="gpu:h100:1",
                                                        partition="gpu"))
    state.check_placements((ok, Host("r580", "simulated", "r580")), nodes)
    bad = Host("r580-b200", "real", slurm=SlurmPlacement(constraint="driver_r580&b200"))
    with pytest.raises(RefenvError) as err:
        state.check_placements((ok, bad), nodes)
    assert "driver_r580, b200" in err.value.message and "r580-b200" in err.value.message
    assert err.value.hint is not None and "driver_r535" in err.value.hint
    with pytest.raises(RefenvError, match="partition"):
        state.check_placements((Host("x", "real", slurm=SlurmPlacement(partition="big")),), nodes)
    with pytest.raises(RefenvError, match="GRES"):
        state.check_placements((Host("x", "real", slurm=SlurmPlacement(gres="gpu:b200:1")),), nodes)


def test_array_tasks_not_yet_started_are_found_in_their_arrays_record() -> None:
    # Slurm 22.05.8 here: task 0 runs, tasks 1-3 wait in the array's own record (job 63, '1-3').
    listed = state.jobs(json.dumps({"jobs": [
        {"job_id": 64, "name": "refenv-r", "job_state": "RUNNING", "state_reason": "None", "exit_code": 0,
         "nodes": "vm", "start_time": 1796134567, "array_job_id": 63, "array_task_id": 0, "array_task_string": ""},
        {"job_id": 63, "name": "refenv-r", "job_state": "PENDING", "state_reason": "Resources", "exit_code": 0,
         "nodes": "", "start_time": 0, "array_job_id": 63, "array_task_id": None, "array_task_string": "1-3"},
    ]}))
    running = state.find(listed, "63_0")
    assert running is not None and running.state == "RUNNING" and running.started
    waiting = state.find(listed, "63_2")
    assert waiting is not None and waiting.state == "PENDING" and waiting.reason == "Resources"
    assert not waiting.started
    assert state.find(listed, "63_4") is None
    assert state.task_ids("4,6-9%2") == {4, 6, 7, 8, 9} and state.task_ids("0-6:3") == {0, 3, 6}
