"""Measured once, in real containers: an environment's probes and memory check run in one container of its
image, are reused while the image is unchanged and measured again when it changes, and the reports show
them once; the cells only diagnose."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.schema.envelope import ProbePair
from harness.schema.memory_document import MemoryVerification
from refenv.engines.docker.sdk import Engine
from refenv.model.labels import MANAGED
from refenv.model.matrix import Matrix
from refenv.model.rundoc import load_run
from refenv.report.console import console_summary
from refenv.run.pipeline import Options, run_matrix
from tests.docker.support import CPU, GPU, RecordingUI, cell, describe, run_grid, small_matrix

MEASURED: dict[str, Any] = {"probes": "quick", "memory_check": "quick"}
SCENARIOS: dict[str, dict[str, Any]] = {**GPU, "no-gpu": {"gpus": "none"}}


def matrix() -> Matrix:
    return small_matrix([CPU], ["none", "r580"], SCENARIOS, MEASURED)


def test_an_environment_is_measured_once_and_reused_until_its_image_changes(engine: Engine, env_builds: Any,
                                                                            tmp_path: Path) -> None:
    first = run_grid(matrix(), tmp_path, use_cache=True)
    doc = first.document
    cells = [cell(first, CPU, h, s) for h in ("none", "r580") for s in SCENARIOS]
    assert [c["status"] for c in cells] == ["PASS"] * 4, [describe(c) for c in cells]
    assert all(c["probes"] is None and c["memory"] is None for c in cells), "a cell only diagnoses"
    assert [c["measurements"] for c in cells] == [[f"{CPU}/cpu"]] * 4
    assert [m.id for m in doc.measurements] == [f"{CPU}/cpu"]
    m = doc.measurements[0]
    assert m.status == "PASS", (m.reason, m.log_tail)
    cpu = m.probes.cpu if isinstance(m.probes, ProbePair) else None
    assert cpu is not None and cpu.device == "cpu" and any(x.status != "SKIP" for x in cpu.measurements)
    assert isinstance(m.memory, MemoryVerification) and m.memory.cases, m.memory
    assert Path(m.result_path or "").is_file() and load_run(first.folder) == doc

    # The reports show it once, not once per cell.
    md = (first.folder / "report.md").read_text()
    once = md.split("## Measured once", 1)[1].split("\n## ", 1)[0]
    assert once.count(f"{CPU} (CPU)") == 1 and "for 4 cells" in once, once
    assert md.split("## Memory", 1)[1].count(f"{CPU} (CPU)") == 1
    assert (first.folder / "report.html").read_text().count(f"<code>{CPU} (CPU)</code>") == 1
    assert console_summary(doc).count(f"{CPU} (CPU)") == 1

    # The same image: reused. Any measured run before may have left it in the shared cache: what matters is
    # that the second run measures nothing and reads the same result.
    second = run_grid(matrix(), tmp_path, use_cache=True)
    again = second.document.measurements[0]
    assert again.cached and again.status == "PASS" and again.cache_key == m.cache_key and again.memory == m.memory

    # A changed image (its content hash differs): measured again, in a container of its own; then reused.
    with relabelled(engine, env_builds[CPU].tag) as image:
        options = Options(results_root=tmp_path / "changed", use_cache=True, images={CPU: image})
        third = run_matrix(matrix(), options, RecordingUI()).document.measurements[0]
        fourth = run_matrix(matrix(), options, RecordingUI()).document.measurements[0]
    assert third.status == "PASS" and not third.cached and (third.wall_s or 0) > 0
    assert third.cache_key != m.cache_key
    assert fourth.cached and fourth.cache_key == third.cache_key


@contextlib.contextmanager
def relabelled(engine: Engine, image: str | None) -> Iterator[str]:
    """`image` committed again under a content hash of its own (a label only: no layer is copied), removed after."""
    assert image is not None
    ref = f"refenv/test-measure-once:{secrets.token_hex(6)}"
    box = engine.client.containers.create(image, network_mode="none", labels={MANAGED: "true"})
    try:
        box.commit(*ref.split(":"), changes=[f"LABEL refenv.content-hash={secrets.token_hex(32)}"])
    finally:
        box.remove(force=True)
    try:
        yield ref
    finally:
        engine.client.images.remove(ref, force=True)
