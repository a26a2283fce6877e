"""Facts a report implies but does not state, from the compatibility data; each is marked inferred.

The CUDA of a torch release's default wheel (PyPI on Linux; PyPI's macOS and Windows wheels are CPU-only,
facts/cuda-compat.md), a driver's highest CUDA (its branch, compat.json branch_cuda), a GPU's compute
capability (harness/data/gpu_specs.json, then the architecture of its product line).
"""

from __future__ import annotations

import re
from functools import lru_cache

from harness import compat
from harness.facts import GpuFact
from harness.gpus import names
from harness.intake.parsed import Builder, Line

# Default CUDA of PyPI's Linux wheels before compat.json's first series (1.13): the PyTorch "previous
# versions" install page (pytorch.org/get-started/previous-versions), one pip line per release.
OLD_DEFAULTS = {"1.2": "10.0", "1.3": "10.1", "1.4": "10.1", "1.5": "10.2", "1.6": "10.2", "1.7": "10.2",
                "1.8": "10.2", "1.9": "10.2", "1.10": "10.2", "1.11": "10.2", "1.12": "10.2"}


@lru_cache(maxsize=1024)  # a pasted log names the same GPUs again and again
def capability_of(name: str) -> str | None:
    """A GPU name's compute capability, from the one GPU table (harness.gpus)."""
    return names.capability_of(name)


_LAST_CPU_ONLY_ARM = (2, 9)


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
        _named_gpu(b)
        _capabilities(b)
        _arch_list(b)


def _line(b: Builder, path: str) -> Line | None:
    where = b.provenance.get(path)
    return Line(where[0], where[1], where[1]) if where else None


def _torch_cuda(b: Builder) -> None:
    version = b.get("torch.version")
    generic = version is not None and not b.known("torch.cuda") and not any(
        mark in str(version) for mark in ("+", "nv", "a0"))
    if "jetson" in b.clues and not any(c.startswith("index_") for c in b.clues) and (
            "pip_install" in b.clues or generic):
        # NVIDIA publishes JetPack builds of torch for Jetson's integrated GPU ('Installing PyTorch for Jetson
        # Platform', docs.nvidia.com/deeplearning/frameworks); pip's generic Linux aarch64 wheel has no CUDA for it.
        # A release with no JetPack label ('1.12.0', not '1.12.0a0+2c916ef.nv22.3') is that generic wheel too.
        line = _line(b, "torch.version") if generic else None
        if line is None:
            where = b.clues["pip_install"]
            line = Line(where[0], where[1], where[1])
        if b.infer("torch.cuda", None, line, "a Jetson runs JetPack builds of torch (versions labelled '+nv'); "
                   "the generic aarch64 wheel `pip install torch` gets has no CUDA for its integrated GPU"):
            b.infer("torch.importable", True, line, "torch was installed with pip")
        return
    arm = "aarch64" in b.clues or b.get("host.machine") in ("aarch64", "arm64")
    if arm and "pip_install" in b.clues and not any(c.startswith("index_") for c in b.clues) and not (
            version and "+" in str(version)) and not b.known("torch.cuda") and (
            not version or compat.parse_version(compat.torch_series(str(version))) <= _LAST_CPU_ONLY_ARM):
        # PyPI's Linux aarch64 wheels of torch are CPU-only up to 2.9; the CUDA ones (for Grace) are on
        # download.pytorch.org/whl/cuXYZ (pytorch/pytorch#160162, #168065).
        where = b.clues["pip_install"]
        line = Line(where[0], where[1], where[1])
        if b.infer("torch.cuda", None, line, "PyPI's Linux aarch64 wheels of torch (up to 2.9) are CPU-only; the "
                   "CUDA builds come from download.pytorch.org/whl/cuXYZ"):
            b.infer("torch.importable", True, line, "torch was installed with pip")
        return
    if "conda_install" in b.clues and "pip_install" not in b.clues:
        requested = b.details.get("conda_cuda_requested")
        asked = b.provenance.get("details.conda_cuda_requested")
        command = re.sub(r"(?:-c|--channel)\s{1,4}\S{1,80}", "", asked[1]) if asked else ""
        if requested and not b.known("torch.cuda") and re.search(r"(?<![\w-])pytorch(?![\w-])", command):
            # `conda install pytorch cudatoolkit=10.2 -c pytorch` asks for the CUDA 10.2 build; what the solver
            # gave is not shown, so the CUDA is inferred (conda.py keeps the request as a detail).
            line = Line(asked[0], asked[1], asked[1]) if asked else None
            b.infer("torch.cuda", requested.partition("=")[2], line,
                    f"the conda command asks for {requested}, which selects that CUDA build of pytorch")
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


def _named_gpu(b: Builder) -> None:
    """A GPU the report names (a template's 'GPU:' line) stands for the device list when there is none."""
    name = b.details.get("gpu")
    where = b.provenance.get("details.gpu")
    if not name or not where or b.known("driver.nvml.devices"):
        return
    cc = capability_of(name)
    if cc:
        gpu: GpuFact = {"index": 0, "name": name, "compute_capability": cc}
        b.infer("driver.nvml.devices", [gpu], Line(where[0], where[1], where[1]),
                f"the report names the GPU {name}; compute capability {cc} from the GPU tables")
        b.provenance["driver.nvml.devices.0"] = where


def _arch_list(b: Builder) -> None:
    """The architectures of a PyPI or PyTorch-index wheel, from its release and CUDA, when a GPU is known."""
    version, cuda = b.get("torch.version"), b.get("torch.cuda")
    if b.known("torch.arch_list") or not version or not cuda or any(c.startswith("conda") for c in b.clues):
        return
    if not any(g.get("compute_capability") for g in b.get("driver.nvml.devices") or []):
        return
    try:
        arches = compat.arch_list(str(version), str(cuda))
    except ValueError:
        return
    if arches:
        b.infer("torch.arch_list", list(arches), _line(b, "torch.version"),
                f"the architectures PyTorch builds its CUDA {cuda} wheels of torch {compat.torch_series(str(version))} "
                "for (compat.json arch_rules)")


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
