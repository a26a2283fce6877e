"""Upgrade readiness: per environment, the hosts where torch gets a GPU, the rest with the smallest fix (pure).

A matrix run proves refenv's rules ("PASS DRIVER_TOO_OLD": the prediction held); readiness answers what a
user decides on: where torch gets a GPU (observed verdict OK, real or simulated), where it does not, with
the verdict and the smallest change (a driver branch and its minimum version from `harness.compat`, or
another build of the same torch release, or another environment of the matrix that is ready there).
Scenarios that hide devices on purpose (no --gpus, CUDA_VISIBLE_DEVICES=-1, ...) say nothing about a
host: a host is refused only on what torch saw with plain GPU access.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness import compat, schema

# Variables that change what a container sees; a scenario that sets one tests the diagnosis, not the host.
VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
PASS = "PASS"  # refenv.model.records.PASS: observed agreed with expected
# Not a verdict of torch's: torch gets the GPU, but something else of the image cannot run there (an
# extension that does not import, has no code for the GPU, needs a newer driver: harness/stack).
STACK = "STACK"


def plain_gpu_access(gpus: str, env: Mapping[str, str]) -> bool:
    """Whether a scenario starts the container with GPU access and leaves device visibility alone."""
    return gpus != "none" and not any(name in env for name in VISIBILITY_VARIABLES)


@dataclass(frozen=True)
class CellFacts:
    """What readiness needs of one cell: plain data, read from a run document by the caller."""

    environment: str
    host: str
    scenario: str
    status: str                    # the cell's status (PASS when observed agreed with expected)
    expected: str | None           # the expected verdict
    observed: str | None           # the observed verdict; None when the cell gave no answer
    simulated: bool                # the observation came from refenv's simulated driver
    gpu_access: bool               # plain_gpu_access() of the cell's scenario
    driver: str | None             # the host's driver version, '535.247.01'; None without a driver
    torch: str                     # the environment's torch version, '2.14.1'
    cuda: str | None               # the environment's CUDA version, '13.0'; None for a CPU build
    driver_cuda: int | None = None     # the host's cuDriverGetVersion value, 12020; derived from driver if None
    capability: str | None = None      # the host's first GPU's compute capability, '9.0'
    reason: str = ""                   # the cell's reason, shown for a host that gave no answer
    remedy: str | None = None          # the fix the cell's diagnosis gave for its verdict, in words
    stack_problem: str | None = None   # what of the image's stack cannot run on this host, in a sentence
    stack_fix: str | None = None       # its fix, in words


@dataclass(frozen=True)
class ReadyHost:
    host: str
    simulated: bool
    scenario: str                  # the first scenario where torch got the GPU

    @property
    def label(self) -> str:
        """'r580 (simulated)', 'real (real GPU)'."""
        return f"{self.host} ({'simulated' if self.simulated else 'real GPU'})"


@dataclass(frozen=True)
class Fix:
    """The smallest change that gives torch a GPU on a refused host."""

    text: str                      # 'install R580 (>= 580.65.06) or use the cu129 build (torch 2.14.1+cu129)'
    min_driver: str | None = None  # '580.65.06' when a driver upgrade is the fix
    branch: str | None = None      # 'R580'
    build: str | None = None       # the build or environment to use instead


@dataclass(frozen=True)
class RefusedHost:
    host: str
    verdict: str
    fix: Fix

    @property
    def label(self) -> str:
        """'r470: DRIVER_TOO_OLD (needs >= 580.65.06)'."""
        need = f"needs >= {self.fix.min_driver}" if self.fix.min_driver else self.fix.text
        return f"{self.host}: {self.verdict} ({need})"


@dataclass(frozen=True)
class Readiness:
    environment: str
    torch: str
    cuda: str | None
    ready: tuple[ReadyHost, ...]
    refused: tuple[RefusedHost, ...]
    untested: tuple[tuple[str, str], ...]    # (host, why): no plain GPU-access cell gave an answer
    cells: int
    disagreed: tuple[str, ...]               # ids of cells whose observation differed from the prediction

    @property
    def is_ready(self) -> bool:
        return bool(self.ready)

    @property
    def agreed(self) -> bool:
        return not self.disagreed


def _driver_cuda(c: CellFacts) -> int | None:
    if c.driver_cuda is not None:
        return c.driver_cuda
    known = compat.cuda_for_driver(c.driver) if c.driver else None
    return compat.cuda_to_int(known) if known else None


def _alternative(c: CellFacts, ready_elsewhere: Mapping[str, tuple[str, ...]]) -> str | None:
    """Another build of the same torch release this driver runs, else a matrix environment ready on the host."""
    driver_cuda = _driver_cuda(c)
    if driver_cuda is not None and c.cuda is not None:
        variant = compat.best_variant(compat.torch_series(c.torch), driver_cuda)
        if variant and compat.variant_cuda(variant) != c.cuda:
            return f"the {variant} build (torch {compat.public_version(c.torch)}+{variant})"
    others = [e for e in ready_elsewhere.get(c.host, ()) if e != c.environment]
    return f"{others[0]}, ready there" if others else None


def fix_for(c: CellFacts, ready_elsewhere: Mapping[str, tuple[str, ...]]) -> Fix:
    """The smallest fix for the verdict torch gave on this host, or for the stack where torch got the GPU (pure):
    the first kind of fix the verdict table names for it (harness/schema/verdicts.py), worded for this host."""
    verdict, cuda = c.observed or "", c.cuda
    if verdict == schema.OK and c.stack_problem:
        return Fix(f"{c.stack_problem}" + (f"; {c.stack_fix}" if c.stack_fix else ""))
    if verdict == schema.CPU_WHEEL or cuda is None:
        other = next((e for e in ready_elsewhere.get(c.host, ()) if e != c.environment), None)
        build = f"use a CUDA build{f' ({other}, ready there)' if other else ''}"
        if verdict == schema.DRIVER_BROKEN and c.remedy:  # a broken driver stops any build: both are needed
            return Fix(f"{c.remedy}; then {build}", build=other)
        return Fix(build, build=other)
    floor = compat.minor_floor(compat.parse_version(cuda)[0])
    need = floor[0] if floor else compat.min_driver_for_cuda(cuda)
    branch = f"R{compat.branch_of(need)}" if need else None
    install = f"install {branch} (>= {need})" if need else f"install a driver for CUDA {cuda}"
    kinds = schema.BY_CODE[verdict].fixes if verdict in schema.BY_CODE else ()
    first = kinds[0] if kinds else None
    if first == schema.FIX_DRIVER:
        # The verdict's other kind of fix, a build this driver runs, is offered beside the driver.
        alt = _alternative(c, ready_elsewhere) if schema.FIX_WHEEL in kinds else None
        return Fix(install + (f" or use {alt}" if alt else ""), need, branch, alt)
    if first == schema.FIX_ACCESS:
        if c.driver is None:
            # A host with no driver at all (matrix host kind `none`): the toolkit had nothing to inject.
            return Fix(f"{install} and the NVIDIA container toolkit", need, branch)
        return Fix("start the container with GPU access (--gpus) through the NVIDIA container toolkit")
    if first == schema.FIX_REPAIR:
        return Fix(c.remedy or "repair the driver: the cell's findings name the fault")
    if first == schema.FIX_WHEEL:  # a build compiled for the GPU (a CPU build was answered above)
        sm = compat.sm_name(c.capability) if c.capability else "this GPU"
        return Fix(f"use a build compiled for {sm}")
    return Fix(f"see the cell's findings ({verdict or c.status})")


def judge(cells: Iterable[CellFacts]) -> tuple[Readiness, ...]:
    """Readiness of every environment in `cells`, in the order environments and hosts first appear."""
    facts = list(cells)
    envs = list(dict.fromkeys(c.environment for c in facts))
    ready_on: dict[tuple[str, str], ReadyHost] = {}
    for c in facts:
        if c.observed == schema.OK and c.stack_problem is None and (c.environment, c.host) not in ready_on:
            ready_on[(c.environment, c.host)] = ReadyHost(c.host, c.simulated, c.scenario)
    ready_elsewhere: dict[str, tuple[str, ...]] = {}
    for env, host in ready_on:
        ready_elsewhere[host] = (*ready_elsewhere.get(host, ()), env)
    return tuple(_one(env, [c for c in facts if c.environment == env], ready_on, ready_elsewhere) for env in envs)


def _one(env: str, cells: list[CellFacts], ready_on: Mapping[tuple[str, str], ReadyHost],
         ready_elsewhere: Mapping[str, tuple[str, ...]]) -> Readiness:
    ready: list[ReadyHost] = []
    refused: list[RefusedHost] = []
    untested: list[tuple[str, str]] = []
    for host in dict.fromkeys(c.host for c in cells):
        if (env, host) in ready_on:
            ready.append(ready_on[(env, host)])
            continue
        plain = [c for c in cells if c.host == host and c.gpu_access]
        answered = [c for c in plain if c.observed]
        if answered:
            first = answered[0]
            verdict = STACK if first.observed == schema.OK and first.stack_problem else first.observed or ""
            refused.append(RefusedHost(host, verdict, fix_for(first, ready_elsewhere)))
        elif plain:
            untested.append((host, f"{plain[0].status}: {plain[0].reason or 'no answer with GPU access'}"))
        else:
            untested.append((host, "no scenario with plain GPU access ran"))
    first = cells[0]
    disagreed = tuple(f"{c.environment}/{c.host}/{c.scenario}" for c in cells
                      if c.observed is not None and c.status != PASS)
    return Readiness(env, first.torch, first.cuda, tuple(ready), tuple(refused), tuple(untested), len(cells),
                     disagreed)


# What a refused host's verdict says, in words (the verdict table's); STACK is readiness's own.
STACK_WORDS = "torch gets the GPU, but the stack does not run"


def words_of(verdict: str) -> str:
    """The verdict in words ('driver too old for CUDA {cuda}'); the code itself for one the table lacks."""
    if verdict == STACK:
        return STACK_WORDS
    row = schema.BY_CODE.get(verdict)
    return row.words if row is not None else verdict


def grouped(r: Readiness, stack: bool = False) -> tuple[str, ...]:
    """Refused hosts that share a verdict and a fix, one line each:
    'r535, r570: driver too old for CUDA 13.0; install R580 (>= 580.65.06) or use the cu129 build (...)'.
    With `stack`, the hosts where torch got the GPU and the stack beside it does not run: 'r580: torchvision ...'."""
    groups: dict[tuple[str, str], list[str]] = {}
    for h in r.refused:
        if (h.verdict == STACK) != stack:
            continue
        groups.setdefault((h.verdict, h.fix.text), []).append(h.host)
    if stack:
        return tuple(f"{', '.join(hosts)}: {text}" for (_, text), hosts in groups.items())
    return tuple(f"{', '.join(hosts)}: {words_of(verdict).format(cuda=r.cuda)}; {text}"
                 for (verdict, text), hosts in groups.items())


def summary(r: Readiness) -> str:
    """One line: where torch gets a GPU, or that it gets one nowhere."""
    where = ", ".join(h.label for h in r.ready) if r.ready else "no host"
    agreement = ("observations agreed with predictions" if r.agreed
                 else f"{len(r.disagreed)} of {r.cells} cells disagreed with predictions")
    return f"{r.environment}: torch gets a GPU on {where}; {agreement}"
