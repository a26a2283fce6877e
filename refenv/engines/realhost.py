"""A real host's GPUs as a profile the predictor understands: this machine's, read through NVML, or a
cluster node's, read from the diagnosis document its probe job wrote."""

from __future__ import annotations

import logging

from harness import compat
from harness.facts import NvmlFact, PciDeviceFact, devices_of, driver_of, nvml_of
from harness.gather import nvml, pci
from harness.schema.envelope import DiagnoseDocument
from refenv.model.profiles import Faults, Gpu, PciDevice, Profile

LOG = logging.getLogger(__name__)


def probe() -> Profile | None:
    """The host's driver and GPUs (the harness's own NVML probe), or None without a working driver."""
    fact, _ = nvml.probe()
    return from_nvml(fact)


def bus() -> tuple[PciDevice, ...] | None:
    """This machine's PCI bus as the harness reads it (harness/gather/pci.py), or None where it cannot be read:
    what a real host without a working driver is predicted from (no NVIDIA GPU on it: NO_DRIVER)."""
    return _devices(pci.devices())


def bus_of(document: DiagnoseDocument) -> tuple[PciDevice, ...] | None:
    """A node's PCI bus from `harness diagnose --json`'s facts.driver.pci, or None where the node could not read it."""
    return _devices(driver_of(document.facts).get("pci"))


def _devices(found: list[PciDeviceFact] | None) -> tuple[PciDevice, ...] | None:
    if not found:
        return None
    return tuple(PciDevice(str(d.get("address") or ""), str(d.get("vendor") or ""), str(d.get("device_class") or ""),
                           d.get("driver")) for d in found)


def from_nvml(fact: NvmlFact) -> Profile | None:
    """A profile of what the harness's NVML probe found (here, or on a node in `harness diagnose --json`'s
    facts.driver.nvml), or None without a working driver."""
    driver, cuda = fact.get("driver_version"), fact.get("cuda_driver_version")
    if fact.get("init_error") or not driver or not cuda:
        LOG.info("no working NVIDIA driver on this host: %s", fact.get("init_error"))
        return None
    gpus = tuple(Gpu(str(d.get("name")), int(d.get("memory_total_bytes") or 0), str(d.get("compute_capability")), 0,
                     str(d.get("uuid")), str(d.get("pci_bus_id")), int(d.get("index") or i))
                 for i, d in enumerate(devices_of(fact)))
    return Profile("real", "this machine's GPUs", driver, compat.int_to_cuda(cuda), gpus, Faults())


def profile_of(document: DiagnoseDocument) -> tuple[Profile | None, str | None]:
    """The node's driver profile from `harness diagnose --json`, or None with the reason NVML gave."""
    fact = nvml_of(document.facts)
    profile = from_nvml(fact)
    return profile, None if profile else str(fact.get("init_error") or "no NVIDIA driver answers")
