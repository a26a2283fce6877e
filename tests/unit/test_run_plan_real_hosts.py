"""On a cluster each real host is planned from its own probe: its profile predicts its cells, and a host
whose node has no driver gets its GPU cells NOT_RUN with that node's reason, not the others'."""

from __future__ import annotations

from pathlib import Path

from refenv.errors import NoGpuRuntime
from refenv.model import profiles
from refenv.model.builds import EnvBuild
from refenv.model.matrix import CellSpec, Environment, Host, RunSettings, Scenario
from refenv.run.plan import Prepared, plan_cell

CU130 = Environment("cu130", "2.14.1", "cu130")
GPU, NO_GPU = Scenario("gpu", "all"), Scenario("no-gpu", "none")


def _prepared() -> Prepared:
    build = EnvBuild("cu130", "CACHED", "refenv/env-cu130:1", "ab" * 8, 0.0, None)
    return Prepared({"cu130": build}, real=profiles.get("r580"),
                    real_hosts={"h535": profiles.get("r535"), "h580": profiles.get("r580"), "bare": None},
                    real_errors={"bare": NoGpuRuntime("host bare (node n9): libnvidia-ml.so.1: cannot open")})


def test_each_real_host_is_predicted_from_its_own_node(tmp_path: Path) -> None:
    prepared = _prepared()
    old = plan_cell(CellSpec(CU130, Host("h535", "real"), GPU), prepared, "run", tmp_path, RunSettings())
    new = plan_cell(CellSpec(CU130, Host("h580", "real"), GPU), prepared, "run", tmp_path, RunSettings())
    assert old.expected.verdict == "DRIVER_TOO_OLD" and old.skip is None
    assert new.expected.verdict == "OK" and new.skip is None
    assert old.spec is not None and old.cache_key is None, "real hardware is never cached"


def test_a_node_without_a_driver_skips_only_its_own_gpu_cells(tmp_path: Path) -> None:
    prepared = _prepared()
    bare = plan_cell(CellSpec(CU130, Host("bare", "real"), GPU), prepared, "run", tmp_path, RunSettings())
    assert bare.skip == ("NOT_RUN", "host bare (node n9): libnvidia-ml.so.1: cannot open")
    without = plan_cell(CellSpec(CU130, Host("bare", "real"), NO_GPU), prepared, "run", tmp_path, RunSettings())
    assert without.skip is None
    other = plan_cell(CellSpec(CU130, Host("h580", "real"), GPU), prepared, "run", tmp_path, RunSettings())
    assert other.skip is None
