"""The faults the simulated driver can raise: their codes, their names on the command line, and the
failure catalogue's row for each (harness.catalogue), so a fault, its words and its fix have one source.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness import catalogue

# The codes images/simdriver knows how to return (nvmlInit; cuInit), named by the catalogue.
NVML_INIT_ERRORS = {code: catalogue.nvml_error_texts()[code] for code in (9, 18, 999)}
CUINIT_ERRORS = {code: catalogue.cuda_error_names()[code] for code in (3, 34, 100, 803, 804, 999)}


@dataclass(frozen=True)
class Faults:
    """What goes wrong on this host (0 / False: nothing)."""

    nvml_init_error: int = 0
    cuinit_error: int = 0
    stub: bool = False  # libcuda is the toolkit's stub: every driver call answers 34


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
