"""The 'Versions of relevant libraries' block: pip and conda lines, the CUDA runtime package among them."""

from __future__ import annotations

import re
from typing import NamedTuple

from harness import compat
from harness.intake.parsed import Builder, Line
from harness.intake.sections import Field

_ENTRY_RE = re.compile(r"^\[(?P<tool>pip\d?(?:\.\d+)?|conda)\]\s+(?P<rest>\S.*)$")
_PIP_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>\S+)")
_RUNTIME_RE = re.compile(r"^nvidia-cuda-runtime(?:-cu(?P<major>\d+))?$")
_CONDA_RUNTIMES = ("cuda-cudart", "cudatoolkit")
_CONDA_TORCH_RE = re.compile(r"cuda(\d+\.\d+)")
_SERIES_RE = re.compile(r"^(\d+)\.(\d+)")


class Package(NamedTuple):
    tool: str       # "pip" or "conda"
    name: str
    version: str
    build: str      # conda's build string, "" for pip
    line: Line


def entries(field: Field | None) -> list[Package]:
    """The packages the block lists; 'Could not collect' and 'No relevant packages' list none."""
    found: list[Package] = []
    for line in (field.more if field else ()):
        m = _ENTRY_RE.match(line.text)
        if not m:
            continue
        rest = m.group("rest")
        pip = _PIP_RE.match(rest)
        if m.group("tool") != "conda" and pip:
            found.append(Package("pip", pip.group("name").lower(), pip.group("version"), "", line))
            continue
        parts = rest.split()
        if m.group("tool") == "conda" and len(parts) >= 2 and parts[1][:1].isdigit():
            # A conda line listing a package pip installed ('pypi' channel) is a pip package.
            tool = "pip" if parts[-1] == "pypi" else "conda"
            found.append(Package(tool, parts[0].lower(), parts[1], parts[2] if len(parts) > 2 else "", line))
    return found


def read(b: Builder, field: Field | None) -> None:
    """torch's own line, the CUDA runtime package and, where it is honest, the runtime it implies."""
    packages = entries(field)
    for p in packages:
        if p.name == "torch" and p.tool == "pip":
            _check_torch(b, p)
        elif p.name in ("pytorch", "pytorch-cuda", "cpuonly") and p.tool == "conda":
            _note_conda_torch(b, p)
    runtime = next((p for p in packages if p.tool == "pip" and _RUNTIME_RE.match(p.name)), None)
    runtime = runtime or next((p for p in packages if p.tool == "conda" and p.name in _CONDA_RUNTIMES), None)
    if runtime is None:
        return
    b.put("torch.cuda_runtime_package", f"{runtime.name} {runtime.version}", runtime.line)
    _estimate_cudart(b, runtime)


def _check_torch(b: Builder, p: Package) -> None:
    reported = b.get("torch.version")
    if reported and compat.public_version(reported) != compat.public_version(p.version):
        b.note(f"pip lists torch {p.version} while torch reports {reported}: more than one torch may be "
               "installed, and the one Python imports is the one reported")


def _note_conda_torch(b: Builder, p: Package) -> None:
    if p.name == "cpuonly":
        b.note("conda's 'cpuonly' package is installed: conda chose a CPU-only torch")
        return
    m = _CONDA_TORCH_RE.search(p.build) if p.name == "pytorch" else None
    if m:
        b.note(f"torch comes from conda, built for CUDA {m.group(1)} (build {p.build})")
    elif p.name == "pytorch-cuda":
        b.note(f"conda's pytorch-cuda {p.version} is installed: a CUDA {p.version} build of torch from conda")


def _estimate_cudart(b: Builder, runtime: Package) -> None:
    """The runtime's version from its pip package, where torch is known to load that package."""
    # Since torch 2.1 the Linux wheels load the CUDA runtime from the nvidia-cuda-runtime wheel
    # (facts/cuda-compat.md); one of the same major as torch's CUDA is the one it loads. Checked
    # here: 2.14.1+cu130 and 2.10.0+cu128 report cudaRuntimeGetVersion 13000 and 12080, the
    # versions of their nvidia-cuda-runtime 13.0.96 and nvidia-cuda-runtime-cu12 12.8.90.
    cuda = b.get("torch.cuda")
    version = b.get("torch.version") or ""
    series = _SERIES_RE.match(version)
    rt = _SERIES_RE.match(runtime.version)
    m = _RUNTIME_RE.match(runtime.name)
    if runtime.tool != "pip" or not (cuda and series and rt and m):
        return
    if b.get("host.os") in ("Windows", "Darwin") or (int(series.group(1)), int(series.group(2))) < (2, 1):
        return
    if compat.parse_version(cuda)[0] != int(rt.group(1)) or (m.group("major") and m.group("major") != rt.group(1)):
        return
    estimate = compat.cuda_to_int(f"{rt.group(1)}.{rt.group(2)}")
    b.put("torch.cudart_version", estimate, runtime.line)
    b.note(f"CUDA runtime {rt.group(1)}.{rt.group(2)} ({estimate}) estimated from the pip package "
           f"{runtime.name}=={runtime.version}: torch >= 2.1 on Linux loads its runtime from that package")
