"""The GPU architectures of a torch build, read from a wheel of it in the wheelhouse (I/O over the fatbin reader).

torch's own list (`torch.cuda.get_arch_list()`, its TORCH_CUDA_ARCH_LIST) is the set of targets most of the
fatbin containers of its CUDA libraries hold: libtorch_cuda.so, which torch 1.13 split into libtorch_cuda_cu.so
and libtorch_cuda_cpp.so. Not every container holds it (read in 1.13.1's wheel here: 221 of 302 containers
of libtorch_cuda_cu.so hold sm_37 ... sm_86, torch's list; 50 hold sm_35 in its place, 16 sm_80 alone), so the
most common set is taken, not the intersection. Each library is taken out of the wheel into a temporary file, read
through the same ELF and fatbin readers the stack inventory uses, and removed. A build with no wheel at hand
keeps its architectures unknown: its shared object is hundreds of megabytes of compressed data whose section
table lies at its end, so no few ranged reads reach it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

from harness.stack import elf, fatbin
from refenv.refresh.builds import Build, wheel_name

LIBRARY = re.compile(r"^torch/lib/libtorch_cuda(_cu|_cpp)?\.so$")


def wheel_for(build: Build, wheelhouse: Path) -> Path | None:
    """A wheel of this build (same version and local part) in the wheelhouse, Linux x86_64 first."""
    if not wheelhouse.is_dir():
        return None
    found = [p for p in wheelhouse.glob("torch-*.whl") if (w := wheel_name(p.name)) and w.version == build.version]
    return sorted(found, key=lambda p: ("x86_64" not in p.name, p.name))[0] if found else None


def archs_of_wheel(path: Path) -> tuple[str, ...] | None:
    """The architectures every fatbin container of the wheel's torch CUDA libraries holds; None when they have
    no GPU code."""
    found: list[tuple[fatbin.Code, ...]] = []
    with zipfile.ZipFile(path) as wheel:
        for name in (n for n in wheel.namelist() if LIBRARY.match(n)):
            with tempfile.NamedTemporaryFile(suffix=".so") as out:
                with wheel.open(name) as member:
                    shutil.copyfileobj(member, out, 1 << 20)
                out.flush()
                with elf.mapped(out.name) as data:
                    section = elf.parse(data).section(".nv_fatbin")
                    if section is not None:
                        found += fatbin.containers(data, section.offset, section.size)
    sets = Counter(fatbin.sort_names(c.name for c in codes) for codes in found if codes)
    return sets.most_common(1)[0][0] if sets else None


def with_archs(build: Build, wheelhouse: Path) -> Build:
    """The build with its architectures where a wheel of it lies in the wheelhouse."""
    from dataclasses import replace

    if build.cuda is None:
        return replace(build, arch_source="a CPU build")
    path = wheel_for(build, wheelhouse)
    if path is None:
        return build
    try:
        archs = archs_of_wheel(path)
    except (OSError, zipfile.BadZipFile, elf.ElfError) as exc:
        return replace(build, arch_source=f"unknown: {path.name} could not be read ({exc})")
    if archs is None:
        return replace(build, arch_source=f"unknown: {path.name} has no GPU code in torch/lib/libtorch_cuda*.so")
    return replace(build, archs=archs, arch_source=f"read from {path.name}")
