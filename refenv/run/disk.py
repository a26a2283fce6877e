"""The disk a matrix run needs, predicted before it starts, against the disk the machine has (pure, but `sizes`).

A CI runner has little disk (GitHub's standard Linux runners: 14 GB; docs.github.com, "GitHub-hosted runners"),
and one CUDA image is 5 to 8 GB. What a run keeps: the images of its environments, the wheels they were
installed from (the wheelhouse, one copy of a wheel however many environments use it), the simulated driver's
build root and refenv's base image, shared by all. An environment's image is estimated from what goes in:
refenv's recipe from its lock (the base, the wheels unpacked at 2x their size and 0.5 GB besides: on this
machine the cu130, cu128 and cpu images of the default matrix are 5.95, 7.53 and 1.11 GB for 3.05, 4.14 and
0.22 GB of wheels on a 0.17 GB base); a team's image by its size in the engine, or its Dockerfile's FROM image
and 1 GB for its own steps; what the engine does not hold is assumed 8 GB (the size of a CUDA image), and said.

All environments at once need the sum; one at a time (`refenv matrix --low-disk`), the shared part and the
largest environment. Where neither fits, the run is refused at once with what to do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GB = 1_000_000_000
UNPACK = 2.0
RECIPE_EXTRA = GB // 2
TEAM_STEPS = GB
ASSUMED_IMAGE = 8 * GB
BUILD_ROOT = GB // 2      # the simulated driver's Debian build root (debootstrap, with a C compiler)
BASE_IMAGE = 200_000_000  # refenv's bootstrapped base (Debian and Python: 0.16 to 0.17 GB here)
FITS, ONE_AT_A_TIME, TOO_SMALL = "fits", "one at a time", "too small"


@dataclass(frozen=True)
class Need:
    """One environment's disk: its image, and the wheels it adds to the wheelhouse."""

    environment: str
    image_bytes: int
    wheels: Mapping[str, int]       # wheel file name -> bytes (shared between environments)
    assumed: bool = False           # the image's size is not known here: ASSUMED_IMAGE stands for it
    how: str = ""                   # 'from its lock', 'its size in the engine', ...


@dataclass(frozen=True)
class DiskPlan:
    needs: tuple[Need, ...]
    shared_bytes: int               # build root, base image, the wheelhouse
    all_bytes: int                  # every environment at once
    one_bytes: int                  # one environment at a time
    free_bytes: int
    verdict: str                    # FITS, ONE_AT_A_TIME or TOO_SMALL


def recipe_need(name: str, wheels: Mapping[str, int], base_bytes: int = BASE_IMAGE) -> Need:
    return Need(name, base_bytes + int(UNPACK * sum(wheels.values())) + RECIPE_EXTRA, wheels, how="from its lock")


def team_need(name: str, image_bytes: int | None, from_bytes: int | None = None) -> Need:
    """An `image:` (its size in the engine) or a Dockerfile (its FROM image's size and its own steps)."""
    if image_bytes is not None:
        return Need(name, image_bytes, {}, how="its size in the engine")
    if from_bytes is not None:
        return Need(name, from_bytes + TEAM_STEPS, {}, how="its FROM image and 1 GB for its steps")
    return Need(name, ASSUMED_IMAGE + TEAM_STEPS, {}, assumed=True, how="not in the engine: 8 GB assumed")


def plan(needs: Sequence[Need], free_bytes: int, simulated: bool, recipe: bool) -> DiskPlan:
    """What the run needs all at once and one environment at a time, and which fits in `free_bytes`."""
    wheels: dict[str, int] = {}
    for n in needs:
        wheels.update(n.wheels)
    shared = sum(wheels.values()) + (BUILD_ROOT if simulated else 0) + (BASE_IMAGE if recipe else 0)
    images = [n.image_bytes for n in needs]
    every, one = shared + sum(images), shared + max(images, default=0)
    verdict = FITS if every <= free_bytes else ONE_AT_A_TIME if one <= free_bytes else TOO_SMALL
    return DiskPlan(tuple(needs), shared, every, one, free_bytes, verdict)


def _gb(n: int) -> str:
    return f"{n / GB:.1f} GB"


def lines(p: DiskPlan) -> list[str]:
    """The prediction in words, and what to do where the disk is too small."""
    out = [f"disk: {_gb(p.all_bytes)} for every environment at once, {_gb(p.one_bytes)} one at a time "
           f"({_gb(p.shared_bytes)} shared: wheels, simulated driver, base); {_gb(p.free_bytes)} free"]
    out += [f"  {n.environment}: {_gb(n.image_bytes)} ({n.how})" for n in p.needs]
    if p.verdict == FITS:
        out.append("the run fits")
    elif p.verdict == ONE_AT_A_TIME:
        out.append("the run fits one environment at a time: refenv matrix --low-disk (each image is removed "
                   "once its cells are judged)")
    else:
        largest = max(p.needs, key=lambda n: n.image_bytes, default=None)
        out.append(f"this machine cannot hold the run: even one environment at a time needs {_gb(p.one_bytes)}"
                   + (f" ({largest.environment} alone is {_gb(largest.image_bytes)})" if largest else "")
                   + f" and {_gb(p.free_bytes)} is free. Run fewer environments per job (a job per environment: "
                   "refenv matrix --env NAME), free the disk (docker system prune; on GitHub's runners remove the "
                   "preinstalled toolchains you do not use), or use a larger runner")
    return out
