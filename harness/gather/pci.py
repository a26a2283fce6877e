"""The PCI bus as sysfs shows it: each device's vendor, class and bound driver (no lspci needed).

sysfs is not namespaced, so inside a container this is the host's bus (Linux Documentation/ABI/testing/
sysfs-bus-pci: `vendor` and `class` hold hex numbers, `driver` is a symlink to the bound driver, absent when none
is bound). A simulated host hands its container a tree of the same shape and names it in `SIMULATED_ROOT_ENV`
(refenv/run/containers.py), as the simulated driver's own configuration is named in REFENV_SIMDRIVER_CONF; where
that variable is unset, the machine's own bus is read.
"""

from __future__ import annotations

import os

from harness.facts import PciDeviceFact

ROOT = "/sys/bus/pci"
SIMULATED_ROOT_ENV = "REFENV_SIMULATED_PCI"


def root() -> str:
    """The bus to read: a simulated host's view where the simulation names one, else the machine's own."""
    return os.environ.get(SIMULATED_ROOT_ENV) or ROOT


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(64).strip().lower() or None
    except OSError:
        return None


def devices(bus: str | None = None) -> list[PciDeviceFact] | None:
    """Every device on the bus, in address order; None where the bus cannot be read or shows nothing (some
    sandboxes; WSL2, whose GPU is reached through /dev/dxg, not a PCI device): unknown, not "no device"."""
    folder = os.path.join(bus or root(), "devices")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    out: list[PciDeviceFact] = []
    for name in names:
        where = os.path.join(folder, name)
        try:
            driver: str | None = os.path.basename(os.readlink(os.path.join(where, "driver")))
        except OSError:
            driver = None
        out.append({"address": name, "vendor": _read(os.path.join(where, "vendor")),
                    "device_class": _read(os.path.join(where, "class")), "driver": driver})
    return out or None
