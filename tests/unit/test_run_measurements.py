"""Probes and the memory verification measured once per environment (and per real GPU host), not per cell,
through the fake engine (refenv.run.measurements, refenv.run.executor, refenv.run.pipeline); the cells only diagnose."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from invoke.context import Context
from invoke.exceptions import Exit

from harness.schema.envelope import MemorySection
from refenv import tasks
from refenv.engines import connect
from refenv.engines.seam import RealHost
from refenv.errors import NotStarted
from refenv.model import codec, profiles
from refenv.model.matrix import Environment, Host, Matrix, RunSettings, Scenario
from refenv.model.rundoc import load_run
from refenv.report.console import console_summary
from refenv.run.pipeline import Options, Outcome, run_matrix
from tests.unit.fake_engine import MEASURE_DOC, NO_DRIVER_DOC, UI, FakeEngine, Script

pytestmark = pytest.mark.usefixtures("private_cache")

CU130, CPU = Environment("cu130", "2.14.1", "cu130"), Environment("cpuonly", "2.13.0", "cpu")
NONE, R580, R535, REAL = (Host("none", "none"), Host("r580", "simulated", "r580"), Host("r535", "simulated", "r535"),
                          Host("real", "real"))
SCENARIOS = (Scenario("gpu", "all"), Scenario("no-gpu", "none"))
MEASURED = RunSettings(timeout_s=5, parallel=2, probes="quick", memory_check="quick")


def matrix(*hosts: Host, envs: tuple[Environment, ...] = (CU130, CPU)) -> Matrix:
    return Matrix("matrix.yaml", envs, hosts, SCENARIOS, MEASURED)


def run(engine: FakeEngine, m: Matrix, tmp_path: Path, ui: UI | None = None, use_cache: bool = True) -> Outcome:
    return run_matrix(m, Options(results_root=tmp_path / "results", use_cache=use_cache), ui or UI(), engine)


def no_driver_engine() -> FakeEngine:
    """Cells on the `none` host see no driver, as a real container there does."""
    return FakeEngine(scripts={f"{e}/none/{s}": Script(NO_DRIVER_DOC) for e in ("cu130", "cpuonly")
                               for s in ("gpu", "no-gpu")})


def test_each_environment_is_measured_once_and_its_cells_only_diagnose(tmp_path: Path) -> None:
    engine = FakeEngine()
    ui = UI()
    outcome = run(engine, matrix(R535, R580), tmp_path, ui)
    assert sorted(m for m, _ in engine.measured) == ["cpuonly/cpu", "cu130/cpu"] and ui.measuring == 2
    assert len(outcome.document.cells) == 8 and len(ui.measured) == 2
    for cell in outcome.document.cells:
        command = engine.specs[cell.id].command if cell.id in engine.specs else ("--probes", "off", "--memory", "off")
        assert command[command.index("--probes") + 1] == "off" and command[command.index("--memory") + 1] == "off"
        assert cell.measurements == (f"{cell.environment}/cpu",) and cell.probes is None and cell.memory is None
    spec = engine.specs["cu130/cpu"]
    assert spec.command[:1] == ("measure",) and "--device" in spec.command and spec.gpu_request is None
    assert spec.devices == () and all(target != "/usr/lib/x86_64-linux-gnu/libcuda.so.1" for _, target, _ in spec.binds)
    m = outcome.document.measurement("cu130/cpu")
    assert m is not None and m.status == "PASS" and not m.cached
    assert m.memory == codec.decode_value(MemorySection, MEASURE_DOC["memory"])
    assert load_run(outcome.folder) == outcome.document


def test_an_unchanged_image_reuses_its_measurement_and_a_changed_one_measures_again(tmp_path: Path) -> None:
    engine = FakeEngine()
    run(engine, matrix(R580), tmp_path)
    second = run(engine, matrix(R580), tmp_path)
    assert len(engine.measured) == 2  # nothing measured again
    assert all(m.cached and m.status == "PASS" for m in second.document.measurements)
    engine.hashes["cu130"] = "a-new-hash"
    third = run(engine, matrix(R580), tmp_path)
    assert sorted(m for m, _ in engine.measured) == ["cpuonly/cpu", "cu130/cpu", "cu130/cpu"]
    by_id = {m.id: m for m in third.document.measurements}
    assert not by_id["cu130/cpu"].cached and by_id["cpuonly/cpu"].cached
    run(engine, matrix(R580), tmp_path, use_cache=False)
    assert len(engine.measured) == 5


def test_another_engine_does_not_reuse_this_ones_measurement(tmp_path: Path) -> None:
    engine = FakeEngine()
    run(engine, matrix(R580), tmp_path)
    podman = FakeEngine()
    podman.name = "podman"  # type: ignore[attr-defined]  # what the pipeline reads of a real engine
    second = run(podman, matrix(R580), tmp_path)
    assert not any(m.cached for m in second.document.measurements)
    assert len(podman.measured) == 2
    assert all(m.cached for m in run(FakeEngine(), matrix(R580), tmp_path).document.measurements)


def test_a_real_gpu_host_is_measured_per_environment_every_time(tmp_path: Path) -> None:
    engine = FakeEngine(gpu=True)
    for _ in range(2):
        outcome = run(engine, matrix(REAL, R580, envs=(CU130,)), tmp_path)
    ids = [m for m, _ in engine.measured]
    assert ids.count("cu130/real") == 2 and ids.count("cu130/cpu") == 1
    spec = engine.specs["cu130/real"]
    assert spec.gpu_request == "all" and spec.command[spec.command.index("--device") + 1] == "cuda"
    real_cell = outcome.document.cell("cu130/real/gpu")
    sim_cell = outcome.document.cell("cu130/r580/gpu")
    assert real_cell is not None and real_cell.measurements == ("cu130/cpu", "cu130/real")
    assert sim_cell is not None and sim_cell.measurements == ("cu130/cpu",)


def test_a_real_host_without_a_gpu_runtime_measures_nothing_there(tmp_path: Path) -> None:
    engine = FakeEngine(gpu=False)
    outcome = run(engine, matrix(REAL, envs=(CU130,)), tmp_path)
    m = outcome.document.measurement("cu130/real")
    assert m is not None and m.status == "NOT_RUN" and "no NVIDIA runtime" in m.reason
    assert [x for x, _ in engine.measured] == ["cu130/cpu"] and not m.bad


def test_a_memory_prediction_that_fails_fails_the_run_once_not_every_cell(tmp_path: Path) -> None:
    bad = {**MEASURE_DOC, "memory": {"status": "FAIL", "cases": [{"name": "tiny", "status": "FAIL"}]}}
    engine = no_driver_engine()
    engine.scripts["cu130/cpu"] = Script(bad)
    outcome = run(engine, matrix(NONE, envs=(CU130,)), tmp_path)
    assert {c.status for c in outcome.document.cells} == {"PASS"}
    m = outcome.document.measurement("cu130/cpu")
    assert m is not None and m.status == "FAIL" and "tiny" in m.reason
    assert not outcome.ok and not outcome.document.summary.ok


def test_a_memory_check_that_could_not_run_is_an_error_with_its_text_not_a_disagreement(tmp_path: Path) -> None:
    missing = "ModuleNotFoundError: No module named 'pkg_resources'"
    cases: list[dict[str, Any]] = [{"name": n, "status": "ERROR", "error": missing, "ledgers": {}}
                                   for n in ("tiny", "small")]
    engine = no_driver_engine()
    engine.scripts["cu130/cpu"] = Script({**MEASURE_DOC, "memory": {"status": "ERROR", "cases": cases}})
    outcome = run(engine, matrix(NONE, envs=(CU130,)), tmp_path)
    m = outcome.document.measurement("cu130/cpu")
    assert m is not None and m.status == "ERROR" and missing in m.reason and "disagrees" not in m.reason
    assert not outcome.ok


def test_a_measurement_whose_container_hangs_is_timeout_and_the_cells_still_run(tmp_path: Path) -> None:
    # The container never ends by itself: the runner's time limit does (the fake waits it out, then kills).
    engine = no_driver_engine()
    engine.scripts["cu130/cpu"] = Script(hang=True)
    m = Matrix("matrix.yaml", (CU130,), (NONE,), SCENARIOS, RunSettings(timeout_s=0.3, probes="quick",
                                                                        memory_check="quick"))
    outcome = run(engine, m, tmp_path)
    measured = outcome.document.measurement("cu130/cpu")
    assert measured is not None and measured.status == "TIMEOUT" and "time limit" in measured.reason
    assert {c.status for c in outcome.document.cells} == {"PASS"} and not outcome.ok
    assert engine.live == set()


def test_a_failed_build_is_not_measured(tmp_path: Path) -> None:
    engine = FakeEngine(failed_builds={"cpuonly": "no wheel"})
    outcome = run(engine, matrix(R580), tmp_path)
    m = outcome.document.measurement("cpuonly/cpu")
    assert m is not None and m.status == "BUILD_FAILED" and [x for x, _ in engine.measured] == ["cu130/cpu"]


def test_ctrl_c_while_measuring_runs_no_cell(tmp_path: Path) -> None:
    class StopAtFirst(UI):
        def measurement_done(self, record: object) -> None:
            raise KeyboardInterrupt

    engine = FakeEngine(scripts={"cpuonly/cpu": Script(hang=True)})
    outcome = run(engine, matrix(R580), tmp_path, StopAtFirst())
    assert outcome.interrupted and engine.cancelled and engine.ran == [] and engine.live == set()
    assert {c.status for c in outcome.document.cells} == {"NOT_RUN"}


def test_measurements_off_plan_none(tmp_path: Path) -> None:
    engine = FakeEngine()
    m = Matrix("matrix.yaml", (CU130,), (R580,), SCENARIOS, RunSettings(timeout_s=5, probes="off", memory_check="off"))
    outcome = run(engine, m, tmp_path)
    assert engine.measured == [] and outcome.document.measurements == ()
    assert all(c.measurements == () for c in outcome.document.cells)


def test_the_reports_show_each_measurement_once(tmp_path: Path) -> None:
    outcome = run(no_driver_engine(), matrix(NONE, R535, R580), tmp_path)
    md = (outcome.folder / "report.md").read_text()
    section = md.split("## Measured once", 1)[1].split("\n## ", 1)[0]
    assert section.count("cu130 (CPU)") == 1 and section.count("cpuonly (CPU)") == 1 and "for 6 cells" in section
    memory = md.split("## Memory", 1)[1]
    assert memory.count("cu130 (CPU)") == 1 and "/none/" not in memory
    html = (outcome.folder / "report.html").read_text()
    assert html.count("<code>cu130 (CPU)</code>") == 1 and 'id="measured"' in html
    text = console_summary(outcome.document)
    assert "measured once" in text and text.count("cpuonly (CPU)") == 1
    junit = (outcome.folder / "junit.xml").read_text()
    assert junit.count('classname="refenv.measured"') == 2 and 'name="cu130/cpu"' in junit


def test_a_failed_measurement_is_a_junit_failure(tmp_path: Path) -> None:
    engine = no_driver_engine()
    engine.scripts["cu130/cpu"] = Script({**MEASURE_DOC, "memory": {"status": "FAIL", "cases": []}})
    outcome = run(engine, matrix(NONE, envs=(CU130,)), tmp_path)
    junit = (outcome.folder / "junit.xml").read_text()
    assert '<failure message="memory prediction disagrees' in junit and 'type="FAIL"' in junit


def test_a_measurement_the_scheduler_never_started_is_not_run_not_an_error(tmp_path: Path) -> None:
    engine = FakeEngine(scripts={"cu130/cpu": Script(raises=NotStarted("Slurm cannot start the job: PartitionDown"))})
    m = run(engine, matrix(R580, envs=(CU130,)), tmp_path).document.measurement("cu130/cpu")
    assert m is not None and m.status == "NOT_RUN" and "PartitionDown" in m.reason and not m.bad


@dataclass
class ClusterEngine(FakeEngine):
    """Real hosts on cluster nodes: `real` probed where its cells run, and found without a GPU."""

    def probe_real_hosts(self, hosts: tuple[Host, ...]) -> dict[str, RealHost]:
        return {h.name: RealHost(None, "node1", "node1 has no GPU") for h in hosts if h.kind == "real"}


def test_a_cluster_real_host_without_a_gpu_measures_nothing_there(tmp_path: Path) -> None:
    engine = ClusterEngine(gpu=True)  # the local engine could: the node's probe decides
    outcome = run(engine, matrix(REAL, envs=(CU130,)), tmp_path)
    m = outcome.document.measurement("cu130/real")
    assert m is not None and m.status == "NOT_RUN" and m.reason == "node1 has no GPU"
    assert [x for x, _ in engine.measured] == ["cu130/cpu"]


def test_invoke_run_shows_a_failed_measurement_and_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # The cell passes but its environment's measurement gives no answer: `invoke matrix` exits 1 on that;
    # `invoke run` printed only the cell and exited 0.
    (tmp_path / "m.yaml").write_text("version: 1\nenvironments:\n  cu130: {torch: '2.14.1', variant: cu130}\n"
                                     "hosts:\n  r580: {kind: simulated, profile: r580}\nscenarios:\n  gpu: {gpus: all}\n"
                                     "run: {backend: slurm}\n")
    monkeypatch.chdir(tmp_path)
    backends: list[str] = []

    def engine_for(backend: str, m: Matrix, engine: str | None = None) -> FakeEngine:
        backends.append(backend)
        return FakeEngine(measure_default=Script(None, exit_code=1))
    monkeypatch.setattr(connect, "engine_for", engine_for)
    with pytest.raises(Exit) as info:
        tasks.run(Context(), env="cu130", host="r580", scenario="gpu", matrix="m.yaml")
    out = capsys.readouterr().out
    assert info.value.code == 1
    assert "cu130/r580/gpu: PASS" in out and "ERROR cu130 (CPU)" in out
    assert backends == ["slurm"]  # matrix.yaml's run.backend, as `invoke matrix` reads it


def test_a_measurement_killed_for_memory_is_not_cached(tmp_path: Path) -> None:
    engine = FakeEngine(measure_default=Script(MEASURE_DOC, exit_code=137, oom_killed=True))
    m = run(engine, matrix(R580, envs=(CU130,)), tmp_path).document.measurement("cu130/cpu")
    assert m is not None and m.status == "OOM_KILLED"
    engine.measure_default = Script(MEASURE_DOC)
    again = run(engine, matrix(R580, envs=(CU130,)), tmp_path).document.measurement("cu130/cpu")
    assert again is not None and again.status == "PASS" and not again.cached and len(engine.measured) == 2


@dataclass
class TwoNodeCluster(FakeEngine):
    """Two real hosts on two nodes with different drivers."""

    def probe_real_hosts(self, hosts: tuple[Host, ...]) -> dict[str, RealHost]:
        return {"old": RealHost(profiles.get("r535"), "node1"), "new": RealHost(profiles.get("r580"), "node2")}


def test_each_cluster_real_host_is_recorded_with_its_own_driver(tmp_path: Path) -> None:
    # The cells are planned with each node's probe; the run document (and readiness, which reads its
    # drivers) said the first node's driver for every real host.
    doc = run(TwoNodeCluster(gpu=True), matrix(Host("old", "real"), Host("new", "real"), envs=(CU130,)),
              tmp_path).document
    old, new = doc.host("old"), doc.host("new")
    assert old is not None and old.driver == profiles.get("r535").driver_version
    assert new is not None and new.driver == profiles.get("r580").driver_version
