"""The values `invoke reproduce` passes around: what a report says, what is inferred from it, what is run."""

from __future__ import annotations

from dataclasses import dataclass

from refenv.errors import RefenvError
from refenv.model.matrix import Environment, Host, Scenario
from refenv.model.profiles import Faults, Profile
from refenv.reproduce.gpus import GpuGuess


class ReproduceError(RefenvError):
    """A report (or flags) that cannot be reproduced: the message says what is missing or wrong."""


@dataclass(frozen=True)
class Reported:
    """What happened on the reporter's machine, as the report tells it."""

    is_available: bool | None
    torch_message: str | None      # "CUDA initialization: ..." for a warning, else what torch raised
    verdict: str | None            # the classifier's verdict over the report's facts
    remediation: tuple[str, ...]   # the fixes of its primary finding


@dataclass(frozen=True)
class Inferred:
    """The environment and host a report describes, before anything is substituted."""

    torch: str                     # public version, "2.14.1"
    variant: str                   # "cu130" or "cpu" (from torch.version.cuda, not the label)
    python: str | None             # "3.11"
    os: str                        # "Linux", "Windows" or "Darwin"
    driver: str | None             # "570.172.08"; None when no driver is known
    driver_cuda: int | None        # what cuDriverGetVersion reports, 12080
    gpus: tuple[GpuGuess, ...]
    faults: Faults
    no_driver: bool                # torch found no driver and nothing says the host has one
    gpu_access: bool               # False: a container started without GPU access
    env: tuple[tuple[str, str], ...]   # CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, ... as reported
    evidence: tuple[str, ...]      # where each value came from
    reported: Reported | None = None
    torch_assumed: bool = False    # the report names no torch: the release was chosen (its newest patch here is used)


@dataclass(frozen=True)
class Reproduction:
    """One cell that stands for the reporter's machine, and what had to be substituted to build it."""

    environment: Environment
    host: Host
    scenario: Scenario
    profile: Profile | None
    substitutions: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def simulated(self) -> bool:
        return self.host.kind == "simulated"


@dataclass(frozen=True)
class FixPlan:
    """The remediation applied: what changed, and the cell that should now be OK."""

    kind: str                      # "driver", "wheel" or "scenario"
    summary: str
    reproduction: Reproduction
    predicted: str                 # the verdict the compatibility rules expect for the fixed cell
