"""Host profiles for the simulated driver: a driver release, its GPUs and its faults, as checked-in data.

`data/profiles.json` names its sources; this module validates it (an error names the profile and the
field) and renders a profile into the key=value file the simulated libraries read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import compat
from harness.gpus.names import nvml_model, nvml_models
from refenv.model.faults import CDI_SPEC_STATES, CUINIT_ERRORS, NVML_INIT_ERRORS, Faults

__all__ = ["CUINIT_ERRORS", "NVML_INIT_ERRORS", "Faults", "Gpu", "PciDevice", "Profile", "ProfileError"]

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "profiles.json"

# Matched whole (fullmatch) and in ASCII digits: each value lands in a key=value line of the simulated
# driver's configuration, where a newline would start a line of its own (a second [gpu] block).
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_DRIVER_RE = re.compile(r"[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?")
_UUID_RE = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_BUS_RE = re.compile(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]")
_CC_RE = re.compile(r"[0-9]{1,2}\.[0-9]")
# The C side's limits (refenv/images/simdriver/sim_config.h): SIM_MAX_GPUS, and sim_gpu.name[96] with its NUL.
MAX_GPUS = 64
GPU_NAME_BYTES = 95

# The faults the simulated driver knows how to raise live in refenv/model/faults.py (named by the failure catalogue).


class ProfileError(ValueError):
    """A host profile is malformed or unknown; the message names the profile and the field."""


@dataclass(frozen=True)
class Gpu:
    """One simulated GPU as NVML and the driver API report it."""

    name: str
    memory_bytes: int
    compute_capability: str  # "9.0"
    sm_count: int
    uuid: str
    pci_bus_id: str  # NVML form, "00000000:18:00.0"
    minor: int  # /dev/nvidia<minor>, also the host's NVML index


@dataclass(frozen=True)
class PciDevice:
    """One device of the host's PCI bus as sysfs shows it (/sys/bus/pci/devices/<address>/{vendor,class,driver})."""

    address: str        # "0000:18:00.0"
    vendor: str         # "0x10de"
    device_class: str   # "0x030200"
    driver: str | None  # the bound driver; None: none bound


NVIDIA_VENDOR = "0x10de"
GPU_CLASS = "0x030200"   # a 3D controller, as data-center GPUs show (a VGA-compatible one is 0x030000)


def default_pci(gpus: Sequence[Gpu]) -> tuple[PciDevice, ...]:
    """What a GPU host's bus shows by default: each GPU a 3D controller of NVIDIA's, bound to `nvidia`."""
    return tuple(PciDevice(g.pci_bus_id[4:].lower(), NVIDIA_VENDOR, GPU_CLASS, "nvidia") for g in gpus)


def _nvidia_gpus(bus: Sequence[PciDevice]) -> list[PciDevice]:
    return [d for d in bus if d.vendor == NVIDIA_VENDOR and d.device_class.startswith("0x03")]


def has_nvidia_gpu(bus: Sequence[PciDevice]) -> bool:
    """Whether the bus shows an NVIDIA display or 3D controller (an NVIDIA GPU's audio function is no GPU)."""
    return bool(_nvidia_gpus(bus))


def gpu_holder(bus: Sequence[PciDevice]) -> str | None:
    """The driver that holds the bus's NVIDIA GPUs where it is not NVIDIA's ('nouveau', 'vfio-pci', 'none')."""
    held = [d.driver or "none" for d in _nvidia_gpus(bus)]
    return None if not held or "nvidia" in held else sorted(held)[0]


@dataclass(frozen=True)
class Profile:
    """A simulated host: one driver release, its GPUs, its faults."""

    name: str
    description: str
    driver_version: str  # "580.95.05"
    cuda_version: str  # "13.0", derived from the driver branch
    gpus: tuple[Gpu, ...]
    faults: Faults = field(default_factory=Faults)
    pci: tuple[PciDevice, ...] | None = None  # None: the default view of its GPUs (default_pci)

    @property
    def pci_devices(self) -> tuple[PciDevice, ...]:
        """What the host's PCI bus shows a container (sysfs is not namespaced)."""
        return default_pci(self.gpus) if self.pci is None else self.pci

    @property
    def has_nvidia_gpu(self) -> bool:
        return has_nvidia_gpu(self.pci_devices)

    @property
    def gpu_holder(self) -> str | None:
        """The driver that holds the host's NVIDIA GPUs where it is not NVIDIA's ('nouveau', 'vfio-pci', 'none')."""
        return gpu_holder(self.pci_devices)

    @property
    def branch(self) -> int:
        return compat.branch_of(self.driver_version)

    @property
    def cuda_driver_version(self) -> int:
        """What cuDriverGetVersion reports: 13000 for CUDA 13.0."""
        return compat.cuda_to_int(self.cuda_version)


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ProfileError(f"{DATA_FILE.name}: {where}: {what}")


def _gpus(raw: Any, where: str) -> tuple[Gpu, ...]:
    _need(isinstance(raw, list) and bool(raw), where, "expected a non-empty list of GPUs")
    gpus: list[Gpu] = []
    for i, entry in enumerate(raw):
        at = f"{where}[{i}]"
        _need(isinstance(entry, dict), at, "expected an object")
        named = entry.get("model")
        model = nvml_model(named) if isinstance(named, str) else None
        _need(model is not None, f"{at}.model", f"unknown GPU {named!r}; name one as NVML does, one of "
              f"{', '.join(sorted(m.name for m in nvml_models().values()))} (harness/data/gpu_specs.json)")
        assert model is not None
        uuid, bus = entry.get("uuid", ""), entry.get("pci_bus_id", "")
        _need(isinstance(uuid, str) and bool(_UUID_RE.fullmatch(uuid)), f"{at}.uuid",
              "expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (lower-case hex)")
        _need(isinstance(bus, str) and bool(_BUS_RE.fullmatch(bus)), f"{at}.pci_bus_id",
              "expected DDDDDDDD:BB:DD.F in upper-case hex, e.g. 00000000:18:00.0")
        gpus.append(Gpu(model.name, model.memory_mib << 20, model.compute_capability, model.sm_count, uuid, bus,
                        i))
    _need(len({g.uuid for g in gpus}) == len(gpus), where, "UUIDs must be unique")
    _need(len({g.pci_bus_id for g in gpus}) == len(gpus), where, "PCI bus ids must be unique")
    return tuple(gpus)


_ADDRESS_RE = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_HEX_RE = re.compile(r"0x[0-9a-f]{4}")
_CLASS_RE = re.compile(r"0x[0-9a-f]{6}")
_DRIVER_NAME_RE = re.compile(r"[a-z0-9_-]{1,32}")


def _pci(raw: Any, where: str) -> tuple[PciDevice, ...] | None:
    if raw is None:
        return None
    _need(isinstance(raw, list), where, "expected a list of PCI devices")
    out = []
    for i, entry in enumerate(raw):
        at = f"{where}[{i}]"
        _need(isinstance(entry, dict) and set(entry) <= {"address", "vendor", "class", "driver"}, at,
              "expected {address, vendor, class, driver}")
        address, vendor, klass, driver = (entry.get(k) for k in ("address", "vendor", "class", "driver"))
        _need(isinstance(address, str) and bool(_ADDRESS_RE.fullmatch(address)), f"{at}.address",
              "expected DDDD:BB:DD.F in lower-case hex, as sysfs names it (0000:18:00.0)")
        _need(isinstance(vendor, str) and bool(_HEX_RE.fullmatch(vendor)), f"{at}.vendor", "expected 0x10de")
        _need(isinstance(klass, str) and bool(_CLASS_RE.fullmatch(klass)), f"{at}.class", "expected 0x030200")
        _need(driver is None or (isinstance(driver, str) and bool(_DRIVER_NAME_RE.fullmatch(driver))),
              f"{at}.driver", "a driver's name (nvidia, nouveau, vfio-pci), or null for none bound")
        out.append(PciDevice(address, vendor, klass, driver))
    _need(len({d.address for d in out}) == len(out), where, "addresses must be unique")
    return tuple(out)


def _faults(raw: Any, where: str) -> Faults:
    _need(isinstance(raw, dict), where, "expected an object")
    unknown = set(raw) - {"nvml_init_error", "cuinit_error", "cuinit_hang", "stub", "device_cgroup_denied", "cdi_spec",
                          "no_runtime"}
    _need(not unknown, where, f"unknown fault(s) {sorted(unknown)}")
    nvml, cuinit, stub = raw.get("nvml_init_error", 0), raw.get("cuinit_error", 0), raw.get("stub", False)
    hang = raw.get("cuinit_hang", False)
    denied, cdi, no_runtime = raw.get("device_cgroup_denied", False), raw.get("cdi_spec", "current"), \
        raw.get("no_runtime", False)
    _need(nvml == 0 or nvml in NVML_INIT_ERRORS, f"{where}.nvml_init_error",
          f"expected one of {sorted(NVML_INIT_ERRORS)}")
    _need(cuinit == 0 or cuinit in CUINIT_ERRORS, f"{where}.cuinit_error", f"expected one of {sorted(CUINIT_ERRORS)}")
    for key, value in (("cuinit_hang", hang), ("stub", stub), ("device_cgroup_denied", denied),
                       ("no_runtime", no_runtime)):
        _need(isinstance(value, bool), f"{where}.{key}", "expected true or false")
    _need(not (hang and cuinit), f"{where}.cuinit_hang", "a cuInit that never returns returns no error: drop one")
    _need(cdi in CDI_SPEC_STATES, f"{where}.cdi_spec", f"expected one of {', '.join(CDI_SPEC_STATES)}")
    return Faults(nvml, cuinit, hang, stub, denied, cdi, no_runtime)


def validate(raw: dict[str, Any], compat_data: compat.Compat | None = None) -> dict[str, Profile]:
    """Turn the raw JSON into profiles by name, or raise ProfileError naming the profile and field."""
    _need(raw.get("schema") == "refenv.profiles", "schema", "expected 'refenv.profiles'")
    _need(isinstance(raw.get("sources"), dict) and bool(raw["sources"]), "sources", "the data needs its sources")
    _need(isinstance(raw.get("profiles"), dict) and bool(raw["profiles"]), "profiles", "expected an object of profiles")
    entries: dict[str, Any] = raw["profiles"]
    profiles: dict[str, Profile] = {}
    for name, entry in entries.items():
        where = f"profiles.{name}"
        _need(bool(_NAME_RE.fullmatch(name)), where, "names are lower-case letters, digits and '-', like 'r535'")
        _need(isinstance(entry, dict), where, "expected an object")
        base: dict[str, Any] = {}
        if "base" in entry:
            _need(entry["base"] in entries and "base" not in entries[entry["base"]], f"{where}.base",
                  f"expected a profile without a base of its own, got {entry['base']!r}")
            base = entries[entry["base"]]
        merged = {**base, **entry}
        driver = merged.get("driver_version", "")
        _need(isinstance(driver, str) and bool(_DRIVER_RE.fullmatch(driver)), f"{where}.driver_version",
              "expected a Linux driver version such as '535.247.01'")
        cuda = compat.cuda_for_driver(driver, compat_data)
        _need(cuda is not None, f"{where}.driver_version", f"no CUDA version is known for {driver}'s branch")
        assert cuda is not None
        description = merged.get("description", "")
        _need(isinstance(description, str) and bool(description), f"{where}.description", "expected a sentence")
        profiles[name] = Profile(name, description, driver, cuda, _gpus(merged.get("gpus"), f"{where}.gpus"),
                                 _faults(merged.get("faults", {}), f"{where}.faults"),
                                 _pci(merged.get("pci"), f"{where}.pci"))
    return profiles


@lru_cache(maxsize=1)
def load() -> dict[str, Profile]:
    """The validated profiles, read once."""
    return validate(json.loads(DATA_FILE.read_text(encoding="utf-8")))


def get(name: str) -> Profile:
    """The profile called `name` (e.g. 'r535'), or ProfileError listing the known ones."""
    profiles = load()
    if name not in profiles:
        raise ProfileError(f"unknown host profile {name!r}; known profiles: {', '.join(sorted(profiles))}")
    return profiles[name]


def all() -> tuple[Profile, ...]:
    """Every shipped profile, in file order (read as `profiles.all()`)."""
    return tuple(load().values())


def names() -> tuple[str, ...]:
    return tuple(load())


def gpu_name_problem(name: str) -> str | None:
    """Why a GPU name cannot be simulated (a line break, a control character, too long), or None."""
    if not name.strip():
        return "an empty GPU name"
    if not name.isprintable():
        return "a GPU name holds a line break or control character"
    if len(name.encode("utf-8")) > GPU_NAME_BYTES:
        return f"a GPU name longer than the {GPU_NAME_BYTES} bytes NVML reports"
    return None


def capability_problem(cc: str) -> str | None:
    """Why a compute capability cannot be simulated (not MAJOR.MINOR in ASCII digits), or None."""
    if _CC_RE.fullmatch(cc):
        return None
    return f"compute capability {cc[:40]!r} is not MAJOR.MINOR such as 7.5"


def _checked(profile: Profile, gpus: Sequence[Gpu]) -> None:
    """Every value render_config writes, as the C parser reads it; ProfileError otherwise (defence in depth).

    The profile may be made on the fly (`invoke reproduce`): the error names the configuration, not profiles.json.
    """
    def _need(cond: bool, where: str, what: str) -> None:
        if not cond:
            raise ProfileError(f"{where}: {what}")

    where = f"simulated driver configuration of {profile.name[:64]!r}"
    _need(bool(_NAME_RE.fullmatch(profile.name)), f"{where}: profile", "lower-case letters, digits and '-'")
    _need(bool(_DRIVER_RE.fullmatch(profile.driver_version)), f"{where}: driver_version", "e.g. 535.183.01")
    _need(len(gpus) <= MAX_GPUS, where, f"at most {MAX_GPUS} GPUs (the simulated driver's limit), got {len(gpus)}")
    for i, gpu in enumerate(gpus):
        at = f"{where}: gpu[{i}]"
        problem = gpu_name_problem(gpu.name)
        _need(problem is None, f"{at}.name", str(problem))
        _need(bool(_CC_RE.fullmatch(gpu.compute_capability)), f"{at}.compute_capability", "MAJOR.MINOR")
        _need(bool(_UUID_RE.fullmatch(gpu.uuid)), f"{at}.uuid", "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
        _need(bool(_BUS_RE.fullmatch(gpu.pci_bus_id)), f"{at}.pci_bus_id", "DDDDDDDD:BB:DD.F")


def render_config(profile: Profile, gpus: Sequence[Gpu] | None = None, *, require_device_nodes: bool = False) -> str:
    """The key=value text the simulated libraries read (refenv/images/simdriver/sim_config.c), one [gpu] block each.

    `gpus` are the GPUs the host hands to the container (all of the profile's by default); each keeps
    its host minor number. With `require_device_nodes` the libraries also insist on /dev/nvidiactl
    and /dev/nvidia<minor>, as the real ones do inside a container.
    """
    chosen = profile.gpus if gpus is None else tuple(gpus)
    _checked(profile, chosen)
    lines = [
        f"# refenv simulated driver: host profile {profile.name}",
        "format=1",
        f"profile={profile.name}",
        f"driver_version={profile.driver_version}",
        f"cuda_driver_version={profile.cuda_driver_version}",
        f"nvml_init_error={profile.faults.nvml_init_error}",
        f"cuinit_error={profile.faults.cuinit_error}",
        f"cuinit_hang={int(profile.faults.cuinit_hang)}",
        f"stub={int(profile.faults.stub)}",
        f"require_device_nodes={int(require_device_nodes)}",
    ]
    for gpu in chosen:
        lines += [
            "",
            "[gpu]",
            f"name={gpu.name}",
            f"memory_bytes={gpu.memory_bytes}",
            f"compute_capability={gpu.compute_capability}",
            f"sm_count={gpu.sm_count}",
            f"uuid={gpu.uuid}",
            f"pci_bus_id={gpu.pci_bus_id}",
            f"minor={gpu.minor}",
        ]
    return "\n".join(lines) + "\n"


def pci_tree(profile: Profile) -> tuple[dict[str, str], dict[str, str]]:
    """The host's PCI bus as a sysfs-shaped tree: its files (path -> text) and its driver links (path -> target),
    paths relative to the tree's root, which stands for /sys/bus/pci (harness/gather/pci.py reads it)."""
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    for d in profile.pci_devices:
        files[f"devices/{d.address}/vendor"] = d.vendor + "\n"
        files[f"devices/{d.address}/class"] = d.device_class + "\n"
        if d.driver is not None:
            links[f"devices/{d.address}/driver"] = f"../../drivers/{d.driver}"
    return files, links
