"""Facts a report implies but does not state, from the compatibility data; each is marked inferred.

The CUDA of a torch release's default wheel (PyPI on Linux; PyPI's macOS and Windows wheels are CPU-only,
facts/cuda-compat.md), a driver's highest CUDA (its branch, compat.json branch_cuda), a GPU's compute
capability (harness/data/gpu_specs.json, then the architecture of its product line).
"""

from __future__ import annotations

from harness import compat
from harness.gpus.names import capability_of
from harness.intake.parsed import Builder, Line

# Default CUDA of PyPI's Linux wheels before compat.json's first series (1.13): the PyTorch "previous
# versions" install page (pytorch.org/get-started/previous-versions), one pip line per release.
OLD_DEFAULTS = {"1.2": "10.0", "1.3": "10.1", "1.4": "10.1", "1.5": "10.2", "1.6": "10.2", "1.7": "10.2",
                "1.8": "10.2", "1.9": "10.2", "1.10": "10.2", "1.11": "10.2", "1.12": "10.2"}
def default_cuda(version: str, os_name: str | None) -> tuple[str | None, str] | None:
    """(CUDA or None for CPU, why) of the wheel `pip install torch==version` gets from PyPI."""
    series = compat.torch_series(version)
    if os_name in ("Windows", "Darwin"):
        return None, f"PyPI's {os_name} wheels of torch are CPU-only"
    release = compat.torch_release(version)
    cuda = release.default_cuda if release else OLD_DEFAULTS.get(series)
    if cuda is None:
        return None
    return cuda, f"PyPI's default Linux wheel of torch {series} is built for CUDA {cuda}"


def read(b: Builder, with_capabilities: bool = True) -> None:
    """Fill what nothing stated; a collect_env dump keeps its driver and GPU rows as printed
    (with_capabilities=False): the classifier derives the same from them."""
    _torch_cuda(b)
    if with_capabilities:
        _driver_cuda(b)
        _capabilities(b)


def _line(b: Builder, path: str) -> Line | None:
    where = b.provenance.get(path)
    return Line(where[0], where[1], where[1]) if where else None


def _torch_cuda(b: Builder) -> None:
    version = b.get("torch.version")
    if not version or b.known("torch.cuda") or b.get("torch.hip") or "+" in str(version):
        return
    os_name = b.get("host.os")
    if "conda_install" in b.clues and "pip_install" not in b.clues:
        return  # conda's default build depends on the channel and the solver: no single answer
    found = default_cuda(str(version), os_name)
    if found is None:
        return
    cuda, why = found
    if os_name is None:
        why += " (Linux assumed: the report does not name its operating system)"
    b.infer("torch.cuda", cuda, _line(b, "torch.version"), why)


def _driver_cuda(b: Builder) -> None:
    driver = b.get("driver.nvml.driver_version")
    if not driver or b.known("driver.nvml.cuda_driver_version") or b.get("host.os") == "Windows":
        return
    try:
        cuda = compat.cuda_for_driver(str(driver))
    except ValueError:
        return
    if cuda:
        b.infer("driver.nvml.cuda_driver_version", compat.cuda_to_int(cuda),
                _line(b, "driver.nvml.driver_version"), f"driver branch {compat.branch_of(str(driver))} supports "
                f"CUDA up to {cuda}")


def _capabilities(b: Builder) -> None:
    for i, gpu in enumerate(b.get("driver.nvml.devices") or []):
        if gpu.get("compute_capability") or not gpu.get("name"):
            continue
        cc = capability_of(str(gpu["name"]))
        if cc:
            gpu["compute_capability"] = cc
            path = f"driver.nvml.devices.{i}.compute_capability"
            where = b.provenance.get(f"driver.nvml.devices.{i}")
            if where:
                b.provenance[path] = where
            b.inferred[path] = f"{gpu['name']} has compute capability {cc} (GPU tables)"
