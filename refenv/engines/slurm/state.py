"""What squeue and sinfo say, read from their JSON (pure), and what scheduler states mean for a cell.

Slurm 22.05 prints `job_state` as a string and `exit_code` as a number; later releases print lists and
objects (`["COMPLETED"]`, `{"return_code": {"number": 0}}`): both are read. A job's state never decides
a cell's outcome (the harness exits 1 on a failing verdict, so a good cell is FAILED); it only fills the
gaps where the cell wrote nothing: a time limit, an OOM kill, a job that never started, a cancellation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from refenv.errors import RefenvError
from refenv.model.matrix import Host

# Job states after which nothing more happens (squeue(1) JOB STATE CODES).
TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                      "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"})
# Pending reasons that will not clear by waiting: the job would never start.
NEVER = frozenset({"BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit", "PartitionDown", "InvalidAccount",
                   "InvalidQOS", "ReqNodeNotAvail", "NodeDown", "QOSMaxWallDurationPerJobLimit",
                   "AssocMaxWallDurationPerJobLimit", "JobHeldAdmin", "DependencyNeverSatisfied"})


@dataclass(frozen=True)
class Job:
    """One job as squeue lists it."""

    job_id: str
    name: str
    state: str
    reason: str
    exit_code: int | None
    nodes: str
    started: bool          # it ran (a start time and a node), whatever happened after
    tasks: str = ""        # an array's tasks not yet started ('1-3', '4,6-9%2'): listed as one job

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


@dataclass(frozen=True)
class Node:
    """One node as sinfo lists it."""

    name: str
    state: str
    features: tuple[str, ...]
    gres: str
    partitions: tuple[str, ...]
    cpus: int
    memory_mb: int


@dataclass(frozen=True)
class Gap:
    """What a job's state says about a cell that wrote no outcome."""

    kind: str              # "timeout", "oom", "not_run", "error"
    reason: str


def _state(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else "UNKNOWN"
    return str(value or "UNKNOWN")


def _exit_code(value: Any) -> int | None:
    if isinstance(value, int):
        return value >> 8 if value > 255 else value
    if isinstance(value, dict):
        rc = value.get("return_code")
        if isinstance(rc, dict):
            return int(rc["number"]) if rc.get("set") and "number" in rc else None
        return int(rc) if isinstance(rc, int) else None
    return None


def _number(value: Any) -> int:
    if isinstance(value, dict):
        return int(value.get("number") or 0)
    return int(value or 0)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value if v)
    return tuple(v for v in str(value or "").split(",") if v)


def jobs(text: str) -> dict[str, Job]:
    """`squeue --json`'s jobs by id (array tasks as `ARRAY_TASK`)."""
    out: dict[str, Job] = {}
    for j in json.loads(text).get("jobs") or []:
        job_id = str(j.get("job_id"))
        task = j.get("array_task_id")
        task_number = _number(task) if isinstance(task, (int, dict)) else None
        if j.get("array_job_id") and task_number is not None and (not isinstance(task, dict) or task.get("set")):
            job_id = f"{_number(j['array_job_id'])}_{task_number}"
        out[job_id] = Job(job_id, str(j.get("name") or ""), _state(j.get("job_state")),
                          str(j.get("state_reason") or "None"), _exit_code(j.get("exit_code")),
                          str(j.get("nodes") or ""), bool(_number(j.get("start_time"))) and bool(j.get("nodes")),
                          str(j.get("array_task_string") or ""))
    return out


def task_ids(text: str) -> set[int]:
    """The task numbers of an array's task string ('1-3', '4,6-9%2', '0-10:2')."""
    out: set[int] = set()
    for part in text.partition("%")[0].split(","):
        span, _, step = part.partition(":")
        first, _, last = span.partition("-")
        if first.isdigit():
            out.update(range(int(first), int(last or first) + 1, int(step or 1)))
    return out


def find(listed: dict[str, Job], job_id: str) -> Job | None:
    """A job, or an array task (`A_i`) that squeue still lists inside its array's pending record."""
    if job_id in listed:
        return listed[job_id]
    array, _, task = job_id.partition("_")
    pending = listed.get(array)
    if task.isdigit() and pending is not None and int(task) in task_ids(pending.tasks):
        return Job(job_id, pending.name, pending.state, pending.reason, None, "", False)
    return None


def nodes(text: str) -> list[Node]:
    """`sinfo --json`'s nodes."""
    return [Node(str(n.get("name")), _state(n.get("state")).lower(), _strings(n.get("active_features")
                                                                                or n.get("features")),
                 str(n.get("gres") or ""), _strings(n.get("partitions")), _number(n.get("cpus")),
                 _number(n.get("real_memory")))
            for n in json.loads(text).get("nodes") or []]


FEATURE = re.compile(r"[A-Za-z0-9_.\-]+")


def constraint_features(constraint: str) -> tuple[str, ...]:
    """The feature names in a --constraint expression (`a&b`, `a|b`, `[a|b]`, `a*2`, parentheses)."""
    cleaned = re.sub(r"\*\d+", "", constraint)
    return tuple(dict.fromkeys(FEATURE.findall(cleaned)))


def unknown_features(constraint: str, cluster: list[Node]) -> tuple[str, ...]:
    """The constraint's features that no node of the cluster has."""
    have = {f for n in cluster for f in n.features}
    return tuple(f for f in constraint_features(constraint) if f not in have)


def gres_types(cluster: list[Node]) -> set[str]:
    """`gpu` and `gpu:TYPE` for every GRES the nodes carry (`gpu:sim:2(S:0)` gives gpu and gpu:sim)."""
    out: set[str] = set()
    for n in cluster:
        for item in re.split(r",(?![^(]*\))", n.gres):
            parts = re.sub(r"\(.*\)", "", item).split(":")
            if parts and parts[0] and parts[0] != "(null)":
                out.add(parts[0])
                if len(parts) == 3:
                    out.add(f"{parts[0]}:{parts[1]}")
    return out


def gap(job: Job) -> Gap:
    """What the scheduler says of a cell that left no outcome behind."""
    if job.state in {"TIMEOUT", "DEADLINE"}:
        return Gap("timeout", "the job outlived its time limit and Slurm killed it")
    if job.state == "OUT_OF_MEMORY":
        return Gap("oom", "Slurm killed the job for memory")
    if not job.started:
        return Gap("not_run", f"Slurm never started the job ({job.state}: {job.reason})")
    if job.state == "CANCELLED":
        return Gap("error", f"the job was cancelled while it ran ({job.reason})")
    return Gap("error", f"the job ended {job.state} (exit {job.exit_code}, {job.reason}) and wrote no outcome")


def check_placements(hosts: tuple[Host, ...], nodes: list[Node]) -> None:
    """Refuse, before any job is submitted, a placement the cluster cannot satisfy: a feature no node has,
    a partition or a GRES that does not exist."""
    partitions = {p for n in nodes for p in n.partitions}
    gres = gres_types(nodes)
    for host in hosts:
        p = host.slurm
        if p is None:
            continue
        if p.constraint:
            missing = unknown_features(p.constraint, nodes)
            if missing:
                have = sorted({f for n in nodes for f in n.features})
                raise RefenvError(f"host {host.name}: slurm.constraint {p.constraint!r} names feature(s) no node "
                                  f"has: {', '.join(missing)}", f"the cluster's features: {', '.join(have) or 'none'}")
        if p.partition and p.partition not in partitions:
            raise RefenvError(f"host {host.name}: slurm.partition {p.partition!r} does not exist",
                              f"partitions: {', '.join(sorted(partitions))}")
        if p.gres:
            name = ":".join(part for part in p.gres.split(":") if not part.isdigit())
            if name not in gres:
                raise RefenvError(f"host {host.name}: slurm.gres {p.gres!r}: no node has that GRES",
                                  f"the cluster's GRES: {', '.join(sorted(gres)) or 'none'}")
