"""The Slurm commands refenv runs (sbatch, squeue, sinfo, scancel), each a subprocess with a time limit.

No Python Slurm library: pyslurm is tied to one Slurm release and submitit runs pickled functions, not
containers (facts/cluster.md). `sacct` is not used: it needs accounting, which clusters do not always run.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    squeue_json: Callable[[], str] = squeue_json
    sinfo_json: Callable[[], str] = sinfo_json
    scancel: Callable[[list[str]], None] = scancel
