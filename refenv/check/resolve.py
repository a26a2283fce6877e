"""The torch a Dockerfile's image will hold, from its facts: the environment the matrix's predictor judges (pure).

The last install line that names torch decides (pip, uv and conda each replace what an earlier line put there);
without one, the base image's torch. Its build (variant) comes, in this order, from the version's local label
(`+cu126`, `+cpu`), the index it is installed from (PyTorch's `/whl/cuXYZ` or `/whl/cpu`, as --index-url,
--extra-index-url — pip takes the highest version, and `2.6.0+cu118` sorts above `2.6.0` — [tool.uv.sources] or a
uv.lock registry), conda's `pytorch-cuda=X.Y` or `cpuonly`, else PyPI's default Linux build of that release
(harness/data/compat.json). A torch the build resolves (no exact pin) is the newest release refenv knows that the
specifier allows, said as an assumption.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from harness import compat
from refenv.check.facts import DockerfileFacts, Fact, Install, Requirement
from refenv.model.matrix import Environment

_INDEX_VARIANT = re.compile(r"download\.pytorch\.org/whl/(?:(?:nightly|test)/)?(cpu|cu\d{3,4}|rocm[\d.]+)", re.I)
TORCH_NAMES = ("torch", "pytorch")


@dataclass(frozen=True)
class Resolved:
    """The environment to predict, where its torch and its build came from, and what had to be assumed."""

    environment: Environment | None     # None: no torch in the image
    torch: Fact | None                  # the torch version and where it was read
    variant_from: str                   # why this build: 'the +cu118 label', 'the index ... (Dockerfile:8)'
    assumptions: tuple[str, ...] = ()
    requirement: Requirement | None = None
    install: Install | None = None


def index_variant(url: str) -> str | None:
    """'cu126' for https://download.pytorch.org/whl/cu126; None for any other index."""
    m = _INDEX_VARIANT.search(url)
    return m.group(1).lower() if m else None


def torch_requirement(facts: DockerfileFacts) -> tuple[Requirement, Install] | None:
    """The last requirement of torch (conda's `pytorch`) in the install lines, with its install."""
    found = None
    for install in facts.installs:
        for req in install.requirements:
            if req.name in TORCH_NAMES:
                found = (req, install)
    return found


def _known_versions() -> list[str]:
    """Every torch release the tables name, as 'X.Y.0' (the series' first release; patch releases share its build)."""
    return [f"{s}.0" for s in compat.load().torch_releases]


def pinned(specifier: str) -> str | None:
    """'2.6.0+cu126' for '==2.6.0+cu126'; None for a range or no specifier ('==2.6.*' is a range)."""
    m = re.fullmatch(r"===?\s*([0-9][0-9A-Za-z.+!_-]*)", specifier.strip())
    return m.group(1) if m and "*" not in m.group(1) else None


def newest_allowed(specifier: str) -> str | None:
    """The newest release refenv knows that the specifier allows (its series' first release), or None."""
    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        return None
    allowed = []
    for v in _known_versions():
        try:
            if spec.contains(Version(v), prereleases=True) or spec.contains(
                    Version(v.rsplit(".", 1)[0] + ".9"), prereleases=True):
                allowed.append(v)
        except InvalidVersion:
            continue
    return max(allowed, key=compat.parse_version) if allowed else None


def _variant(version: str, req: Requirement, install: Install, facts: DockerfileFacts) -> tuple[str, str]:
    """The build of an installed torch and why."""
    if "+" in version:
        label = version.split("+", 1)[1].lower()
        return ("cpu" if label == "cpu" else label), f"the +{label} label ({req.where})"
    for url in (*install.index_urls, *install.extra_index_urls):
        if (v := index_variant(url.value)) is not None:
            return v, f"the index {url.value} ({url.where})"
    conda = {r.name: r for i in facts.installs for r in i.requirements if i.tool in ("conda", "mamba")}
    if req.name == "pytorch" or install.tool in ("conda", "mamba"):
        if "cpuonly" in conda:
            return "cpu", f"conda's cpuonly ({conda['cpuonly'].where})"
        if "pytorch-cuda" in conda and (m := re.search(r"(\d+\.\d+)", conda["pytorch-cuda"].specifier)):
            return compat.cuda_variant(m.group(1)), f"conda's pytorch-cuda={m.group(1)} ({conda['pytorch-cuda'].where})"
    release = compat.torch_release(version)
    if release is None:
        return "", f"torch {version} is not a release refenv's tables know"
    return compat.cuda_variant(release.default_cuda), \
        f"PyPI's default Linux build of torch {compat.torch_series(version)} (CUDA {release.default_cuda})"


def prediction_version(version: str) -> str:
    """'2.10.0' for NGC's '2.10.0a0+b4e4ee81d3': the release whose rules and texts apply."""
    m = re.match(r"(\d+\.\d+(?:\.\d+)?)", version)
    return m.group(1) if m else version


def resolve(facts: DockerfileFacts, name: str) -> Resolved:
    """The environment the Dockerfile's image would be, as the matrix would read it from the built image."""
    python = ".".join((facts.base.python or "3.11").split(".")[:2])
    found = torch_requirement(facts)
    if found is None:
        base = facts.base
        if base.torch is None:
            if base.kind == "pytorch":
                return Resolved(None, None, "", (f"{base.image}: the tag names no torch release; the check cannot "
                                                 "tell which torch it holds",))
            return Resolved(None, None, "", ("no install line names torch and the base image holds none known",))
        version = prediction_version(base.torch.split("+", 1)[0])
        variant = base.variant or "cpu"
        env = Environment(name, version, variant, python)
        return Resolved(env, Fact(base.torch, facts.from_line), f"the base image ({base.source})")
    req, install = found
    assumptions: list[str] = []
    exact = pinned(req.specifier)
    if exact is None:
        newest = newest_allowed(req.specifier or ">=0")
        if newest is None:
            return Resolved(None, Fact(req.text, req.where), "", (
                f"{req.where}: no torch release refenv knows satisfies {req.text!r}",), req, install)
        assumptions.append(f"{req.where}: {req.text!r} is resolved when the image is built; assumed torch {newest}, "
                           "the newest release refenv knows that it allows (pin it to know)")
        exact = newest
    variant, why = _variant(exact, req, install, facts)
    if not variant:
        assumptions.append(f"{req.where}: {why}; assumed PyPI's newest default build")
        variant = compat.cuda_variant(compat.load().torch_releases[max(compat.load().torch_releases,
                                                                        key=compat.parse_version)].default_cuda)
    env = Environment(name, prediction_version(exact.split("+", 1)[0]), variant, python)
    return Resolved(env, Fact(exact, req.where), why, tuple(assumptions), req, install)
