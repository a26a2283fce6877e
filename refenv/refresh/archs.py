"""The GPU architectures of a torch build, read from a wheel of it in the wheelhouse (I/O over the fatbin reader).

torch's own list (`torch.cuda.get_arch_list()`) is what every fatbin container of libtorch_cuda.so holds
(harness/stack/fatbin.py: the baseline); the library is taken out of the wheel into a temporary file, read
through the same ELF and fatbin readers the stack inventory uses, and removed. A build with no wheel at hand
keeps its architectures unknown: its shared object is hundreds of megabytes of compressed data whose section
table lies at its end, so no few ranged reads reach it.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path

from harness.stack import elf, fatbin
from refenv.refresh.builds import Build, wheel_name

LIBRARY = "torch/lib/libtorch_cuda.so"


def wheel_for(build: Build, wheelhouse: Path) -> Path | None:
    """A wheel of this build (same version and local part) in the wheelhouse, Linux x86_64 first."""
    if not wheelhouse.is_dir():
        return None
    found = [p for p in wheelhouse.glob("torch-*.whl") if (w := wheel_name(p.name)) and w.version == build.version]
    return sorted(found, key=lambda p: ("x86_64" not in p.name, p.name))[0] if found else None


def archs_of_wheel(path: Path) -> tuple[str, ...] | None:
    """The architectures every fatbin container of the wheel's libtorch_cuda.so holds; None when it has none."""
    with zipfile.ZipFile(path) as wheel:
        if LIBRARY not in wheel.namelist():
            return None
        with tempfile.NamedTemporaryFile(suffix=".so") as out:
            with wheel.open(LIBRARY) as member:
                shutil.copyfileobj(member, out, 1 << 20)
            out.flush()
            with elf.mapped(out.name) as data:
                section = elf.parse(data).section(".nv_fatbin")
                if section is None:
                    return None
                return fatbin.summarize(fatbin.containers(data, section.offset, section.size)).baseline


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
        return replace(build, arch_source=f"unknown: {path.name} has no GPU code in {LIBRARY}")
    return replace(build, archs=archs, arch_source=f"read from {path.name}")
