"""What a matrix cell costs against the bare question, and the default matrix's cold wall time, in one run.

1. The default matrix cold: `--rerun` (no cached cell, no cached measurement), images already built; timed
   from the first measurement to the last cell (cells only: the build step is not counted). Each
   environment's probes and memory check run once, then every cell only diagnoses.
2. A bare container loop: for every cell answered (all but those not runnable here), a container of its
   image with the same confinement (no network, read-only root, the same CPU share) running
   `python -c "import torch; torch.cuda.is_available()"`, as many, at the same parallelism.

Printed: the median container wall time of each and their ratio (target <= 1.5x; cells that reused the
container of an identical cell of the run are not counted), the two wall times side by side, and the
matrix's wall time against the cold figure before measuring once (284.5 s on this machine; target <= 40% of
it). The load average is printed beside, since other work on the machine inflates both.

    python benchmarks/matrix_cost.py [--matrix matrix.yaml]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refenv.engines.seam import ContainerSpec  # noqa: E402
from refenv.model.builds import EnvBuild  # noqa: E402
from refenv.model.labels import KIND, MANAGED, RUN  # noqa: E402
from refenv.model.matrix_yaml import load  # noqa: E402
from refenv.model.records import CellResult, MeasurementRecord  # noqa: E402
from refenv.run.pipeline import Options, connect, image_requests, new_run_id, prepare, run_matrix, settings_of  # noqa: E402

CELL_TARGET, MATRIX_TARGET = 1.5, 0.40
BEFORE_S = 284.5  # README, benchmarks table: a --rerun of the default matrix before measuring once
BARE = ("-c", "import torch; torch.cuda.is_available()")


class Clock:
    """A runner UI that notes when the measurements and the cells start, and says nothing."""

    def __init__(self) -> None:
        self.measuring = self.cells = self.end = 0.0

    def stage(self, message: str) -> None:
        pass

    def build_line(self, environment: str, line: str) -> None:
        pass

    def build_done(self, build: EnvBuild) -> None:
        pass

    def measurements_start(self, total: int) -> None:
        self.measuring = time.monotonic()

    def measurement_done(self, record: MeasurementRecord) -> None:
        self.end = time.monotonic()

    def cells_start(self, total: int) -> None:
        self.cells = time.monotonic()

    def cell_done(self, result: CellResult) -> None:
        self.end = time.monotonic()


def load_text() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bare_loop(images: list[str], parallel: int, threads: int, memory: str, pids: int) -> list[float]:
    """One bare container per image in `images`, `parallel` at a time; each one's wall time."""
    engine = connect()
    run_id = f"bench-{new_run_id()}"

    def one(image: str) -> float:
        spec = ContainerSpec(image=image, command=BARE, environment=(("OMP_NUM_THREADS", str(threads)),),
                             labels=((MANAGED, "true"), (KIND, "bench"), (RUN, run_id)), binds=(),
                             entrypoint=("python",), cpus=float(threads), mem_limit=memory, pids_limit=pids)
        t0 = time.monotonic()
        outcome = engine.run(spec, timeout=300)
        if outcome.exit_code != 0:
            raise SystemExit(f"the bare container of {image} failed: {outcome.logs[-500:]}")
        return time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, images))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default=str(ROOT / "matrix.yaml"))
    args = parser.parse_args()
    matrix = load(args.matrix)
    with tempfile.TemporaryDirectory(prefix="refenv-cost-") as tmp:
        options = Options(results_root=Path(tmp), use_cache=False)
        settings = settings_of(matrix, options)
        parallel = settings.parallel or os.cpu_count() or 1
        threads = max(1, (os.cpu_count() or 1) // parallel)
        print(f"load average before: {load_text()}  (cores {os.cpu_count()}, parallel {parallel})")
        prepared = prepare(connect(), image_requests(matrix, options), matrix.hosts, "bench-prepare", Clock())
        tags = {name: b.tag for name, b in prepared.builds.items() if b.tag and b.status != "FAILED"}
        if len(tags) != len(matrix.environments):
            print("an environment's image did not build; run invoke matrix first")
            return 1

        clock = Clock()
        outcome = run_matrix(matrix, options, clock)
        doc = outcome.document
        ran = [c for c in doc.cells if c.wall_s and not c.cached]
        answered = [c for c in doc.cells if c.observed is not None]
        if outcome.interrupted or not ran:
            print("the matrix run was interrupted or ran no cell: no figures")
            return 1
        cells_wall = clock.end - clock.measuring
        measured = [m for m in doc.measurements if m.wall_s]
        print(f"load average after the matrix: {load_text()}")

        t0 = time.monotonic()
        bare = bare_loop([tags[c.environment] for c in answered], parallel, threads, settings.memory, settings.pids)
        bare_wall = time.monotonic() - t0
        print(f"load average after the bare loop: {load_text()}")
    cell_median = statistics.median(c.wall_s or 0.0 for c in ran)
    bare_median = statistics.median(bare)
    ratio = cell_median / bare_median
    fraction = cells_wall / BEFORE_S
    print(f"matrix --rerun: {len(doc.cells)} cells, {len(answered)} answered by {len(ran)} containers (the others "
          f"reused an identical cell's), {len(measured)} measurements; statuses {doc.summary.by_status}")
    print(f"  measurements {clock.cells - clock.measuring:.1f} s "
          f"({', '.join(f'{m.id} {m.wall_s:.1f} s' for m in measured)}), cells {clock.end - clock.cells:.1f} s")
    print(f"  cells only (measurements + cells): {cells_wall:.1f} s; whole run with its image checks "
          f"{doc.run.wall_s} s")
    print(f"bare loop: {len(bare)} containers of `python {' '.join(BARE)}`, {parallel} at a time: "
          f"{bare_wall:.1f} s; the matrix's cells only / the bare loop = {cells_wall / bare_wall:.2f}")
    print(f"per cell: median {cell_median:.2f} s vs bare median {bare_median:.2f} s = {ratio:.2f}x "
          f"(target <= {CELL_TARGET}x): {'PASS' if ratio <= CELL_TARGET else 'FAIL'}")
    print(f"matrix cold, cells only: {cells_wall:.1f} s vs {BEFORE_S} s before = {fraction:.0%} "
          f"(target <= {MATRIX_TARGET:.0%}): {'PASS' if fraction <= MATRIX_TARGET else 'FAIL'}")
    return 0 if ratio <= CELL_TARGET and fraction <= MATRIX_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
