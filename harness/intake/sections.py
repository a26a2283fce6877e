"""Find collect_env's 'Key: value' fields in pasted lines, whatever torch release printed them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.intake.parsed import Line

# The fields in the order torch 2.14's collect_env prints them (torch/utils/collect_env.py,
# env_info_fmt). Older releases print a subset in the same order: 1.x has no 'Python platform',
# 'CUDA_MODULE_LOADING set to' or 'CPU:'; 'Is XPU available' and 'Caching allocator config' came
# with 2.5-2.8.
FIELDS = (
    ("torch_version", "PyTorch version"),
    ("debug_build", "Is debug build"),
    ("cuda_built", "CUDA used to build PyTorch"),
    ("rocm_built", "ROCM used to build PyTorch"),
    ("os", "OS"),
    ("gcc", "GCC version"),
    ("clang", "Clang version"),
    ("cmake", "CMake version"),
    ("libc", "Libc version"),
    ("python", "Python version"),
    ("python_platform", "Python platform"),
    ("cuda_available", "Is CUDA available"),
    ("nvcc", "CUDA runtime version"),
    ("cuda_module_loading", "CUDA_MODULE_LOADING set to"),
    ("gpus", "GPU models and configuration"),
    ("driver", "Nvidia driver version"),
    ("cudnn", "cuDNN version"),
    ("xpu_available", "Is XPU available"),
    ("hip_runtime", "HIP runtime version"),
    ("miopen", "MIOpen runtime version"),
    ("xnnpack", "Is XNNPACK available"),
    ("allocator_config", "Caching allocator config"),
    ("cpu", "CPU"),
    ("libraries", "Versions of relevant libraries"),
)
PRINTED = dict(FIELDS)
ORDER = {name: i for i, (name, _) in enumerate(FIELDS)}
_ALIASES = {key.lower(): name for name, key in FIELDS}
_ALIASES["version of relevant libraries"] = "libraries"  # seen in hand-edited reports
# Fields whose value continues on the following lines.
_BLOCKS = ("gpus", "cudnn", "cpu", "libraries")
# Fields that say what the torch BUILD supports, not which GPU the machine has: every torch prints them
# whatever it runs on ('ROCM used to build PyTorch: N/A', 'HIP runtime version: N/A', 'MIOpen runtime
# version: N/A' on a CUDA or CPU wheel; 'Is XPU available: False' on any build without Intel's XPU backend,
# torch/utils/collect_env.py get_env_info). Their words (ROCm, HIP, XPU) are no clue to the machine's GPU.
BUILD_FIELDS = frozenset(("debug_build", "cuda_built", "rocm_built", "hip_runtime", "miopen", "xnnpack",
                          "allocator_config", "cuda_module_loading"))
# 'Is XPU available' speaks of the machine only when it is true (torch.xpu.is_available(): a device answered).
_YES = ("true", "yes")

_KEY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 _/().-]{0,45}?)\s*[:\uff1a]\s*(.*)$")
_BARE_VERSION_RE = re.compile(r"^PyTorch version\s+(\d\S*)$", re.I)
HEADER = "Collecting environment information"


@dataclass(frozen=True)
class Field:
    """One collect_env field: its key line, the value on it, and the lines that continue it."""

    name: str
    line: Line
    value: str
    more: tuple[Line, ...] = ()


@dataclass(frozen=True)
class Dump:
    """The fields found (first occurrence of each) and how the dump ended."""

    fields: dict[str, Field]
    header: Line | None
    dumps: int                 # how many 'PyTorch version' lines: a report may paste two runs
    missing: tuple[str, ...]   # fields after the point where a truncated dump stops
    build_lines: frozenset[int] = frozenset()  # the lines of fields about the build (BUILD_FIELDS), every dump's


def match_key(text: str) -> tuple[str, str] | None:
    """(field name, value) when the line is one of collect_env's 'Key: value' lines."""
    m = _KEY_RE.match(text)
    if m:
        name = _ALIASES.get(" ".join(m.group(1).lower().split()))
        if name:
            return name, m.group(2).strip()
    bare = _BARE_VERSION_RE.match(text)
    return ("torch_version", bare.group(1)) if bare else None


def _continues(name: str, line: Line) -> bool:
    if name == "libraries":
        return line.text.startswith("[")
    return bool(line.text)


def read_dump(lines: list[Line]) -> Dump:
    """Collect the fields; a field's block ends at a blank line or the next field."""
    fields: dict[str, Field] = {}
    header = None
    dumps = 0
    build: set[int] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if header is None and line.text.startswith(HEADER):
            header = line
            continue
        found = match_key(line.text)
        if found is None:
            continue
        name, value = found
        dumps += name == "torch_version"
        if name in BUILD_FIELDS or (name == "xpu_available" and value.lower() not in _YES):
            build.add(line.number)
        more: list[Line] = []
        if name in _BLOCKS:
            while i < len(lines) and _continues(name, lines[i]) and match_key(lines[i].text) is None:
                more.append(lines[i])
                i += 1
        fields.setdefault(name, Field(name, line, value, tuple(more)))
    return Dump(fields, header, dumps, _missing(fields), frozenset(build))


def _missing(fields: dict[str, Field]) -> tuple[str, ...]:
    """The fields a dump cut short never reached: those after the last one seen."""
    if not fields or "libraries" in fields:
        return ()
    last = max(ORDER[name] for name in fields)
    return tuple(name for name, _ in FIELDS[last + 1:])
