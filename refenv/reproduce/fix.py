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
from harness.schema import (
    ARCH_UNSUPPORTED,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    NO_DRIVER,
    NOT_VISIBLE,
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


# Which change each remedy kind is (harness.catalogue.entries.REMEDY_KINDS); kinds not named here fix
# the driver in place (a reboot, a module reload, a library path: the same driver without its fault).
_WHEEL_KINDS = ("install_wheel",)
_DRIVER_KINDS = ("install_driver",)
_SCENARIO_KINDS = ("enable_gpu_access", "install_toolkit", "unset_variable", "add_capability", "expose_devices")


def chosen_remedy(verdict: str, findings: Sequence[Finding]) -> Remedy | None:
    """The structured remedy of the primary finding (the first error of the primary verdict), if it has one."""
    for f in findings:
        if f.failing and f.verdict == verdict:
            return f.remedy
    return None


def plan_fix(r: Reproduction, verdict: str, offer: Offer, known: Sequence[Environment], base: Base,
             prefer: str = "auto", remedy: Remedy | None = None) -> FixPlan | None:
    """The remediation for the reproduced verdict as a cell: the change the classifier's remedy names (by the
    verdict when there is none); None when there is nothing to fix or no fix fits."""
    if verdict == OK:
        return None

    def wheel() -> FixPlan | None:
        return wheel_fix(r, verdict, offer, known, base)

    def driver() -> FixPlan | None:
        return driver_fix(r)

    def healthy() -> FixPlan | None:
        return healthy_driver_fix(r)

    def scenario() -> FixPlan | None:
        return scenario_fix(r)

    choices: dict[str, list[Callable[[], FixPlan | None]]] = {
        DRIVER_TOO_OLD: [wheel, driver] if prefer == "wheel" else [driver, wheel],
        CPU_WHEEL: [wheel],
        ARCH_UNSUPPORTED: [wheel],
        DRIVER_BROKEN: [healthy],
        NO_DRIVER: [driver],
        NOT_VISIBLE: [scenario, driver] if r.profile is not None else [driver],
    }
    order = choices.get(verdict, [])
    if remedy is not None:
        if remedy.kind in _WHEEL_KINDS:
            order = [wheel]
        elif remedy.kind in _DRIVER_KINDS:
            order = choices[DRIVER_TOO_OLD] if verdict == DRIVER_TOO_OLD else [driver]
        elif remedy.kind in _SCENARIO_KINDS:
            order = [scenario, driver] if r.profile is not None else [driver]
        else:
            order = [healthy]
    for attempt in order:
        found = attempt()
        if found is not None and found.predicted == OK:
            return found
    return None
