"""The runner through a fake engine: caching, every status, failed builds, timeouts, OOM kills and Ctrl-C
(refenv.run.pipeline, refenv.run.cells, refenv.run.plan). The docker tier proves the real engine does the same."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from refenv import paths
from refenv.builder import simdriver
from refenv.errors import NoGpuRuntime, RefenvError
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Environment, Host, Matrix, RunSettings, Scenario
from refenv.model.rundoc import load_run
from refenv.run.cells import run_cells
from refenv.run.pipeline import Options, Outcome, run_matrix
from refenv.run.plan import Prepared, Scope, plan_cells
from tests.unit.fake_engine import NO_DRIVER_DOC, OK_DOC, UI, FakeEngine, Script

pytestmark = pytest.mark.usefixtures("private_cache")

CU130 = Environment("cu130", "2.14.1", "cu130")
BROKEN = Environment("broken", "2.14.1", "cu130")
NONE, R580, REAL = Host("none", "none"), Host("r580", "simulated", "r580"), Host("real", "real")
GPU = Scenario("gpu", "all")
FAST = RunSettings(timeout_s=0.3, parallel=2, probes="off", memory_check="off")


def matrix(*hosts: Host, envs: tuple[Environment, ...] = (CU130,)) -> Matrix:
    return Matrix("matrix.yaml", envs, hosts, (GPU,), FAST)


def run(engine: FakeEngine, m: Matrix, tmp_path: Path, ui: UI | None = None, use_cache: bool = True) -> Outcome:
    return run_matrix(m, Options(results_root=tmp_path / "results", use_cache=use_cache), ui or UI(), engine)


def statuses(outcome: Outcome) -> dict[str, str]:
    return {c.host: c.status for c in outcome.document.cells}


def test_agreement_passes_and_the_results_folder_is_written(tmp_path: Path) -> None:
    engine = FakeEngine(scripts={"cu130/none/gpu": Script(NO_DRIVER_DOC)})
    outcome = run(engine, matrix(NONE, R580), tmp_path)
    assert statuses(outcome) == {"none": "PASS", "r580": "PASS"}, outcome.document.cells
    assert outcome.ok and not outcome.interrupted
    assert load_run(outcome.folder) == outcome.document
    assert {"cells.json", "markdown", "html", "junit"} <= set(outcome.written)
    assert (outcome.folder / "hosts" / "r580--gpu.conf").is_file()  # the planned file, written before the run
    assert [r.lock_file for r in engine.built] == [Path("locks/cu130.json").resolve()]


def test_a_second_run_reuses_the_measurement_and_judges_it_again(tmp_path: Path) -> None:
    engine = FakeEngine()
    first = run(engine, matrix(R580), tmp_path)
    engine.default = Script(NO_DRIVER_DOC)  # what a fresh measurement would say now
    second = run(engine, matrix(R580), tmp_path)
    assert engine.ran == ["cu130/r580/gpu"]
    cell = second.document.cells[0]
    assert cell.cached and cell.status == "PASS" and cell.cache_key == first.document.cells[0].cache_key
    third = run(engine, matrix(R580), tmp_path, use_cache=False)
    assert engine.ran == ["cu130/r580/gpu"] * 2 and third.document.cells[0].status == "FAIL"


@pytest.mark.parametrize("script", [
    Script({"schema": "refenv.cell", "error": {"message": "torch import crashed"}}),  # the harness failed
    Script(OK_DOC, exit_code=137, oom_killed=True),  # killed for memory after the document was written
])
def test_a_cell_that_gave_no_answer_is_not_cached(script: Script, tmp_path: Path) -> None:
    # Reused, it would stay ERROR until --rerun, or read PASS from a container the kernel killed.
    engine = FakeEngine(scripts={"cu130/r580/gpu": script})
    assert run(engine, matrix(R580), tmp_path).document.cells[0].status in ("ERROR", "OOM_KILLED")
    engine.scripts.clear()
    second = run(engine, matrix(R580), tmp_path)
    assert engine.ran == ["cu130/r580/gpu"] * 2
    assert second.document.cells[0].status == "PASS" and not second.document.cells[0].cached


def test_a_real_host_is_measured_every_time(tmp_path: Path) -> None:
    engine = FakeEngine(gpu=True)
    for _ in range(2):
        outcome = run(engine, matrix(REAL), tmp_path)
    assert engine.ran == ["cu130/real/gpu"] * 2 and outcome.document.cells[0].cache_key is None


@pytest.mark.parametrize(("script", "status", "words"), [
    (Script(OK_DOC), "FAIL", "expected NOT_VISIBLE, observed OK"),
    (Script(None, exit_code=139, logs="Segmentation fault"), "ERROR", "the harness wrote no result (exit 139)"),
    (Script(hang=True), "TIMEOUT", "outlived its time limit"),
    (Script(None, exit_code=137, oom_killed=True), "OOM_KILLED", "killed the container for memory"),
    (Script(raises=NoGpuRuntime("no NVIDIA runtime")), "NOT_RUN", "no NVIDIA runtime"),
    (Script(raises=RefenvError("docker: no such image")), "ERROR", "no such image"),
])
def test_every_way_a_cell_ends_has_its_status(script: Script, status: str, words: str, tmp_path: Path) -> None:
    engine = FakeEngine(scripts={"cu130/none/gpu": script})
    outcome = run(engine, matrix(NONE), tmp_path)
    cell = outcome.document.cells[0]
    assert (cell.status, words in cell.reason) == (status, True), cell
    assert outcome.ok == (status == "NOT_RUN") and engine.live == set()


def test_a_failed_build_fails_only_its_cells(tmp_path: Path) -> None:
    engine = FakeEngine(failed_builds={"broken": "pip could not find torch==9"})
    outcome = run(engine, matrix(R580, envs=(BROKEN, CU130)), tmp_path)
    by_env = {c.environment: c for c in outcome.document.cells}
    assert by_env["broken"].status == "BUILD_FAILED" and "torch==9" in by_env["broken"].reason
    assert by_env["cu130"].status == "PASS" and engine.ran == ["cu130/r580/gpu"]
    record = outcome.document.environment("broken")
    assert record is not None and record.build.status == "FAILED" and record.build.log_tail == "the log's tail"


def test_a_real_host_without_a_gpu_runtime_is_not_run(tmp_path: Path) -> None:
    outcome = run(FakeEngine(gpu=False), matrix(REAL), tmp_path)
    cell = outcome.document.cells[0]
    assert cell.status == "NOT_RUN" and "no NVIDIA runtime" in cell.reason and outcome.ok


def test_ctrl_c_cancels_every_container_and_writes_the_partial_report(tmp_path: Path) -> None:
    # Three profiles: three containers (hosts of one profile would share one container, and the hung ones never run).
    hosts = (Host("a", "simulated", "r580"), Host("b", "simulated", "r570"), Host("c", "simulated", "r535"))
    engine = FakeEngine(scripts={f"cu130/{h}/gpu": Script(hang=True) for h in "bc"})
    m = Matrix("matrix.yaml", (CU130,), hosts, (GPU,), RunSettings(timeout_s=30, parallel=3, probes="off",
                                                                    memory_check="off"))
    outcome = run(engine, m, tmp_path, UI(stop_after=1), use_cache=False)
    # Ctrl-C ends the hung containers: it does not wait out their 30 s time limit (the engine says which ended them).
    assert engine.hung_ended == {"cu130/b/gpu": "cancelled", "cu130/c/gpu": "cancelled"}
    assert outcome.interrupted and not outcome.ok
    assert engine.live == set() and engine.cancelled  # nothing left running
    assert statuses(outcome) == {"a": "PASS", "b": "NOT_RUN", "c": "NOT_RUN"}
    doc = load_run(outcome.folder)
    assert doc.run.interrupted and "INTERRUPTED" in (outcome.folder / "report.md").read_text()


def test_ctrl_c_while_building_reports_every_cell_as_not_run(tmp_path: Path) -> None:
    class Interrupting(FakeEngine):
        def ensure_image(self, request, progress):  # type: ignore[no-untyped-def]
            raise KeyboardInterrupt

    engine = Interrupting()
    outcome = run(engine, matrix(NONE, R580), tmp_path)
    assert outcome.interrupted and engine.cancelled and engine.ran == []
    assert {c.status for c in outcome.document.cells} == {"NOT_RUN"} and len(outcome.document.cells) == 2


def test_planning_writes_nothing(tmp_path: Path) -> None:
    builds = {"cu130": EnvBuild("cu130", "CACHED", "img", "h", 0.0, None)}
    prepared = Prepared(builds, simdriver.build())
    plans = plan_cells(Scope((CU130,), (NONE, R580), (GPU,)), prepared, "run-1", tmp_path / "run", FAST)
    assert not (tmp_path / "run").exists()
    assert [p.id for p in plans] == ["cu130/none/gpu", "cu130/r580/gpu"]
    # Beside the simulated driver's configuration, each host's PCI bus as its containers see it.
    assert [path.name for path, _ in plans[1].files if "--pci" not in str(path)] == ["r580--gpu.conf"]
    assert all("none--pci" in str(path) for path, _ in plans[0].files) and plans[0].links
    assert {target for _, target in plans[1].links} == {"../../drivers/nvidia"}
    done = run_cells(FakeEngine(scripts={"cu130/none/gpu": Script(NO_DRIVER_DOC)}), plans, "run-1")
    assert [c.status for c in done.records] == ["PASS", "PASS"] and not done.interrupted
    assert paths.cell_cache().is_dir()


def test_planning_and_running_cells_need_no_docker_sdk() -> None:
    """engine.py is the one module that imports docker; the planners and the runner reach it only through the seam."""
    code = ("import sys, refenv.run.pipeline, refenv.run.plan, refenv.run.cells, refenv.run.containers, refenv.builder.images, refenv.builder.environment, "
            "refenv.reproduce.execute, refenv.report; print('docker' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "False"


def test_one_environment_at_a_time_builds_judges_and_releases_each_before_the_next(tmp_path: Path) -> None:
    """A runner with little disk (refenv matrix --low-disk): each image is removed once its cells are judged,
    before the next is built; the run document is the whole matrix's, as without it."""
    events: list[str] = []

    class Releasing(FakeEngine):
        def ensure_image(self, request, progress):  # type: ignore[no-untyped-def]
            events.append(f"build {request.environment.name}")
            return replace(super().ensure_image(request, progress), status="BUILT")

        def run(self, spec, timeout):  # type: ignore[no-untyped-def]
            events.append(f"run {spec.image}")
            return super().run(spec, timeout)

        def release(self, build: EnvBuild) -> None:
            events.append(f"release {build.environment}")

    other = Environment("cu130b", "2.14.1", "cu130")
    m = matrix(NONE, R580, envs=(CU130, other))
    engine = Releasing(scripts={f"{e}/none/gpu": Script(NO_DRIVER_DOC) for e in ("cu130", "cu130b")})
    outcome = run_matrix(m, Options(results_root=tmp_path / "results", one_at_a_time=True), UI(), engine)
    order = [e.split(" ")[0] + " " + e.split(" ")[1].removeprefix("refenv/env-").split(":")[0] for e in events
             if not e.startswith("run sha256")]
    first_release = order.index("release cu130")
    assert order.index("build cu130b") > first_release
    assert all(e.endswith("cu130") for e in order[:first_release] if e.startswith("run "))
    assert order[-1] == "release cu130b"
    assert sorted(c.id for c in outcome.document.cells) == ["cu130/none/gpu", "cu130/r580/gpu", "cu130b/none/gpu",
                                                           "cu130b/r580/gpu"]
    assert {c.status for c in outcome.document.cells} == {"PASS"} and outcome.ok
