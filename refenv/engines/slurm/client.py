"""The Slurm commands refenv runs (srun, sbatch, squeue, sinfo, scancel), each a subprocess with a time limit
(srun in the background, for as long as its job runs).

No Python Slurm library: pyslurm is tied to one Slurm release and submitit runs pickled functions, not
containers (facts/cluster.md). `sacct` is not used: it needs accounting, which clusters do not always run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from refenv.errors import RefenvError


class SlurmError(RefenvError):
    """A Slurm command failed or is missing; carries what it printed."""


def _run(argv: Sequence[str], timeout: float = 60.0) -> str:
    if shutil.which(argv[0]) is None:
        raise SlurmError(f"{argv[0]} is not installed here", "install Slurm's client commands (Debian: slurm-client), "
                         "or run .ci/slurm-up for a single-node cluster on this machine")
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]} did not answer within {timeout:g} s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().removeprefix(f"{argv[0]}: error: ")
        raise SlurmError(f"{argv[0]} failed: {said}")
    return done.stdout


_QUEUED_RE = re.compile(r"job (\d+) queued")


def srun(argv: Sequence[str], job_id_file: Path, errors: Path, timeout: float = 60.0) -> str:
    """Start `srun` in the background (a session of its own: a Ctrl-C meant for refenv is not srun's) and
    return its job id, once its script wrote it to `job_id_file` (it started) or srun said it queued the job.

    srun asks for its allocation in the request itself, where sbatch's job waits for the controller's next
    scheduling pass and then the batch launch: measured here, a job started 0.02-0.03 s after srun was called
    and 0.16-2.0 s after sbatch. The job ends when its script does; srun with it.
    """
    if shutil.which(argv[0]) is None:
        raise SlurmError(f"{argv[0]} is not installed here", "install Slurm's client commands (Debian: slurm-client)")
    reap()
    errors.parent.mkdir(parents=True, exist_ok=True)
    with errors.open("wb") as err:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                   start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        written = job_id_file.read_text(encoding="utf-8").strip() if job_id_file.is_file() else ""
        said = errors.read_text(encoding="utf-8", errors="replace")
        queued = _QUEUED_RE.search(said)
        if written.isdigit() or queued:
            _STARTED.append(process)
            return written if written.isdigit() else queued.group(1) if queued else ""
        if process.poll() is not None:
            last = [ln for ln in said.splitlines() if ln.strip()]
            raise SlurmError(f"{argv[0]} failed: {(last[-1] if last else f'exit {process.returncode}')}"
                             .replace(f"{argv[0]}: error: ", ""))
        time.sleep(0.01)
    process.terminate()
    raise SlurmError(f"{argv[0]} did not start its job within {timeout:g} s")


# The srun processes started here, waited for (reaped) as they end: one per pack, each as long as its job.
_STARTED: list[subprocess.Popen[bytes]] = []


def reap() -> None:
    """Collect the srun processes that have ended."""
    _STARTED[:] = [p for p in _STARTED if p.poll() is None]


def sbatch(argv: Sequence[str]) -> str:
    """Submit (argv starts with `sbatch --parsable`); the job id (`ID` or `ID;CLUSTER`)."""
    return _run(argv).strip().split(";")[0]


def squeue_json() -> str:
    """Every job the controller still lists, finished ones included for MinJobAge (one call for all)."""
    return _run(["squeue", "--json"])


def sinfo_json() -> str:
    return _run(["sinfo", "--json"])


def scancel(job_ids: Sequence[str]) -> None:
    if job_ids:
        _run(["scancel", *job_ids])


def available() -> bool:
    """Whether a controller answers (`scontrol ping`)."""
    if shutil.which("scontrol") is None:
        return False
    done = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30, check=False)
    return done.returncode == 0 and "UP" in done.stdout


@dataclass(frozen=True)
class Commands:
    """The Slurm CLI, replaceable by a test's own cluster commands."""

    sbatch: Callable[[list[str]], str] = sbatch
    srun: Callable[[list[str], Path, Path], str] = srun
    squeue_json: Callable[[], str] = squeue_json
    sinfo_json: Callable[[], str] = sinfo_json
    scancel: Callable[[list[str]], None] = scancel
