"""Which Linux driver stands for a reported one: shipped host profiles first, then the toolkit table (pure)."""

from __future__ import annotations

import re

from harness import compat
from refenv.model import profiles
from refenv.model.profiles import Profile

# The host used when a report says nothing of its driver and the driver cannot change the outcome
# (a container without GPU access): R580, the current long-term branch (facts/cuda-compat.md).
DEFAULT_PROFILE = "r580"


# A Linux driver version as the simulated driver takes it (refenv/model/profiles.py): a three-digit branch.
LINUX_DRIVER_RE = re.compile(r"[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?")


def problem(version: str) -> str | None:
    """Why `version` cannot be simulated as a Linux driver (not such a number, older than every branch), or None."""
    if not LINUX_DRIVER_RE.fullmatch(version):
        return "expected a Linux driver version such as 470.182.03"
    if compat.cuda_for_driver(version) is None:
        return "older than every driver branch in refenv's tables"
    return None


def healthy_shipped() -> tuple[Profile, ...]:
    """The shipped profiles without faults, in file order."""
    return tuple(p for p in profiles.all() if p.faults == profiles.Faults())


def shipped_of_branch(branch: int) -> Profile | None:
    """The fault-free shipped profile of a driver branch: the one named r<branch> first."""
    found = [p for p in healthy_shipped() if p.branch == branch]
    return next((p for p in found if p.name == f"r{branch}"), found[0] if found else None)


def with_prefix(version: str) -> str | None:
    """A shipped driver whose version starts with `version` ('580.95' -> '580.95.05'), as NVML libraries print it."""
    wanted = compat.parse_version(version)
    for p in healthy_shipped():
        if compat.parse_version(p.driver_version)[:len(wanted)] == wanted:
            return p.driver_version
    return None


def for_cuda(driver_cuda: int) -> tuple[str, str]:
    """A Linux driver that reports `driver_cuda` (12080 -> a R570 driver), and where it came from."""
    cuda = compat.int_to_cuda(driver_cuda)
    data = compat.load()
    branches = sorted((b for b, c in data.branch_cuda.items() if c == cuda), reverse=True)
    for branch in branches:
        shipped = shipped_of_branch(branch)
        if shipped is not None:
            return shipped.driver_version, f"the shipped {shipped.name} profile's driver"
    floor = compat.min_driver_for_cuda(cuda)
    if floor is not None and compat.cuda_for_driver(floor) == cuda:
        return floor, f"the first driver of CUDA {cuda} (NVIDIA's toolkit table)"
    raise ValueError(f"no Linux driver in refenv's tables reports CUDA {cuda} ({driver_cuda})")


def recommended(cuda: str) -> tuple[str, str]:
    """The driver the fix recommends for a CUDA runtime: a shipped profile of the branch of its first driver."""
    floor = compat.min_driver_for_cuda(cuda)
    if floor is None:
        raise ValueError(f"no driver is known for CUDA {cuda}")
    branch = compat.branch_of(floor)
    shipped = shipped_of_branch(branch)
    if shipped is not None:
        return shipped.driver_version, f"R{branch}, as the shipped {shipped.name} profile ({shipped.driver_version})"
    return floor, f"R{branch}, its first release with CUDA {cuda} ({floor})"
