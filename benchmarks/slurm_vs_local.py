"""The same small matrix through the Slurm backend and the local Docker engine, side by side in one run.

Both run the default CPU environment on simulated hosts (no cache: every cell measured), each as
`invoke matrix` runs it: the local engine a cell per core at a time; Slurm every cell submitted at once,
packed into one job that runs them as many at a time as the node holds (one CPU per cell: its two CPUs,
as many as the local engine), in alternating order so load on the machine hits both alike. Slurm adds a
submission, the controller's start-up tick (once per pack), a job script per cell and `squeue --json`
polls. Target: the median Slurm run takes at most 1.25x the median local run, over at least 5 rounds.
Exit 1 when it does not. The load average is printed before and after: measure on an idle machine.
Needs the cluster of `.ci/slurm-up`.

    python benchmarks/slurm_vs_local.py [--rounds N]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.engine_rounds import RunFailed, alternating, ratio_lines  # noqa: E402
from refenv.engines.connect import parallel_for  # noqa: E402
from refenv.engines.docker.engine import DockerEngine  # noqa: E402
from refenv.engines.slurm.engine import SlurmEngine  # noqa: E402
from refenv.run.pipeline import Options, run_matrix  # noqa: E402
from tests.docker.support import CPU, DIAGNOSIS_ONLY, RecordingUI, small_matrix  # noqa: E402

TARGET = 1.25
SCENARIOS = {"gpu": {"gpus": "all"}, "no-gpu": {"gpus": "none"}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    matrix = small_matrix([CPU], ["r535", "r580"], SCENARIOS, DIAGNOSIS_ONLY)
    local = DockerEngine.connect()
    slurm = SlurmEngine(local, matrix.hosts)
    parallel = os.cpu_count() or 1
    cells = len(matrix.environments) * len(matrix.hosts) * len(matrix.scenarios)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="refenv-bench-") as tmp:
        run_matrix(matrix, Options(Path(tmp) / "warm", parallel=parallel, use_cache=False), RecordingUI(), local)
        try:
            times = alternating(matrix, [("local", local, parallel),
                                         ("slurm", slurm, parallel_for("slurm", cells, 0))], args.rounds, Path(tmp))
        except RunFailed as exc:
            print(exc)
            return 1
    ratio, lines = ratio_lines(times, "local", "slurm", TARGET, {"local": "local engine"})
    print(f"{cells} cells ({CPU} on {', '.join(h.name for h in matrix.hosts)}), parallel {parallel}, "
          f"{args.rounds} rounds; load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    print("\n".join(lines))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
