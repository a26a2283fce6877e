"""The GPU code in a shared object's `.nv_fatbin` section: which architectures, as SASS or as PTX.

nvcc links one fatbin container per compilation unit; each holds one entry per `-gencode` target: a cubin
(SASS for one sm_XY, runs on that major at or above that minor) or PTX (compute_XY, JIT-compiled by the
driver for any GPU at or above it). Layout, read from the headers only (payloads stay compressed, untouched):
container: magic 0xBA55ED50, u16 version, u16 header size, u64 size of its entries; entry: u16 kind
(1 PTX, 2 and 0x10 ELF), u16, u32 header size, u64 payload size, u32 compressed size, u32, u16 minor and u16
major (the PTX ISA for PTX), u32 arch (sm number), u32, u32, u64 flags. Sources: the layout documented from
cuobjdump by GrigoryEvko/nvopen-tools (fatbin/FORMAT_SPECIFICATION.md), checked here against torch
2.14.1+cu130's libtorch_cuda.so, torchvision 0.29.1 and torchaudio 2.11.1. Flag 0x100000 marks an
architecture-specific cubin (sm_90a, sm_100a: runs on that exact GPU only) and 0x200000 a family-specific
one (sm_103f): in libtorch_cuda.so they appear only on the kernels PyTorch builds with extra -gencode targets.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from harness.stack.elf import Data

MAGIC = 0xBA55ED50
CONTAINER = struct.Struct("<IHHQ")
ENTRY = struct.Struct("<HHIQIIHHIIIQ")
KIND_PTX = 1
KINDS_ELF = (2, 0x10)
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000
MAX_ENTRY_HEADER = 4096


@dataclass(frozen=True, order=True)
class Code:
    """One entry: SASS or PTX for one architecture."""

    sm: int               # 90 for sm_90
    ptx: bool
    suffix: str = ""      # "a" (architecture-specific) or "f" (family-specific)
    isa: tuple[int, int] = (0, 0)  # the PTX ISA version, for PTX

    @property
    def name(self) -> str:
        return f"{'compute' if self.ptx else 'sm'}_{self.sm}{self.suffix}"


def _entries(data: Data, start: int, end: int) -> tuple[Code, ...]:
    out = []
    pos = start
    while pos + ENTRY.size <= end:
        kind, _v, header, size, _c, _u, minor, major, arch, _o, _l, flags = ENTRY.unpack_from(data, pos)
        if header < ENTRY.size or header > MAX_ENTRY_HEADER:
            break
        if kind == KIND_PTX or kind in KINDS_ELF:
            suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
            ptx = kind == KIND_PTX
            out.append(Code(arch, ptx, suffix, (major, minor) if ptx else (0, 0)))
        pos += header + size
    return tuple(out)


def containers(data: Data, offset: int, size: int) -> list[tuple[Code, ...]]:
    """The entries of every container in data[offset:offset+size], in order; bytes between containers skipped."""
    end = min(offset + size, len(data))
    magic = struct.pack("<I", MAGIC)
    out = []
    pos = offset
    while pos + CONTAINER.size <= end:
        found, _version, header, body = CONTAINER.unpack_from(data, pos)
        if found != MAGIC:
            pos = data.find(magic, pos + 1, end)  # padding between containers: find the next one
            if pos < 0:
                break
            continue
        stop = min(pos + header + body, end)
        out.append(_entries(data, pos + header, stop))
        pos = max(stop, pos + CONTAINER.size)
    return out


def _order(name: str) -> tuple[int, int, str]:
    """sm_90 < sm_90a < compute_90 < sm_100: by architecture, SASS before PTX."""
    kind, _, rest = name.partition("_")
    digits = rest.rstrip("af")
    return int(digits), int(kind == "compute"), rest[len(digits):]


def sort_names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(names), key=_order))


@dataclass(frozen=True)
class Archs:
    """What a shared object's fatbins target.

    `baseline` is in every container (what the library as a whole was built for: for torch's own libraries
    the list `torch.cuda.get_arch_list()` reports); `extra` only in some (kernels built for more targets);
    `sets` the distinct combinations, each container's targets (a library has a handful, however large)."""

    containers: int
    baseline: tuple[str, ...]
    extra: tuple[str, ...]
    ptx_isa: str | None       # the newest PTX ISA among its PTX entries, e.g. "9.0" (CUDA 13.0's nvcc)
    sets: tuple[tuple[str, ...], ...] = ()


def summarize(found: Iterable[tuple[Code, ...]]) -> Archs:
    found = [codes for codes in found if codes]
    if not found:
        return Archs(0, (), (), None)
    sets = [frozenset(c.name for c in codes) for codes in found]
    common = frozenset.intersection(*sets)
    every = frozenset.union(*sets)
    isa = max((c.isa for codes in found for c in codes if c.ptx), default=None)
    distinct = sorted({sort_names(s) for s in sets}, key=lambda names: [_order(n) for n in names])
    return Archs(len(sets), sort_names(common), sort_names(every - common),
                 f"{isa[0]}.{isa[1]}" if isa else None, tuple(distinct))
