"""The words of wheel and driver fixes: exact pip lines and driver floors, from the compatibility data (pure)."""

from __future__ import annotations

from harness import compat


def branch_name(driver: str) -> str:
    return f"R{compat.branch_of(driver)}"


def driver_floor_text(cuda: str) -> str:
    """'a driver >= 580.65.06 (R580) for the full CUDA 13.0 feature set; ...' (a noun phrase)."""
    full = compat.min_driver_for_cuda(cuda)
    major = compat.parse_version(cuda)[0]
    floor = compat.minor_floor(major)
    parts = []
    if full:
        parts.append(f"a driver >= {full} ({branch_name(full)}) for the full CUDA {cuda} feature set")
    if floor and floor[0] != full:
        parts.append(f"any driver >= {floor[0]} ({branch_name(floor[0])}) starts a CUDA {major}.x runtime "
                     "through minor-version compatibility")
    return "; ".join(parts) if parts else f"a driver that supports CUDA {cuda}"


def newest_release() -> compat.TorchRelease:
    """The newest torch release in the compatibility data."""
    c = compat.load()
    return c.torch_releases[max(c.torch_releases, key=compat.parse_version)]


def driver_for_torch(torch_version: str | None) -> str:
    """The driver a torch's default CUDA build needs, for a fix that knows the torch but not its CUDA (or
    neither: then the newest release's default build, the one `pip install torch` gets)."""
    release = compat.torch_release(torch_version) if torch_version else None
    if release is not None:
        return (f"torch {release.series}'s default build (CUDA {release.default_cuda}) needs "
                f"{driver_floor_text(release.default_cuda)}")
    newest = newest_release()
    return (f"the newest torch ({newest.series}, the one a plain pip install gets) is built for CUDA "
            f"{newest.default_cuda} and needs {driver_floor_text(newest.default_cuda)}")


def wheel_for_driver(torch_version: str | None, driver_cuda_version: int) -> list[str]:
    """pip lines for torch builds this driver runs: the same release first, then the newest release."""
    lines: list[str] = []
    driver_cuda = compat.int_to_cuda(driver_cuda_version)
    if torch_version:
        series = compat.torch_series(torch_version)
        variant = compat.best_variant(series, driver_cuda_version)
        if variant:
            lines.append(f"{compat.pip_install_line(torch_version, variant)}   "
                         f"# torch {compat.public_version(torch_version)} built for CUDA "
                         f"{compat.variant_cuda(variant)}; this driver supports CUDA {driver_cuda}")
        elif compat.torch_release(torch_version) is not None:
            lines.append(f"torch {series} has no CUDA build that a CUDA {driver_cuda} driver runs")
    newest = compat.newest_torch_for_driver(driver_cuda_version)
    if newest and (not torch_version or newest[0] != compat.torch_series(torch_version)):
        series, variant = newest
        lines.append(f'pip install "torch=={series}.*" --index-url {compat.index_url(variant)}   '
                     f"# the newest torch release with a build this driver runs (CUDA {compat.variant_cuda(variant)})")
    return lines


def default_wheel(torch_version: str) -> list[str]:
    """For a machine whose driver is unknown: the default CUDA wheel and the driver it needs."""
    release = compat.torch_release(torch_version)
    if release is None:
        return [f"pip install torch=={compat.public_version(torch_version)}   # a CUDA build (Linux x86_64 default)"]
    cuda = release.default_cuda
    return [
        f"pip install torch=={compat.public_version(torch_version)} --index-url "
        f"{compat.index_url(compat.cuda_variant(cuda))}   # the CUDA {cuda} build",
        f"that build needs {driver_floor_text(cuda)}",
    ]


def wheel_for_arch(torch_version: str | None, capability: str, driver_cuda_version: int | None) -> list[str]:
    """pip lines for a torch build whose compiled architectures include this compute capability."""
    c = compat.load()
    series_order = sorted(c.torch_releases, key=compat.parse_version, reverse=True)
    if torch_version and compat.torch_series(torch_version) in c.torch_releases:
        series_order.remove(compat.torch_series(torch_version))
        series_order.insert(0, compat.torch_series(torch_version))
    for series in series_order:
        release = c.torch_releases[series]
        for variant in sorted(release.variants, key=lambda v: compat.variant_cuda(v) or "", reverse=True):
            cuda = compat.variant_cuda(variant)
            if cuda is None:
                continue
            arches = compat.arch_list(series + ".0", cuda)
            runs = driver_cuda_version is None or compat.runtime_accepts(cuda, driver_cuda_version)
            if arches and runs and compat.arch_supports(capability, arches):
                version = torch_version if torch_version and compat.torch_series(torch_version) == series else None
                pin = f"torch=={compat.public_version(version)}" if version else f'"torch=={series}.*"'
                line = (f"pip install {pin} --index-url {compat.index_url(variant)}   # compiled for "
                        f"{' '.join(arches)}, which covers {compat.sm_name(capability)}")
                # The driver is unknown: the fix says which one that build needs.
                needs = f"that build needs {driver_floor_text(cuda)}"
                return [line] if driver_cuda_version is not None else [line, needs]
    with_driver = " with this driver" if driver_cuda_version is not None else ""
    return [f"no torch build in refenv's tables covers {compat.sm_name(capability)}{with_driver}; "
            "build torch from source with TORCH_CUDA_ARCH_LIST including it"]
