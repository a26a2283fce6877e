"""What an index says about each torch build, read from file names and core metadata (pure).

A wheel's name carries its version (with a local `+cu130` / `+cpu` on PyTorch's own index), its Python tag and
its platform (PEP 427's `name-version-python-abi-platform.whl`, PEP 425's tags). Its metadata carries
`Requires-Python` and the pins of the CUDA runtime it bundles: `nvidia-cuda-runtime-cu12==12.8.90` up to torch
2.8 and its CUDA 12 builds, `cuda-toolkit[...,cudart,...]==13.0.3` from the CUDA 13 builds on (read in the
wheels' METADATA: tests/data/index/). The runtime's major.minor is the build's CUDA.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.parser import HeaderParser

from harness import compat

_WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<python>[^-]+)-(?P<abi>[^-]+)-"
                    r"(?P<platform>[^-]+)\.whl$")
_VERSION = re.compile(r"^(?P<public>\d+\.\d+(?:\.\d+)?)(?:\+(?P<local>[A-Za-z0-9.]+))?$")
# The CUDA runtime a torch wheel pins: the distribution, its optional extras, the exact version.
_RUNTIME_PIN = re.compile(r"^\s*(?P<name>nvidia-cuda-runtime(?:-cu\d+)?|cuda-toolkit)\s*(?:\[[^\]]*\])?\s*"
                          r"\(?\s*==\s*(?P<major>\d+)\.(?P<minor>\d+)", re.IGNORECASE)
_CPYTHON = re.compile(r"^cp(?P<major>\d)(?P<minor>\d+)t?$")
_BOUND = re.compile(r">=\s*(\d+\.\d+)")


@dataclass(frozen=True)
class WheelName:
    version: str          # '2.15.0+cu130'
    public: str           # '2.15.0'
    local: str            # 'cu130', 'cpu' or ''
    python: str | None    # '3.12' (a CPython tag), None for another interpreter or py3
    platform: str         # 'manylinux_2_28_x86_64'


def wheel_name(filename: str, project: str = "torch") -> WheelName | None:
    """The parts of a torch wheel's file name; None for another project's file, an sdist or a pre-release."""
    m = _WHEEL.match(filename)
    if m is None or m.group("name").lower() != project:
        return None
    v = _VERSION.match(m.group("version"))
    if v is None:
        return None
    py = _CPYTHON.match(m.group("python"))
    return WheelName(m.group("version"), v.group("public"), v.group("local") or "",
                     f"{py.group('major')}.{py.group('minor')}" if py else None, m.group("platform"))


def linux_x86(platform: str) -> bool:
    return "linux" in platform and platform.endswith("x86_64")


@dataclass(frozen=True)
class Metadata:
    version: str | None
    requires_python: str | None
    cuda: str | None      # the bundled runtime's major.minor; None when no runtime is pinned


def read_metadata(text: str) -> Metadata:
    """The fields of a core metadata file (its headers; the description after them is not read)."""
    headers = HeaderParser().parsestr(text, headersonly=True)
    cuda = None
    for line in headers.get_all("Requires-Dist") or []:
        m = _RUNTIME_PIN.match(str(line))
        if m:
            cuda = f"{int(m.group('major'))}.{int(m.group('minor'))}"
            break
    version = headers.get("Version")
    rp = headers.get("Requires-Python")
    return Metadata(str(version).strip() if version else None, str(rp).strip() if rp else None, cuda)


@dataclass(frozen=True)
class Build:
    """One torch build (a version, with its local part) as the index lists it."""

    version: str                       # '2.15.0' or '2.15.0+cu130'
    series: str                        # '2.15'
    local: str                         # 'cu130', 'cpu', '' (PyPI's own)
    pythons: tuple[str, ...]           # the CPython versions its wheels are tagged for, ascending
    platforms: tuple[str, ...]
    requires_python: str | None
    cuda: str | None                   # bundled runtime (from the metadata, else the local part); None: CPU
    metadata: str                      # how the metadata was read, or why it was not
    archs: tuple[str, ...] | None = None   # the GPU architectures, where a wheel was at hand to read
    arch_source: str = "unknown: no wheel of this build in the wheelhouse"
    files: tuple[str, ...] = field(default=(), compare=False)

    @property
    def variant(self) -> str:
        """'cu130' / 'cpu': the local part, else the bundled CUDA's name, else cpu."""
        if self.local:
            return self.local
        return compat.cuda_variant(self.cuda) if self.cuda else "cpu"


def _py_key(v: str) -> tuple[int, ...]:
    return compat.parse_version(v)


def group(filenames: list[str]) -> dict[str, list[tuple[str, WheelName]]]:
    """The torch wheels by version (with local part), pre-releases and other files left out."""
    out: dict[str, list[tuple[str, WheelName]]] = {}
    for name in filenames:
        w = wheel_name(name)
        if w is not None:
            out.setdefault(w.version, []).append((name, w))
    return out


def representative(wheels: list[tuple[str, WheelName]]) -> str:
    """The wheel whose metadata speaks for the build: Linux x86_64 (the one that pins the CUDA runtime), the
    newest CPython; else any."""
    linux = [(n, w) for n, w in wheels if linux_x86(w.platform) and w.python]
    pool = linux or wheels
    return max(pool, key=lambda nw: (_py_key(nw[1].python) if nw[1].python else (0,), nw[0]))[0]


def build_of(version: str, wheels: list[tuple[str, WheelName]], meta: Metadata | None, how: str) -> Build:
    """The build's facts from its wheels' names and its representative's metadata."""
    w0 = wheels[0][1]
    pythons = tuple(sorted({w.python for _, w in wheels if w.python}, key=_py_key))
    cuda = meta.cuda if meta else None
    if cuda is None and w0.local:
        cuda = compat.variant_cuda(w0.local)
    return Build(version, compat.torch_series(w0.public), w0.local, pythons,
                 tuple(sorted({w.platform for _, w in wheels})), meta.requires_python if meta else None, cuda, how,
                 files=tuple(n for n, _ in wheels))


def python_floor(requires_python: str | None) -> str | None:
    """'>=3.11' -> '3.11'."""
    m = _BOUND.search(requires_python or "")
    return m.group(1) if m else None
