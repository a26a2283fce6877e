"""Cells packed into jobs, so that a batch pays the scheduler's start-up once, not once per cell (pure).

slurmctld allocates a submitted job on its own tick (here about once a second: submit to start 0.15-1.0 s,
measured with `sbatch --wrap`), and a job array's tasks are allocated like jobs. One job per cell paid that
tick for every wave of cells; a pack is one job that runs its cells' own job scripts `width` at a time,
as many as a node of the placement holds (its CPUs and memory for the cells' limits). A batch becomes as
many packs as nodes could run them, cells dealt round-robin; several packs go as one job array.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass

from refenv.engines.slurm.script import PATH_LINE, JobFiles
from refenv.engines.slurm.state import Node

_MEM_RE = re.compile(r"([0-9]+)([KMGT]?)")
_MB = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


@dataclass(frozen=True)
class Pack:
    """Cells (indices into the batch) that one job runs, `width` at a time."""

    cells: tuple[int, ...]
    width: int

    @property
    def waves(self) -> int:
        return math.ceil(len(self.cells) / self.width)


def memory_mb(text: str) -> int:
    """A Slurm/Docker size ('6G', '512M', '2048') in MB, as sbatch --mem reads it (MB without a unit)."""
    m = _MEM_RE.fullmatch(text.upper())
    return max(1, int(int(m.group(1)) * _MB[m.group(2)])) if m else 1


def eligible(nodes: list[Node], partition: str | None, features: tuple[str, ...], nodelist: str | None) -> list[Node]:
    """The nodes up that a placement could use (its partition, every feature its constraint names, its node)."""
    return [n for n in nodes if not n.state.startswith(("down", "drain", "fail"))
            and (partition is None or partition in n.partitions)
            and all(f in n.features for f in features) and (nodelist is None or n.name == nodelist)]


def plan(count: int, cpus: int, mem_mb: int, nodes: list[Node]) -> list[Pack]:
    """`count` cells of `cpus` CPUs and `mem_mb` MB each, packed for `nodes` (the smallest node decides the
    width; without a node, one cell at a time in one pack)."""
    if count < 1:
        return []
    fits = [min(n.cpus // max(1, cpus), n.memory_mb // max(1, mem_mb)) for n in nodes if n.cpus and n.memory_mb]
    width = max(1, min([count, *fits])) if fits else 1
    packs = max(1, min(len(nodes) or 1, math.ceil(count / width)))
    dealt = [tuple(range(i, count, packs)) for i in range(packs)]
    return [Pack(cells, min(width, len(cells))) for cells in dealt]


def resources(key: tuple[str, ...], pack: Pack) -> list[str]:
    """The cells' shared sbatch options scaled for a pack: CPUs and memory by its width, time by its waves."""
    def scaled(arg: str) -> str:
        flag, _, value = arg.partition("=")
        if flag == "--cpus-per-task":
            return f"{flag}={int(value) * pack.width}"
        if flag == "--mem":
            return f"{flag}={memory_mb(value) * pack.width}M"
        if flag == "--time":  # a minute more: each cell's limit is its own, enforced by its script
            return f"{flag}={int(value) * pack.waves + 1}"
        return arg
    return [scaled(arg) for arg in key]


def srun_argv(key: tuple[str, ...], pack: Pack, log: str, path: str) -> list[str]:
    """`srun` for a pack: the cells' shared sbatch options (less sbatch's own) scaled for it, its log, its script."""
    options = [a for a in resources(key, pack) if a not in ("sbatch", "--parsable", "--no-requeue")]
    return ["srun", *options, f"--output={log}", path]


def pack_script(cells: list[JobFiles], width: int, job_id_file: str) -> str:
    """A pack's job script: its job id first (for the submitter), then each cell's own script, `width` at a time,
    its output in the cell's log. scancel's TERM reaches every process of the job; the cells' scripts remove
    their containers, this one waits for them."""
    q = shlex.quote
    return (
        "#!/bin/bash\n"
        f"# refenv pack: {len(cells)} cells, {width} at a time\n"
        f"{PATH_LINE}\n"
        f'echo "$SLURM_JOB_ID" > {q(job_id_file)}.tmp && mv {q(job_id_file)}.tmp {q(job_id_file)}\n'
        f"scripts=({' '.join(q(c.script) for c in cells)})\n"
        f"logs=({' '.join(q(c.log) for c in cells)})\n"
        "trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; exit 143' TERM INT\n"
        'for i in "${!scripts[@]}"; do\n'
        f'  while [ "$(jobs -rp | wc -l)" -ge {width} ]; do wait -n; done\n'
        '  bash "${scripts[$i]}" > "${logs[$i]}" 2>&1 &\n'
        "done\n"
        "wait\n"
        "exit 0\n"
    )
