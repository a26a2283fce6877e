"""The PCI bus: is there an NVIDIA GPU at all, and is it bound to NVIDIA's driver? (pure)

Read from sysfs (harness/gather/pci.py). A device's class is 0xCCSSPP (class, subclass, programming interface):
0x03 is a display controller, 0x0300 a VGA-compatible one, 0x0302 a 3D controller (data-center GPUs); NVIDIA's
vendor id is 0x10de (PCI-SIG vendor ids, as listed by the PCI ID Repository, pci-ids.ucw.cz). A card's other
functions (its HDMI audio, 0x0403; its USB-C controller, 0x0c03) and NVIDIA's switches and bridges are not GPUs.
A bus that could not be read is unknown and says nothing here (a sandbox without /sys/bus/pci; WSL2, where the
GPU is reached through /dev/dxg and no NVIDIA PCI device shows).
"""

from __future__ import annotations

from harness.catalogue.remedies import render
from harness.classify.context import Context
from harness.facts import PciDeviceFact
from harness.schema import DRIVER_BROKEN, NO_DRIVER, SEVERITY_ERROR, SEVERITY_WARNING, Finding, Remedy

LAYER = "driver"
NVIDIA = "0x10de"
DISPLAY_CLASS = "0x03"
NVIDIA_DRIVER = "nvidia"
# Who makes the display devices a machine without an NVIDIA GPU has (PCI ID Repository, pci-ids.ucw.cz).
VENDORS = {
    "0x10de": "NVIDIA", "0x1af4": "Red Hat (virtio)", "0x1234": "QEMU (Bochs display)", "0x8086": "Intel",
    "0x1002": "AMD", "0x15ad": "VMware", "0x1414": "Microsoft (Hyper-V)", "0x1013": "Cirrus Logic (emulated)",
    "0x1a03": "ASPEED (a server's management display)", "0x102b": "Matrox", "0x80ee": "VirtualBox",
    "0x1d0f": "Amazon", "0x106b": "Apple",
}
# What each driver that holds an NVIDIA GPU instead of NVIDIA's means (Linux: drivers/gpu/drm/nouveau, the
# open-source driver that cannot run CUDA; drivers/vfio/pci, which hands a device to a virtual machine).
HOLDERS = {"nouveau": "the open-source nouveau driver, which cannot run CUDA",
           "vfio-pci": "vfio-pci: the GPU is set aside for a virtual machine (PCI passthrough)",
           "pci-stub": "pci-stub: the GPU is set aside, for a virtual machine or kept from every driver"}


def vendor_name(vendor: str | None) -> str:
    """'Red Hat (virtio) [0x1af4]', or the bare id for a vendor not in the table."""
    name = VENDORS.get(vendor or "")
    return f"{name} [{vendor}]" if name else f"vendor {vendor or 'unknown'}"


def is_display(device: PciDeviceFact) -> bool:
    return (device.get("device_class") or "").startswith(DISPLAY_CLASS)


def nvidia_gpus(devices: list[PciDeviceFact]) -> list[PciDeviceFact]:
    return [d for d in devices if d.get("vendor") == NVIDIA and is_display(d)]


def no_nvidia_gpu(ctx: Context) -> bool:
    """The bus was read and holds no NVIDIA GPU (False where it is unknown)."""
    devices = ctx.driver.get("pci")
    return bool(devices) and not nvidia_gpus(list(devices or ()))


def _where(ctx: Context) -> str:
    root = ctx.driver.get("pci_root") or "/sys/bus/pci"
    return f"PCI bus ({root})"


def _describe(device: PciDeviceFact) -> str:
    kind = "3D controller" if (device.get("device_class") or "").startswith("0x0302") else "display controller"
    bound = device.get("driver") or "no driver"
    return f"{device.get('address')}: {kind} of {vendor_name(device.get('vendor'))}, bound to {bound}"


def check_pci(ctx: Context) -> list[Finding]:
    """No NVIDIA GPU on the bus; or NVIDIA GPUs that no NVIDIA driver holds (nouveau, vfio-pci, none)."""
    devices = list(ctx.driver.get("pci") or ())
    if not devices:
        return []
    gpus = nvidia_gpus(devices)
    if not gpus:
        return [_no_gpu(ctx, devices)]
    held = [g for g in gpus if g.get("driver") != NVIDIA_DRIVER]
    if not held:
        return []
    # With one GPU on NVIDIA's driver, the others may be set aside on purpose (a VM's passthrough): a warning.
    severity = SEVERITY_WARNING if len(held) < len(gpus) else SEVERITY_ERROR
    bound = sorted({g.get("driver") or "none" for g in held})
    first = bound[0]
    # Inside a container the libraries say nothing of the host's; on a machine without them, nothing NVIDIA's is
    # installed yet: install it, keeping nouveau out. With them, the driver is there and the kernel side is held.
    installed = ctx.in_container or ctx.libcuda.get("loaded") or ctx.nvml.get("loaded")
    verdict = DRIVER_BROKEN if installed or first != "nouveau" else NO_DRIVER
    what = HOLDERS.get(first, "no driver" if first == "none" else f"the {first} driver")
    host = "the NVIDIA GPU of this container's host" if ctx.in_container else "this machine's NVIDIA GPU"
    title = (f"{host} is bound to {what}" if first != "none" else
             f"{host} is bound to no driver: the NVIDIA kernel module did not take it")
    evidence = [f"{_where(ctx)}: {_describe(g)}" for g in held]
    if ctx.in_container:
        evidence.append("a container sees its host's PCI bus (sysfs is not namespaced)")
    remedy = Remedy("rebind_gpu").with_params(bound=first, installed="yes" if installed else None)
    return [Finding(verdict, severity, title, tuple(evidence), render(remedy), LAYER, remedy)]


def _no_gpu(ctx: Context, devices: list[PciDeviceFact]) -> Finding:
    shown = [d for d in devices if is_display(d)]
    vendors = ", ".join(dict.fromkeys(vendor_name(d.get("vendor")) for d in shown)) or "none"
    if ctx.in_container:
        title = "this container's host has no NVIDIA GPU: its PCI bus, which a container sees, shows none"
    else:
        title = "this machine (or VM) has no NVIDIA GPU: its PCI bus shows none, so there is no GPU for a driver"
    evidence = [f"{_where(ctx)}: {len(devices)} device(s), no NVIDIA GPU (vendor {NVIDIA}, class 0x03xxxx)",
                *(f"{_where(ctx)}: {_describe(d)}" for d in shown)]
    if not shown:
        evidence.append("no display or 3D controller at all")
    remedy = Remedy("attach_gpu").with_params(vendors=vendors, container="yes" if ctx.in_container else None)
    return Finding(NO_DRIVER, SEVERITY_ERROR, title, tuple(evidence), render(remedy), LAYER, remedy)
