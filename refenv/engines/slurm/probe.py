"""Probe jobs: `python -m harness diagnose --json` on each node of a partition, pinned with --nodelist.

The harness runs on the node itself, from this project folder (it needs only the standard library), so
the folder must be on a filesystem the nodes share, as the results folder must be for cells.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from harness.schema.envelope import DiagnoseDocument
from refenv import paths
from refenv.engines.seam import NodeProbe
from refenv.engines.slurm import state
from refenv.engines.slurm.client import Commands
from refenv.errors import RefenvError
from refenv.model import codec
from refenv.model.placement import SlurmPlacement

ROOT = paths.harness_dir().parent  # the folder that holds harness/: the checkout, or site-packages


def probe_script(root: Path, out: Path, python: str = "python3") -> str:
    """The probe job's script (pure): the diagnosis of the node, written where the submitter reads it."""
    q = shlex.quote
    return (
        "#!/bin/bash\n"
        "# refenv probe: this node's driver and GPUs\n"
        f"cd {q(str(root))}\n"
        f"PYTHONPATH={q(str(root))} {q(python)} -m harness diagnose --json > {q(str(out))}.tmp\n"
        f"mv {q(str(out))}.tmp {q(str(out))}\n"
    )


def probe_nodes(folder: Path, partition: str | None = None, commands: Commands | None = None,
                timeout_s: float = 300.0, poll_s: float = 0.5) -> list[NodeProbe]:
    """Every node of `partition` (or of the cluster) that is up answers one probe job; all are waited for
    together with one `squeue --json` per poll."""
    cmd = commands or Commands()
    folder.mkdir(parents=True, exist_ok=True)
    cluster = state.nodes(cmd.sinfo_json())
    partitions = sorted({p for n in cluster for p in n.partitions})
    if partition is not None and partition not in partitions:
        raise RefenvError(f"partition {partition!r} does not exist", f"partitions: {', '.join(partitions) or 'none'}")
    nodes = [n for n in cluster
             if (partition is None or partition in n.partitions) and not n.state.startswith(("down", "drain"))]
    jobs: dict[str, tuple[state.Node, Path, str]] = {}
    probes: dict[str, NodeProbe] = {}
    for node in nodes:
        out = folder / f"{node.name}.json"
        script = folder / f"{node.name}.sh"
        script.write_text(probe_script(ROOT, out), encoding="utf-8")
        argv = ["sbatch", "--parsable", "--job-name=refenv-probe", f"--nodelist={node.name}", "--time=5",
                "--cpus-per-task=1", "--mem=500M", f"--output={folder / node.name}.log"]
        if partition:
            argv.append(f"--partition={partition}")
        try:
            jobs[cmd.sbatch([*argv, str(script)])] = (node, out, "")
        except Exception as exc:  # one node refusing must not hide the others
            probes[node.name] = NodeProbe(node.name, node.features, node.gres, None, str(exc))
    deadline = time.monotonic() + timeout_s
    while jobs and time.monotonic() < deadline:
        listed = state.jobs(cmd.squeue_json())
        for job_id, (node, out, _) in list(jobs.items()):
            job = listed.get(job_id)
            if out.is_file() or job is None or job.terminal:
                probes[node.name] = _read(node, out, job)
                del jobs[job_id]
        time.sleep(poll_s)
    if jobs:
        cmd.scancel(list(jobs))
        for node, _, _ in jobs.values():
            probes[node.name] = NodeProbe(node.name, node.features, node.gres, None,
                                          f"no answer within {timeout_s:g} s")
    return [probes[n.name] for n in nodes if n.name in probes]


def probe_placement(folder: Path, name: str, placement: SlurmPlacement, commands: Commands | None = None,
                    timeout_s: float = 300.0, poll_s: float = 0.5) -> NodeProbe:
    """One probe job where a real host's cells would run (its constraint, GRES, partition, account); the
    probe names the node that answered, and the host's cells are then pinned to it."""
    cmd = commands or Commands()
    folder.mkdir(parents=True, exist_ok=True)
    out, script = folder / f"host-{name}.json", folder / f"host-{name}.sh"
    script.write_text(probe_script(ROOT, out), encoding="utf-8")
    argv = ["sbatch", "--parsable", "--job-name=refenv-probe", "--time=5", "--cpus-per-task=1", "--mem=500M",
            f"--output={folder}/host-{name}.log"]
    argv += [f"--{flag}={value}" for flag, value in (("constraint", placement.constraint), ("gres", placement.gres),
                                                     ("partition", placement.partition),
                                                     ("account", placement.account)) if value]
    job_id = cmd.sbatch([*argv, str(script)])
    deadline = time.monotonic() + timeout_s
    job: state.Job | None = None
    while time.monotonic() < deadline:
        job = state.jobs(cmd.squeue_json()).get(job_id) or job
        if out.is_file() or (job is not None and job.terminal):  # a job gone from squeue may have answered
            break
        time.sleep(poll_s)
    else:
        cmd.scancel([job_id])
    node = state.Node(job.nodes if job and job.nodes else "", "", (), "", (), 0, 0)
    return _read(node, out, job)


def _read(node: state.Node, out: Path, job: state.Job | None) -> NodeProbe:
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        why = f"job {job.state} ({job.reason})" if job else str(exc)
        return NodeProbe(node.name, node.features, node.gres, None, f"the probe wrote no diagnosis: {why}")
    try:
        doc = codec.decode(DiagnoseDocument, data)
    except codec.DecodeError as exc:
        return NodeProbe(node.name, node.features, node.gres, None,
                         f"the probe wrote a diagnosis this refenv cannot read: {exc.message}")
    return NodeProbe(node.name, node.features, node.gres, doc)
