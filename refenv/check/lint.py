"""What the matrix would only show once the image is built, found in the Dockerfile: each finding with its line, its
fix and a severity in the reports' words (harness/schema/verdicts.py: error, warning, info) (pure).

The knowledge is the project's own tables: the torch releases and builds (harness/data/compat.json), the
extensions paired with each torch (harness/data/pairings.json), and what the reports say of a driver inside an
image (the container toolkit mounts the host's; one baked in shadows it: shared/facts/torch-failures.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness import compat
from harness.catalogue import pairing
from harness.schema import SEVERITY_ERROR, SEVERITY_INFO, SEVERITY_WARNING
from refenv.check.facts import DockerfileFacts, Where
from refenv.check.resolve import Resolved, index_variant, pinned
from refenv.run.expect import VISIBILITY
from refenv.run.toolkit import capabilities

# Packages that put a driver's user-mode libraries (libcuda.so.1, libnvidia-ml.so.1) into an image: Debian's and
# Ubuntu's driver packages, NVIDIA's CUDA repository's, RHEL's (the distributions' package names).
_DRIVER_PACKAGE = re.compile(r"(nvidia-driver|libnvidia-compute|libcuda1|nvidia-utils|libnvidia-gl|cuda-drivers|"
                             r"nvidia-kernel|xserver-xorg-video-nvidia|nvidia-dkms|cuda-compat)([-=:].*)?$")
# The CUDA toolkit itself (nvcc, the libraries) from NVIDIA's repository or the distribution.
_TOOLKIT_PACKAGE = re.compile(r"(cuda(-toolkit)?(-\d+-\d+)?|nvidia-cuda-toolkit|cuda-runtime-\d+-\d+|"
                              r"cuda-libraries-\d+-\d+|cuda-nvcc-\d+-\d+)$")


@dataclass(frozen=True)
class Finding:
    """One lint finding: where, what, the fix."""

    code: str           # 'driver-in-image', 'toolkit-installed', 'cpu-build', 'cuda-major', 'no-such-build',
                        # 'visibility-baked', 'extension-pairing', 'unpinned-torch', 'unread-file'
    severity: str
    where: Where
    message: str
    fix: str


def _driver(facts: DockerfileFacts) -> list[Finding]:
    out = []
    for pkg in facts.apt:
        if _DRIVER_PACKAGE.match(pkg.value):
            out.append(Finding("driver-in-image", SEVERITY_ERROR, pkg.where,
                               f"{pkg.value} installs a driver's libraries (libcuda.so.1) into the image: it shadows "
                               "the host's driver the container toolkit mounts, and breaks on every other driver",
                               f"remove {pkg.value}; the NVIDIA container toolkit mounts the host's driver"))
    return out


def _toolkit(facts: DockerfileFacts, resolved: Resolved) -> list[Finding]:
    env = resolved.environment
    if env is None or env.cuda is None:
        return []
    out = []
    for pkg in facts.apt:
        if _TOOLKIT_PACKAGE.match(pkg.value):
            out.append(Finding("toolkit-installed", SEVERITY_WARNING, pkg.where,
                               f"{pkg.value} installs a CUDA toolkit, but torch's wheel bundles its own CUDA "
                               f"{env.cuda} runtime: gigabytes the image does not need",
                               f"remove {pkg.value} unless something compiles CUDA code here (then keep a devel "
                               "base image in a build stage only)"))
    return out


def _cpu_build(facts: DockerfileFacts, resolved: Resolved) -> list[Finding]:
    out = []
    for install in facts.installs:
        for url in (*install.index_urls, *install.extra_index_urls):
            if index_variant(url.value) == "cpu":
                out.append(Finding("cpu-build", SEVERITY_ERROR, url.where,
                                   f"{url.value} serves CPU-only builds of torch: torch.cuda.is_available() is False "
                                   "on every host (CPU_WHEEL)", _cuda_build_fix(resolved)))
    req = resolved.requirement
    if req is not None and (exact := pinned(req.specifier)) and exact.endswith("+cpu"):
        out.append(Finding("cpu-build", SEVERITY_ERROR, req.where,
                           f"{req.text} pins the CPU-only build of torch (CPU_WHEEL on every host)",
                           _cuda_build_fix(resolved)))
    return out


def _cuda_build_fix(resolved: Resolved) -> str:
    env = resolved.environment
    torch = env.torch if env else None
    release = compat.torch_release(torch) if torch else None
    if torch and release:
        return (f"install a CUDA build: pip install torch=={compat.public_version(torch)} "
                f"--index-url {compat.index_url(compat.cuda_variant(release.default_cuda))}")
    return "install a CUDA build of torch (PyPI's default Linux build, or PyPI's /whl/cuXYZ index)"


def _cuda_major(facts: DockerfileFacts, resolved: Resolved) -> list[Finding]:
    env, base = resolved.environment, facts.base
    if env is None or env.cuda is None or base.kind != "nvidia-cuda" or base.cuda is None or resolved.torch is None:
        return []
    if base.torch is None and compat.parse_version(env.cuda)[0] != compat.parse_version(base.cuda)[0]:
        return [Finding("cuda-major", SEVERITY_WARNING, resolved.torch.where,
                        f"torch {resolved.torch.value} is built for CUDA {env.cuda}, the base image "
                        f"{base.image} ({facts.from_line}) for CUDA {base.cuda}: two CUDA majors in one image, and "
                        f"the base's NVIDIA_REQUIRE_CUDA asks the host for CUDA {base.cuda} while torch needs "
                        f"{env.cuda}",
                        f"start FROM a CUDA {compat.parse_version(env.cuda)[0]} base, or a plain image (the wheel "
                        "bundles its runtime)")]
    return []


def _no_such_build(resolved: Resolved) -> list[Finding]:
    env, req = resolved.environment, resolved.requirement
    if req is None:
        return []
    if env is None:
        return [Finding("no-such-build", SEVERITY_ERROR, req.where,
                        f"no torch release refenv knows satisfies {req.text!r}",
                        "pin a published release (harness/data/compat.json lists them)")]
    release = compat.torch_release(env.torch)
    if release is None:
        return [Finding("no-such-build", SEVERITY_WARNING, req.where,
                        f"torch {env.torch} is not a release refenv's tables know (newest known: "
                        f"{max(compat.load().torch_releases, key=compat.parse_version)})",
                        "pin a published release, or update refenv")]
    if env.variant not in release.variants:
        return [Finding("no-such-build", SEVERITY_ERROR, req.where,
                        f"torch {compat.torch_series(env.torch)} has no {env.variant} build (published: "
                        f"{', '.join(release.variants)}): the install fails when the image is built",
                        f"use one of {', '.join(release.variants)}")]
    return []


def _visibility(facts: DockerfileFacts) -> list[Finding]:
    out = []
    for name in VISIBILITY:
        fact = facts.env.get(name)
        # compute (with utility) is what NVIDIA's own CUDA images set and what the toolkit needs to mount libcuda
        # (refenv/run/toolkit.py): nothing a GPU would miss
        if fact is None or (name == "NVIDIA_DRIVER_CAPABILITIES" and "compute" in capabilities(fact.value)):
            continue
        # --gpus appends its own NVIDIA_VISIBLE_DEVICES after the image's (refenv/run/injection.py, in_image)
        unless = " or asks for GPUs with --gpus" if name == "NVIDIA_VISIBLE_DEVICES" else ""
        out.append(Finding("visibility-baked", SEVERITY_WARNING, fact.where,
                           f"ENV {name}={fact.value!r} is baked into the image: every container starts with it "
                           f"unless its run sets another value{unless}, whatever GPUs the host gives it",
                           f"remove the ENV; set {name} where the container is started (docker run -e, the "
                           "pod spec, the job script)"))
    return out


def _pairings(facts: DockerfileFacts, resolved: Resolved) -> list[Finding]:
    env = resolved.environment
    if env is None:
        return []
    out = []
    for install in facts.installs:
        for req in install.requirements:
            exact = pinned(req.specifier)
            match = pairing.paired(req.name, env.torch) if exact else None
            if match is None or exact is None:
                continue
            want = match.requirement.split("==", 1)[1]
            have = exact.split("+", 1)[0]
            ok = have.startswith(want[:-1]) if want.endswith("*") else have == want
            if not ok:
                out.append(Finding("extension-pairing", SEVERITY_ERROR, req.where,
                                   f"{req.text} is built for another torch than {env.torch}: it fails to import "
                                   f"(or pip replaces torch) — paired release: {match.requirement}",
                                   f"pin {match.requirement} ({match.source})"))
    return out


def _assumed(facts: DockerfileFacts, resolved: Resolved) -> list[Finding]:
    out = [Finding("unread-file", SEVERITY_INFO, Where(facts.path), note, "COPY the file in before the RUN that "
                   "reads it, or check it beside the Dockerfile") for note in facts.notes]
    req = resolved.requirement
    if req is not None and pinned(req.specifier) is None and resolved.environment is not None:
        out.append(Finding("unpinned-torch", SEVERITY_WARNING, req.where,
                           f"{req.text!r} leaves torch to the build: the image changes when a release comes out",
                           f"pin it: torch=={resolved.environment.torch}"))
    return out


def lint(facts: DockerfileFacts, resolved: Resolved) -> list[Finding]:
    """Every finding, in the order of the Dockerfile's lines."""
    found = [*_driver(facts), *_toolkit(facts, resolved), *_cpu_build(facts, resolved),
             *_cuda_major(facts, resolved), *_no_such_build(resolved), *_visibility(facts),
             *_pairings(facts, resolved), *_assumed(facts, resolved)]
    return sorted(found, key=lambda f: (f.where.file != facts.path, f.where.file, f.where.line))
