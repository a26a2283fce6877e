"""`--verify-fix`: the remediation as a changed cell, chosen so the compatibility rules predict OK (pure).

The classifier's primary finding carries a structured remedy (harness.schema.Remedy, rendered by
harness.catalogue.remedies); its kind decides which change is made, the verdict only when a document has none.
A wheel fix is a new environment with the variant the remedy names (`harness.catalogue.wheels`, `compat.best_variant`),
or the nearest build that can be had here; a driver fix is a shipped profile of the branch the remedy
recommends, keeping the reported GPUs; a broken driver is fixed by the same driver without its fault
(what a reboot or module reload gives); a visibility fix changes the scenario.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from harness import compat
from harness.catalogue.entries import REMEDY_FIX
from harness.schema import (
    ARCH_UNSUPPORTED,
    BY_CODE,
    FIX_ACCESS,
    FIX_DRIVER,
    FIX_REPAIR,
    FIX_WHEEL,
    OK,
    Finding,
    Remedy,
)
from refenv.model.matrix import Base, Environment, Host, Scenario
from refenv.model.profiles import Faults, Profile
from refenv.reproduce import builds, drivers
from refenv.reproduce.builds import Build, Offer
from refenv.reproduce.choose import environment_for
from refenv.reproduce.values import FixPlan, Reproduction
from refenv.run import expect

FIXED = "fixed"
# Scenario variables that hide devices or the CUDA library (facts/torch-failures.md, "Around torch").
HIDING = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")


def predicted(r: Reproduction) -> str:
    return expect.expect(r.environment, r.host, r.profile, r.scenario).verdict


def _with_host(r: Reproduction, profile: Profile) -> Reproduction:
    host = Host(FIXED, "simulated", description=profile.description, inline=profile)
    return replace(r, host=host, profile=profile, substitutions=(), notes=())


def driver_fix(r: Reproduction) -> FixPlan | None:
    """Upgrade (or install) the driver the wheel's CUDA needs, keeping the GPUs."""
    cuda = r.environment.cuda
    if cuda is None:
        return None
    driver, said = drivers.recommended(cuda)
    branch_cuda = compat.cuda_for_driver(driver) or cuda
    if r.profile is not None:
        gpus = r.profile.gpus
    else:
        shipped = drivers.shipped_of_branch(compat.branch_of(driver))
        gpus = shipped.gpus if shipped else drivers.healthy_shipped()[0].gpus
    profile = Profile(FIXED, f"the fixed host: driver {driver} (CUDA {branch_cuda})", driver, branch_cuda, gpus,
                      Faults())
    fixed = _with_host(r, profile)
    verb = "install" if r.profile is None else "upgrade"
    return FixPlan("driver", f"{verb} the driver: {said}, for the CUDA {cuda} runtime", fixed, predicted(fixed))


def healthy_driver_fix(r: Reproduction) -> FixPlan | None:
    """The same driver without its fault."""
    if r.profile is None:
        return None
    p = r.profile
    profile = Profile(FIXED, f"the fixed host: driver {p.driver_version} working", p.driver_version, p.cuda_version,
                      p.gpus, Faults())
    fixed = _with_host(r, profile)
    mismatch = p.faults.nvml_init_error == 18
    what = ("reboot after the driver upgrade (kernel module and libraries agree again)" if mismatch
            else "a working driver of the same version (the fault cleared, as the remedy describes)")
    return FixPlan("driver", f"{what}: driver {p.driver_version} without the fault", fixed, predicted(fixed))


def scenario_fix(r: Reproduction) -> FixPlan | None:
    """GPU access, and none of the variables that hide the devices."""
    dropped = [f"{k}={v!r}" for k, v in r.scenario.env if k in HIDING]
    env = tuple((k, v) for k, v in r.scenario.env if k not in HIDING)
    if not dropped and r.scenario.gpu_access:
        return None
    changes = ([] if r.scenario.gpu_access else ["start the container with --gpus all"]) + \
        [f"unset {d}" for d in dropped]
    fixed = replace(r, scenario=Scenario(FIXED, "all", env, "; ".join(changes)), substitutions=(), notes=())
    return FixPlan("scenario", "; ".join(changes), fixed, predicted(fixed))


def _covers(series: str, variant: str, r: Reproduction) -> bool:
    """Whether a build of this series and variant starts on the host and has kernels for each of its GPUs."""
    cuda = compat.variant_cuda(variant)
    arches = compat.arch_list(f"{series}.0", cuda) if cuda else None
    return bool(cuda and arches and r.profile and compat.runtime_accepts(cuda, r.profile.cuda_driver_version)
                and all(compat.arch_supports(g.compute_capability, arches) for g in r.profile.gpus))


def wanted_build(r: Reproduction, verdict: str) -> tuple[str, str] | None:
    """(torch, variant) the remedy names for this host (harness.catalogue.wheels' order: the same release first)."""
    torch = r.environment.torch
    series = compat.torch_series(torch)
    table = compat.load().torch_releases
    if verdict == ARCH_UNSUPPORTED:
        order = [series, *sorted((s for s in table if s != series), key=compat.parse_version, reverse=True)]
        for s in (s for s in order if s in table):
            for variant in sorted(table[s].variants, key=lambda v: compat.variant_cuda(v) or "", reverse=True):
                if _covers(s, variant, r):
                    return (torch if s == series else f"{s}.0"), variant
        return None
    if r.profile is None:
        release = compat.torch_release(torch)
        return (torch, compat.cuda_variant(release.default_cuda)) if release else None
    best = compat.best_variant(series, r.profile.cuda_driver_version)
    if best is not None:
        return torch, best
    newest = compat.newest_torch_for_driver(r.profile.cuda_driver_version)
    return (f"{newest[0]}.0", newest[1]) if newest else None


def wheel_fix(r: Reproduction, verdict: str, offer: Offer, known: Sequence[Environment], base: Base) -> FixPlan | None:
    """A torch build the host runs, as the remedy names it or the nearest one here that the rules predict OK."""
    wanted = wanted_build(r, verdict)
    if wanted is None:
        return None
    torch, variant = wanted

    def works(b: Build) -> bool:
        return predicted(replace(r, environment=environment_for(b, known, base))) == OK

    build = builds.choose(torch, variant, r.environment.python, "Linux", offer, accept=works)
    if build is None:
        return None
    fixed = replace(r, environment=environment_for(build, known, base), substitutions=build.substitutions, notes=())
    named = f"torch {torch}+{variant}"
    got = f"torch {build.torch}+{build.variant} (Python {build.python}, from {build.source})"
    summary = f"install {named}" + ("" if got.startswith(named) else f"; here: {got}")
    return FixPlan("wheel", summary, fixed, predicted(fixed))


# A kind of fix that does not turn the cell OK falls back to the next of its chain: GPU access without a
# driver to inject needs the driver first. The verdict's own order (harness/schema/verdicts.py) is used when
# the remedy is the fix the verdict tries first, or when there is no remedy.
FALLBACK = {FIX_ACCESS: (FIX_ACCESS, FIX_DRIVER)}


def chosen_remedy(verdict: str, findings: Sequence[Finding]) -> Remedy | None:
    """The structured remedy of the primary finding (the first error of the primary verdict), if it has one."""
    for f in findings:
        if f.failing and f.verdict == verdict:
            return f.remedy
    return None


def fix_order(verdict: str, remedy: Remedy | None, prefer: str, has_driver: bool) -> tuple[str, ...]:
    """The kinds of fix to try, in order (pure). The verdict table's kinds for the verdict, `prefer` ('driver'
    or 'wheel') first where it offers both; a remedy that names another kind than the verdict's first is
    tried alone, with its fallback. A change of the container's access is left out on a host without a
    driver: there is nothing to give the container."""
    own = BY_CODE[verdict].fixes if verdict in BY_CODE else ()
    kinds = own
    if prefer in (FIX_DRIVER, FIX_WHEEL) and {FIX_DRIVER, FIX_WHEEL} <= set(own):
        kinds = (prefer, *(k for k in own if k != prefer))
    if remedy is not None:
        kind = REMEDY_FIX.get(remedy.kind, FIX_REPAIR)
        if own[:1] != (kind,):
            kinds = FALLBACK.get(kind, (kind,))
    return tuple(k for k in kinds if has_driver or k != FIX_ACCESS)


def plan_fix(r: Reproduction, verdict: str, offer: Offer, known: Sequence[Environment], base: Base,
             prefer: str = "auto", remedy: Remedy | None = None) -> FixPlan | None:
    """The remediation for the reproduced verdict as a cell: the change the classifier's remedy names (by the
    verdict when there is none); None when there is nothing to fix or no fix fits."""
    if verdict == OK:
        return None
    fixers: dict[str, Callable[[], FixPlan | None]] = {
        FIX_WHEEL: lambda: wheel_fix(r, verdict, offer, known, base),
        FIX_DRIVER: lambda: driver_fix(r),
        FIX_REPAIR: lambda: healthy_driver_fix(r),
        FIX_ACCESS: lambda: scenario_fix(r),
    }
    for kind in fix_order(verdict, remedy, prefer, r.profile is not None):
        found = fixers[kind]()
        if found is not None and found.predicted == OK:
            return found
    return None
