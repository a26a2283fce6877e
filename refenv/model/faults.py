"""The faults the simulated driver can raise: their codes, their names on the command line, and the
failure catalogue's row for each (harness.catalogue), so a fault, its words and its fix have one source.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness import catalogue

# The codes refenv/images/simdriver knows how to return (nvmlInit; cuInit), named by the catalogue.
NVML_INIT_ERRORS = {code: catalogue.nvml_error_texts()[code] for code in (9, 18, 999)}
CUINIT_ERRORS = {code: catalogue.cuda_error_names()[code] for code in (3, 34, 100, 803, 804, 999)}


# What state the host's CDI spec (the one `nvidia-ctk cdi generate` wrote) is in, besides "current":
# "stale-uvm": written before the driver was reloaded, it names /dev/nvidia-uvm by a major number the
# kernel has since given to nothing (the uvm major is allocated dynamically); "absent": none was written.
CDI_SPEC_STATES = ("current", "stale-uvm", "absent")


@dataclass(frozen=True)
class Faults:
    """What goes wrong on this host (0 / False / "current": nothing)."""

    nvml_init_error: int = 0
    cuinit_error: int = 0
    # cuInit never returns once it reaches a GPU: a GPU fallen off the bus (Xid 79) or a driver hung after an
    # error, so torch.cuda.is_available() blocks (refenv/images/simdriver/libcuda.c, hangs_here).
    cuinit_hang: bool = False
    stub: bool = False  # libcuda is the toolkit's stub: every driver call answers 34
    # The container's device cgroup lets it create the GPU nodes but not open them ("c 195:* m"): what
    # systemd leaves after `systemctl daemon-reload` on a host whose containers got their devices from the
    # toolkit's hook (NVIDIA/nvidia-container-toolkit#48, #251).
    device_cgroup_denied: bool = False
    cdi_spec: str = "current"
    no_runtime: bool = False  # the NVIDIA runtime is not installed: --gpus cannot be honoured


@dataclass(frozen=True)
class NamedFault:
    """A fault `invoke reproduce --fault NAME` can ask for, and the catalogue row whose message names it."""

    name: str
    entry: str
    faults: Faults


NAMED = (
    # A driver upgraded without a reboot: NVML says 18, cuInit 803 (facts/torch-failures.md, "Around torch").
    NamedFault("mismatch", "nvml.version_mismatch", Faults(nvml_init_error=18, cuinit_error=803)),
    NamedFault("not-loaded", "nvml.driver_not_loaded", Faults(nvml_init_error=9, cuinit_error=100)),
    NamedFault("stub", "cuda.stub_library", Faults(stub=True)),
    NamedFault("cuinit-3", "torch.init_failed", Faults(cuinit_error=3)),
    NamedFault("cuinit-803", "cuda.driver_mismatch", Faults(cuinit_error=803)),
    NamedFault("cuinit-804", "cuda.compat_not_supported", Faults(cuinit_error=804)),
    NamedFault("cuinit-999", "torch.unknown_error", Faults(cuinit_error=999)),
    NamedFault("cuinit-hang", "cuda.init_hangs", Faults(cuinit_hang=True)),
    NamedFault("device-cgroup", "toolkit.device_cgroup_denied", Faults(device_cgroup_denied=True)),
    NamedFault("stale-cdi", "toolkit.cdi_stale_uvm", Faults(cdi_spec="stale-uvm")),
    NamedFault("no-cdi-spec", "cdi.unresolvable", Faults(cdi_spec="absent")),
    NamedFault("no-runtime", "docker.no_gpu_runtime", Faults(no_runtime=True)),
)
FAULTS = {f.name: f.faults for f in NAMED}


def for_nvml(code: int | None) -> NamedFault | None:
    """The named fault an NVML init error stands for (18 -> mismatch, 9 -> not-loaded)."""
    return next((f for f in NAMED if code and f.faults.nvml_init_error == code), None)


def for_cuda_error(code: int) -> Faults | None:
    """The fault the simulated driver raises for this cuInit error, or None when it cannot."""
    if code == 34:
        return Faults(stub=True)
    return Faults(cuinit_error=code) if code in CUINIT_ERRORS else None
