"""The same slice of cells on Podman and on Docker, side by side in one run.

Both run the default CPU environment on simulated hosts with and without GPU access (diagnosis only, no
cache: every cell measured), each as `invoke matrix` runs it, a cell per core at a time, in alternating
order so load on the machine hits both alike. Podman runs each container through five CLI calls (create,
start, wait, inspect, rm); its image is copied from Docker once, before the rounds. Target: the median
Podman run takes at most 1.25x the median Docker run. Exit 1 when it does not.

    python benchmarks/podman_vs_docker.py [--rounds N]
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
from refenv.engines.docker.engine import DockerEngine  # noqa: E402
from refenv.engines.podman.engine import PodmanEngine  # noqa: E402
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
    docker = DockerEngine.connect()
    podman = PodmanEngine(docker)
    parallel = os.cpu_count() or 1
    cells = len(matrix.environments) * len(matrix.hosts) * len(matrix.scenarios)
    with tempfile.TemporaryDirectory(prefix="refenv-bench-") as tmp:
        for name, engine in (("docker", docker), ("podman", podman)):  # images built, copied, caches warm
            run_matrix(matrix, Options(Path(tmp) / f"warm-{name}", parallel=parallel, use_cache=False),
                       RecordingUI(), engine)
        try:
            times = alternating(matrix, [("docker", docker, parallel), ("podman", podman, parallel)], args.rounds,
                                Path(tmp))
        except RunFailed as exc:
            print(exc)
            return 1
    ratio, lines = ratio_lines(times, "docker", "podman", TARGET)
    print(f"{cells} cells ({CPU} on {', '.join(h.name for h in matrix.hosts)}), parallel {parallel}, "
          f"{args.rounds} rounds")
    print("\n".join(lines))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
