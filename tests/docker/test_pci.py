"""The PCI bus a simulated host shows its containers, end to end: a VM with no NVIDIA GPU, and a GPU held by nouveau.

The harness in the container reads the tree the host mounts (named by REFENV_SIMULATED_PCI) as it reads
/sys/bus/pci on a real machine; each cell passes (the predicted verdict is the observed one) and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.schema import DRIVER_BROKEN, NO_DRIVER
from refenv.model import codec
from refenv.run.pipeline import Outcome
from tests.docker.support import CU130, DIAGNOSIS_ONLY, cell, describe, facts, findings, run_grid, small_matrix

SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "no-gpu": {"gpus": "none"}}


@pytest.fixture(scope="module")
def pci(env_builds: Any, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    matrix = small_matrix([CU130], ["no-nvidia-gpu", "nouveau-bound", "r580"], SCENARIOS, DIAGNOSIS_ONLY)
    return run_grid(matrix, Path(tmp_path_factory.mktemp("pci")))


def test_every_cell_that_starts_passes(pci: Outcome) -> None:
    cells = pci.document.cells
    bad = [describe(codec.encode(c)) for c in cells if c.status not in ("PASS", "NOT_RUN")]
    assert not bad, "\n".join(bad)
    # Only --gpus on the VM without an NVIDIA runtime is refused by the engine, as predicted.
    assert [c.id for c in cells if c.status == "NOT_RUN"] == [f"{CU130}/no-nvidia-gpu/gpu"]


def test_a_vm_without_an_nvidia_device_has_no_gpu_not_a_missing_driver(pci: Outcome) -> None:
    c = cell(pci, CU130, "no-nvidia-gpu", "no-gpu")
    assert c["observed"]["verdict"] == NO_DRIVER, describe(c)
    f = findings(c, NO_DRIVER)[0]
    assert "has no NVIDIA GPU" in f["title"]
    assert any("Red Hat (virtio) [0x1af4]" in e for e in f["evidence"])
    assert facts(c)["driver"]["pci_root"] == "/etc/refenv/pci"


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_gpu_held_by_nouveau_is_the_driver_layer_named(pci: Outcome, scenario: str) -> None:
    c = cell(pci, CU130, "nouveau-bound", scenario)
    assert c["observed"]["verdict"] == DRIVER_BROKEN, describe(c)
    first = findings(c, DRIVER_BROKEN)[0]
    assert "nouveau" in first["title"] and "blacklist" in " ".join(first["remediation"])


def test_a_healthy_hosts_bus_shows_its_gpus_on_nvidia(pci: Outcome) -> None:
    c = cell(pci, CU130, "r580", "gpu")
    devices = facts(c)["driver"]["pci"]
    assert [(d["vendor"], d["driver"]) for d in devices] == [("0x10de", "nvidia")] * 2
