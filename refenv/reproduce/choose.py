"""From an inferred stack to one runnable cell: environment, simulated host, scenario (pure).

An environment that a matrix already defines (same torch, variant and Python) is reused by name, so its
lock and its image are shared with `invoke matrix`; any other is named after its build. The host is
a profile made on the fly (`Host.inline`) with the reported driver, GPUs and faults.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from harness import compat
from harness.inputs import InputError, shorten
from harness.schema import ARCH_UNSUPPORTED
from refenv.builder import baseimage
from refenv.model import accepts
from refenv.model.faults import NAMED, Faults
from refenv.model.matrix import Base, Environment, Host, Scenario
from refenv.model.profiles import MAX_GPUS, Gpu, Profile, capability_problem, gpu_name_problem
from refenv.reproduce import builds, drivers
from refenv.reproduce.builds import Build, Offer
from refenv.reproduce.gpus import simulated_gpu
from refenv.reproduce.values import Inferred, ReproduceError, Reproduction

HOST_NAME, SCENARIO_NAME = "reported", "reported"
PACKAGES = ("numpy",)  # what the default matrix's environments add to torch


def environment_for(build: Build, known: Sequence[Environment], base: Base) -> Environment:
    """A known environment with this build, else a new one named after it on a base with its Python."""
    for env in known:
        if (env.torch, env.variant, env.python, env.index_url) == (build.torch, build.variant, build.python, None):
            return env
    suite = baseimage.suite_for_python(build.python)
    if base.image is None and suite is not None and suite != base.bootstrap.suite:
        base = Base(None, replace(base.bootstrap, suite=suite))
    name = f"torch-{build.torch}-{build.variant}-py{build.python}"
    try:
        accepts.environment_name(name, "environment")  # it becomes a Docker image name
    except InputError as exc:
        raise ReproduceError(str(exc)) from None
    return Environment(name, build.torch, build.variant, build.python, PACKAGES, None, base)


def _runs_on(gpus: Sequence[Gpu], arches: tuple[str, ...] | None) -> bool:
    return arches is None or all(compat.arch_supports(g.compute_capability, arches) for g in gpus)


def assumed_gpus(branch: int, arches: tuple[str, ...] | None, keep_any: bool) -> tuple[Profile, Profile]:
    """(the shipped profile whose GPUs stand for unreported ones, the driver branch's own profile), pure.

    The branch's own profile's GPUs, unless the environment's build has no kernel for them: an assumed GPU
    must not add a failure the report does not show (R470's V100s, sm_70, under a CUDA 13 build that begins
    at sm_75), so the GPUs of the shipped profile nearest the branch, newer first, that the build runs on
    stand for them. `keep_any`: the report's verdict is about the architecture, where the GPU is the question.
    """
    own = drivers.shipped_of_branch(branch) or drivers.shipped_of_branch(580)
    assert own is not None
    if keep_any or _runs_on(own.gpus, arches):
        return own, own
    fitting = [p for p in drivers.healthy_shipped() if _runs_on(p.gpus, arches)]
    nearest = min(fitting, key=lambda p: (p.branch < branch, abs(p.branch - branch)), default=own)
    return nearest, own


def gpus_for(inferred: Inferred, driver: str, notes: list[str],
             env: Environment | None = None) -> tuple[Gpu, ...]:
    """The reported GPUs, or, when the report lists none, those of a shipped profile of the driver's branch
    (of the nearest one whose GPUs the environment's build runs on, see assumed_gpus)."""
    if inferred.gpus:
        # Reported names go into the simulated driver's key=value configuration: checked before they do.
        if len(inferred.gpus) > MAX_GPUS:
            raise ReproduceError(f"{len(inferred.gpus)} GPUs: the simulated driver holds at most {MAX_GPUS}")
        for g in inferred.gpus:
            problem = gpu_name_problem(g.name) or (capability_problem(g.compute_capability)
                                                    if g.compute_capability is not None else None)
            if problem:
                raise ReproduceError(f"GPU {shorten(g.name)}: {problem}")
        made = [simulated_gpu(g, i) for i, g in enumerate(inferred.gpus)]
        notes.extend(note for _, note in made if note)
        return tuple(gpu for gpu, _ in made)
    cuda = compat.variant_cuda(env.variant) if env is not None else None
    arches = compat.arch_list(env.torch, cuda) if env is not None and cuda else None
    about_arch = inferred.reported is not None and inferred.reported.verdict == ARCH_UNSUPPORTED
    shipped, own = assumed_gpus(compat.branch_of(driver), arches, about_arch)
    why = ""
    if shipped is not own and env is not None:
        why = (f" (the {own.name} profile's {own.gpus[0].name}, compute capability {own.gpus[0].compute_capability}, "
               f"has no kernel in torch {env.torch}+{env.variant})")
    notes.append(f"the report lists no GPUs: using the shipped {shipped.name} profile's "
                 f"{len(shipped.gpus)} x {shipped.gpus[0].name}{why}")
    return shipped.gpus


def host_profile(inferred: Inferred, notes: list[str], name: str = HOST_NAME,
                 env: Environment | None = None) -> Profile:
    """The reporter's host as a simulated driver profile (for the environment `env` runs, when given)."""
    driver = inferred.driver
    if driver is None:
        shipped = drivers.shipped_of_branch(int(drivers.DEFAULT_PROFILE[1:]))
        assert shipped is not None
        driver = shipped.driver_version
        notes.append(f"the report names no driver: using {driver} (the shipped {shipped.name} profile); "
                     "without GPU access the driver does not change the outcome")
    cuda = compat.int_to_cuda(inferred.driver_cuda) if inferred.driver_cuda else compat.cuda_for_driver(driver)
    if cuda is None:
        raise ReproduceError(f"driver {driver} is older than every driver branch in refenv's tables")
    gpus = gpus_for(inferred, driver, notes, env)
    described = f"driver {driver} (CUDA {cuda}) with {len(gpus)} x {gpus[0].name}" if gpus else f"driver {driver}"
    return Profile(name, f"the reported host: {described}", driver, cuda, gpus, inferred.faults)


def scenario_for(inferred: Inferred) -> Scenario:
    for key, value in inferred.env:
        try:
            accepts.env_value(value, key)  # a NUL or newline must not reach the container's environment
        except InputError as exc:
            raise ReproduceError(str(exc)) from None
    access = "docker run --gpus all" if inferred.gpu_access else "docker run without --gpus"
    variables = " ".join(f"{k}={v!r}" for k, v in inferred.env)
    return Scenario(SCENARIO_NAME, "all" if inferred.gpu_access else "none", inferred.env,
                    f"{access}{' with ' + variables if variables else ''}")


def plan(inferred: Inferred, offer: Offer, known: Sequence[Environment], base: Base) -> Reproduction:
    """The cell that stands for the reported machine, with its substitutions and notes."""
    # A release chosen for a report that names none: its newest patch that lies here, else its first.
    torch = (builds.version_in(compat.torch_series(inferred.torch), inferred.variant, offer) if inferred.torch_assumed
             else inferred.torch)
    build = builds.choose(torch, inferred.variant, inferred.python, inferred.os, offer)
    if build is None:
        cuda = compat.variant_cuda(inferred.variant)
        what = f"a CUDA {compat.parse_version(cuda)[0]}.x runtime" if cuda else "no CUDA (a CPU build)"
        raise ReproduceError(f"torch {inferred.torch}+{inferred.variant}: no Linux build with {what} can be had here "
                             "(PyPI, PyTorch's index, or wheels on disk)")
    notes: list[str] = []
    if inferred.python is None:
        notes.append(f"the report names no Python: using {build.python}")
    env = environment_for(build, known, base)
    if inferred.no_driver:
        host, profile = Host(HOST_NAME, "none", description="no NVIDIA driver, as reported"), None
        # What needs a driver is not reproduced; say so rather than drop it unsaid.
        if inferred.gpus:
            names = ", ".join(dict.fromkeys(g.name for g in inferred.gpus))
            notes.append(f"{names}: not simulated: no driver is named (--driver), so the host has none and "
                         "shows no GPU")
        if inferred.faults != Faults():
            fault = next((f.name for f in NAMED if f.faults == inferred.faults), "reported")
            notes.append(f"the {fault} driver fault is not reproduced: the host has no driver to break")
    else:
        profile = host_profile(inferred, notes, env=env)
        host = Host(HOST_NAME, "simulated", description=profile.description, inline=profile)
    return Reproduction(env, host, scenario_for(inferred), profile, build.substitutions, tuple(notes))

