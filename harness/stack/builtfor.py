"""What an installed distribution says it was built for: a CUDA version, a torch release (pure over its files).

Each answer names where it was read, strongest first:
- a build record: xFormers' `cpp_lib.json` (`version.cuda` as 1201, `version.torch`; read by xformers/_cpp_lib.py);
- the local version label, in the metadata or the package's own `version.py` (`0.29.1+cu130`; flash-attn's
  release wheels `2.7.4.post1+cu12torch2.5cxx11abiFALSE`);
- the name of a wheel built per CUDA major (`cupy-cuda12x`, `nvidia-cublas-cu12`), or the CUDA runtime
  wheel's own version (`nvidia-cuda-runtime 13.0.96`);
- the CUDA runtime its shared objects load (DT_NEEDED `libcudart.so.12`, or a bundled `libcudart.<hash>.so.13`):
  the major only.
Libraries shipped once per CUDA version (`libbitsandbytes_cuda128.so`) are listed apart: the one that loads is
chosen at run time by torch's CUDA (bitsandbytes cextension.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from harness.schema.stack_document import BuiltFor
from harness.stack.installed import Installed

_LABEL_CUDA_RE = re.compile(r"(?:^|[^a-z])cu(\d{2,3})(?![0-9])")
_LABEL_TORCH_RE = re.compile(r"torch(\d{1,2}\.\d{1,3})")
_VERSION_PY_RE = re.compile(r"""^__version__\s{0,4}=\s{0,4}['"]([^'"]{1,80})['"]""", re.MULTILINE)
# torch/version.py: `cuda: Optional[str] = '12.6'`, or `= None` in a CPU build (NGC and conda builds carry no
# +cuXYZ label, so this line is what says their CUDA).
_TORCH_CUDA_RE = re.compile(r"""^cuda\b[^=\n]{0,60}=\s{0,4}(?:['"](\d{1,2}\.\d{1,2})['"]|(None))""", re.MULTILINE)
_NAME_CUDA_RE = re.compile(r"-cu(?:da)?(\d{2})(?:x)?$")
_CUDART_RE = re.compile(r"^libcudart(?:\.[0-9a-f]{8})?\.so\.(\d{2})")
_PER_CUDA_RE = re.compile(r"_cuda(\d{2,3})(?:_[a-z]{1,20})?\.so$")
_RUNTIME_WHEELS = ("nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-cupti")


def cuda_of_digits(digits: str) -> str:
    """'130' -> '13.0', '121' -> '12.1', '12' -> '12' (a major alone)."""
    return digits if len(digits) == 2 else f"{int(digits[:-1])}.{digits[-1]}"


def _torch_version_py(dist: Installed) -> BuiltFor | None:
    if dist.key != "torch" or "torch/version.py" not in dist.files:
        return None
    m = _TORCH_CUDA_RE.search(dist.read_text("torch/version.py") or "")
    if m is None:
        return None
    if m.group(2):  # a CPU build: no CUDA, and nothing later may say otherwise
        return BuiltFor(None, "torch/version.py (cuda = None)")
    return BuiltFor(m.group(1), f"torch/version.py (cuda = '{m.group(1)}')")


def labelled_version(dist: Installed) -> str:
    """Its version with the local label its package reports, where one does (torch's '2.14.1+cu130')."""
    found = _local_version(dist)
    return found[0] if found else dist.version


def _local_version(dist: Installed) -> tuple[str, str] | None:
    """The version carrying a local label: the metadata's, else the package's version.py (torchvision's)."""
    if "+" in dist.version:
        return dist.version, "its version"
    for module in dist.modules:
        for rel in (f"{module}/version.py", f"{module}/_version.py"):
            if rel in dist.files:
                m = _VERSION_PY_RE.search(dist.read_text(rel) or "")
                if m and "+" in m.group(1):
                    return m.group(1), f"{rel} (__version__ = '{m.group(1)}')"
    return None


def _build_record(dist: Installed) -> BuiltFor | None:
    rel = next((f for f in dist.files if f.endswith("/cpp_lib.json")), None)
    if rel is None:
        return None
    try:
        version = json.loads(dist.read_text(rel) or "{}").get("version") or {}
    except ValueError:
        return None
    cuda = version.get("cuda")
    torch = version.get("torch")
    cuda_text = f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}" if isinstance(cuda, int) and cuda > 0 else None
    return BuiltFor(cuda_text, rel if cuda_text else None, str(torch) if torch else None, rel if torch else None)


def _from_label(dist: Installed) -> BuiltFor | None:
    found = _local_version(dist)
    if found is None:
        return None
    version, where = found
    label = version.split("+", 1)[1].lower()
    cuda = _LABEL_CUDA_RE.search(label)
    torch = _LABEL_TORCH_RE.search(label)
    if not cuda and not torch:
        return None
    return BuiltFor(cuda_of_digits(cuda.group(1)) if cuda else None, where if cuda else None,
                    torch.group(1) if torch else None, where if torch else None)


def _from_name(dist: Installed) -> BuiltFor | None:
    if any(dist.key == w for w in _RUNTIME_WHEELS):
        parts = dist.version.split(".")
        return BuiltFor(".".join(parts[:2]), f"{dist.name} {dist.version}")
    m = _NAME_CUDA_RE.search(dist.key)
    return BuiltFor(m.group(1), f"its name ({dist.name})") if m else None


def _from_needed(needed: dict[str, tuple[str, ...]]) -> BuiltFor | None:
    for rel, libs in sorted(needed.items()):
        for lib in libs:
            m = _CUDART_RE.match(lib)
            if m:
                return BuiltFor(m.group(1), f"{rel.rsplit('/', 1)[-1]} loads {lib}")
    return None


def built_for(dist: Installed, needed: dict[str, tuple[str, ...]]) -> BuiltFor:
    """Every answer merged: for each of CUDA and torch, the first source that has it. `needed` maps each of its
    shared objects to its DT_NEEDED entries."""
    per_cuda = tuple(sorted({cuda_of_digits(m.group(1)) for f in dist.shared_objects
                             for m in [_PER_CUDA_RE.search(f)] if m}, key=lambda v: [int(p) for p in v.split(".")]))
    own = _torch_version_py(dist)
    if own is not None and own.cuda is None:
        return own
    readers: list[Callable[[], BuiltFor | None]] = [
        lambda: own, lambda: _build_record(dist), lambda: _from_label(dist), lambda: _from_name(dist)]
    if not per_cuda:  # a library per CUDA version: what each loads says nothing of the one that will load
        readers.append(lambda: _from_needed(needed))
    cuda = cuda_from = torch = torch_from = None
    for read in readers:
        found = read()
        if found is None:
            continue
        if cuda is None and found.cuda:
            cuda, cuda_from = found.cuda, found.cuda_from
        if torch is None and found.torch:
            torch, torch_from = found.torch, found.torch_from
    return BuiltFor(cuda, cuda_from, torch, torch_from, per_cuda)
