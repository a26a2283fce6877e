"""The PCI bus, read from sysfs-like trees built here and judged: no NVIDIA GPU, one held by nouveau, by vfio-pci,
by no driver, and a bus that cannot be read (unknown, not "no GPU")."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import catalogue
from harness.classify import classify
from harness.facts import Facts, empty_facts
from harness.gather import pci
from harness.schema import DRIVER_BROKEN, NO_DRIVER, NOT_VISIBLE, OK, SEVERITY_WARNING

VIRTIO_GPU = ("0000:00:02.0", "0x1af4", "0x030000", "virtio-pci")
BOCHS = ("0000:00:03.0", "0x1234", "0x030000", "bochs-drm")
NET = ("0000:00:04.0", "0x1af4", "0x020000", "virtio-pci")
NVIDIA_AUDIO = ("0000:18:00.1", "0x10de", "0x040300", "snd_hda_intel")


def bus(tmp_path: Path, *devices: tuple[str, str, str, str | None]) -> str:
    """A /sys/bus/pci-shaped tree: devices/<address>/{vendor,class} and a driver symlink when one is bound."""
    root = tmp_path / "bus" / "pci"
    (root / "devices").mkdir(parents=True)
    for address, vendor, klass, driver in devices:
        folder = root / "devices" / address
        folder.mkdir()
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "class").write_text(klass + "\n")
        if driver is not None:
            (folder / "driver").symlink_to(f"../../../bus/pci/drivers/{driver}")
    return str(root)


def facts_of(root: str, *, in_container: bool = False, libcuda: bool | None = False) -> Facts:
    facts = empty_facts()
    facts["driver"]["pci_root"] = root
    facts["driver"]["pci"] = pci.devices(root)
    facts["driver"]["dev_nodes"] = []
    facts["driver"]["libcuda"] = {"loaded": libcuda, "error": None if libcuda else "libcuda.so.1: cannot open"}
    facts["driver"]["nvml"] = {"loaded": False}
    facts["visibility"] = {"in_container": in_container,
                           "container_evidence": "/run/.containerenv exists" if in_container else None}
    facts["torch"] = {"importable": True, "version": "2.14.1", "cuda": "13.0", "is_available": False}
    return facts


def gpu(driver: str | None, address: str = "0000:18:00.0", klass: str = "0x030200") -> tuple[str, str, str, str | None]:
    return address, "0x10de", klass, driver


def test_sysfs_is_read_as_vendor_class_and_the_bound_drivers_name(tmp_path: Path) -> None:
    root = bus(tmp_path, gpu("nouveau"), gpu(None, "0000:3b:00.0"), VIRTIO_GPU)
    assert pci.devices(root) == [
        {"address": "0000:00:02.0", "vendor": "0x1af4", "device_class": "0x030000", "driver": "virtio-pci"},
        {"address": "0000:18:00.0", "vendor": "0x10de", "device_class": "0x030200", "driver": "nouveau"},
        {"address": "0000:3b:00.0", "vendor": "0x10de", "device_class": "0x030200", "driver": None}]


def test_an_absent_or_empty_bus_is_unknown_and_says_nothing(tmp_path: Path) -> None:
    assert pci.devices(str(tmp_path / "nothing")) is None
    assert pci.devices(bus(tmp_path)) is None
    plain = classify(facts_of(str(tmp_path / "nothing")))
    assert plain.verdict == NO_DRIVER
    assert all("PCI" not in f.title for f in plain.findings)
    # The install-a-driver answer stands where the bus says nothing.
    assert any(f.remedy is not None and f.remedy.kind == "install_driver" for f in plain.failing)


def test_the_simulation_names_its_bus_else_the_machines_own_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pci.SIMULATED_ROOT_ENV, raising=False)
    assert pci.root() == "/sys/bus/pci"
    monkeypatch.setenv(pci.SIMULATED_ROOT_ENV, "/etc/refenv/pci")
    assert pci.root() == "/etc/refenv/pci"


@pytest.mark.parametrize("in_container", [False, True])
def test_no_nvidia_device_says_there_is_no_gpu_not_install_a_driver(tmp_path: Path, in_container: bool) -> None:
    d = classify(facts_of(bus(tmp_path, VIRTIO_GPU, BOCHS, NET), in_container=in_container))
    assert d.verdict == NO_DRIVER
    first = d.failing[0]
    assert "has no NVIDIA GPU" in first.title
    assert ("container's host" in first.title) == in_container
    assert first.remedy is not None and first.remedy.kind == "attach_gpu"
    words = " ".join(first.remediation)
    assert "Red Hat (virtio) [0x1af4]" in words and "QEMU (Bochs display) [0x1234]" in words
    assert "0x020000" not in " ".join(first.evidence)  # a network card is no display device
    # Neither a driver to install nor GPU access to give: no other failing finding says so.
    assert {f.remedy.kind for f in d.failing if f.remedy} == {"attach_gpu"}
    assert NOT_VISIBLE not in d.failing_verdicts


def test_an_nvidia_cards_audio_function_is_not_a_gpu(tmp_path: Path) -> None:
    d = classify(facts_of(bus(tmp_path, NVIDIA_AUDIO, VIRTIO_GPU)))
    assert d.failing[0].remedy is not None and d.failing[0].remedy.kind == "attach_gpu"


@pytest.mark.parametrize(("bound", "words"), [
    ("nouveau", "blacklist"), ("vfio-pci", "virtual machine"), (None, "modprobe nvidia"), ("pci-stub", "pci-stub")])
def test_an_nvidia_gpu_held_by_another_driver_is_the_driver_layer_named(
        tmp_path: Path, bound: str | None, words: str) -> None:
    d = classify(facts_of(bus(tmp_path, gpu(bound), VIRTIO_GPU), in_container=True))
    assert d.verdict == DRIVER_BROKEN
    first = d.failing[0]
    assert first.remedy is not None and first.remedy.kind == "rebind_gpu"
    assert first.remedy.get("bound") == (bound or "none")
    assert words in " ".join(first.remediation)
    assert "0000:18:00.0" in " ".join(first.evidence)


def test_nouveau_on_a_machine_without_nvidias_libraries_is_no_driver_yet(tmp_path: Path) -> None:
    d = classify(facts_of(bus(tmp_path, gpu("nouveau", klass="0x030000"))))
    assert d.verdict == NO_DRIVER
    assert d.failing[0].remedy is not None and "install the NVIDIA driver" in " ".join(d.failing[0].remediation)


def test_a_gpu_on_nvidias_driver_adds_nothing(tmp_path: Path) -> None:
    d = classify(facts_of(bus(tmp_path, gpu("nvidia"), NVIDIA_AUDIO), libcuda=None))
    assert all(f.remedy is None or f.remedy.kind not in ("rebind_gpu", "attach_gpu") for f in d.findings)


def test_one_gpu_set_aside_beside_one_on_nvidias_driver_is_a_warning(tmp_path: Path) -> None:
    facts = facts_of(bus(tmp_path, gpu("nvidia"), gpu("vfio-pci", "0000:3b:00.0")), libcuda=None)
    facts["torch"] = {"importable": True, "version": "2.14.1", "cuda": "13.0", "is_available": True,
                      "device_count": 1}
    d = classify(facts)
    assert d.verdict == OK
    assert [f.severity for f in d.findings if f.remedy and f.remedy.kind == "rebind_gpu"] == [SEVERITY_WARNING]


def test_the_catalogue_knows_each_pci_case_with_its_fix() -> None:
    for ident, kind in (("kernel.nouveau_bound", "rebind_gpu"), ("kernel.vfio_bound", "rebind_gpu"),
                        ("kernel.gpu_unbound", "rebind_gpu"), ("kernel.no_nvidia_gpu", "attach_gpu")):
        entry = catalogue.entry(ident)
        assert entry.remedy is not None and entry.remedy.kind == kind
    assert catalogue.find("  Kernel driver in use: nouveau", ["kernel.nouveau_bound"]) is not None


def test_the_containers_name_the_view_by_the_variable_the_harness_reads() -> None:
    from refenv.builder import driverfiles
    from refenv.run import containers

    assert containers.SIMULATED_ROOT_ENV == pci.SIMULATED_ROOT_ENV == driverfiles.SIMULATED_PCI_ENV


@pytest.mark.parametrize(("name", "verdict"), [("no-nvidia-gpu", NO_DRIVER), ("nouveau-bound", DRIVER_BROKEN)])
def test_a_profiles_view_reads_back_as_the_harness_judges_it(tmp_path: Path, name: str, verdict: str) -> None:
    from refenv.builder import simdriver
    from refenv.model import profiles

    root = simdriver.write_pci_view(*profiles.pci_tree(profiles.get(name)), tmp_path / "pci")
    assert len(pci.devices(str(root)) or ()) == len(profiles.get(name).pci_devices)
    assert classify(facts_of(str(root), in_container=True)).verdict == verdict


def test_a_gpu_profiles_default_view_is_each_gpu_on_nvidia() -> None:
    from refenv.model import profiles

    r580 = profiles.get("r580")
    assert [(d.address, d.driver) for d in r580.pci_devices] == [
        (g.pci_bus_id[4:].lower(), "nvidia") for g in r580.gpus]
    assert r580.has_nvidia_gpu and r580.gpu_holder is None
