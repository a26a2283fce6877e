"""A real host without a working driver is predicted from its PCI bus: read here as the harness reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.gather.pci import SIMULATED_ROOT_ENV
from refenv.builder.simdriver import write_pci_view
from refenv.engines import realhost
from refenv.model import profiles
from refenv.model.profiles import PciDevice


def test_the_bus_read_here_is_what_the_predictor_judges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    view = (PciDevice("0000:00:02.0", "0x1234", "0x030000", "bochs-drm"),
            PciDevice("0000:18:00.0", profiles.NVIDIA_VENDOR, profiles.GPU_CLASS, "nouveau"))
    files, links = profiles.pci_tree(profiles.Profile("t", "", "580.95.05", "13.0", (), pci=view))
    monkeypatch.setenv(SIMULATED_ROOT_ENV, str(write_pci_view(files, links, tmp_path)))
    bus = realhost.bus()
    assert bus == view
    assert profiles.has_nvidia_gpu(bus) and profiles.gpu_holder(bus) == "nouveau"


def test_a_bus_that_cannot_be_read_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMULATED_ROOT_ENV, str(tmp_path / "absent"))
    assert realhost.bus() is None
