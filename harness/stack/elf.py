"""A minimal reader of 64-bit little-endian ELF files: the section table and the dynamic dependencies.

Only what the stack inventory needs: where a named section lies (`.nv_fatbin`, where nvcc puts a shared
object's GPU code) and which libraries the object asks the loader for (DT_NEEDED, e.g. `libcudart.so.12`,
`libtorch_cuda.so`). Source: the System V ABI, "ELF-64 Object File Format" (e_ident, the ELF header, the
section header table, SHT_DYNAMIC entries and the string table named by sh_link). Every offset read from the
file is checked against its length, so a truncated or hostile file is an ElfError, never a crash or a hang.
"""

from __future__ import annotations

import contextlib
import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
SHT_NOBITS = 8      # a section with no bytes in the file (.bss)
SHT_DYNAMIC = 6
DT_NULL = 0
DT_NEEDED = 1
DT_SONAME = 14
SHN_XNUM = 0xFF00   # e_shnum too large for its field: the count is in section 0's sh_size
SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")  # name, type, flags, addr, offset, size, link, info, align, entsize
DYN_ENTRY = struct.Struct("<qQ")
MAX_SECTIONS = 1 << 16
MAX_DYNAMIC = 1 << 16
MAX_NAME = 4096

Data = Union[bytes, mmap.mmap]  # noqa: UP007  (a run-time alias: `X | Y` here needs Python 3.10)


class ElfError(ValueError):
    """The file is not an ELF this reader understands, or its tables point outside it."""


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int


@dataclass(frozen=True)
class Elf:
    sections: tuple[Section, ...]
    needed: tuple[str, ...]
    soname: str | None

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


def is_elf(head: bytes) -> bool:
    return head[:4] == MAGIC


def _string(data: Data, table: Section, index: int) -> str:
    start = table.offset + index
    if index < 0 or start >= table.offset + table.size:
        raise ElfError(f"a name at {index} lies outside its string table")
    end = data.find(b"\0", start, min(table.offset + table.size, start + MAX_NAME))
    if end < 0:
        raise ElfError("an unterminated name in a string table")
    return bytes(data[start:end]).decode("utf-8", "replace")


def _headers(data: Data) -> tuple[list[tuple[int, int, int, int, int]], int]:
    """(name index, type, offset, size, link) of every section, checked against the file, and the index of
    the section that holds their names."""
    if len(data) < 64 or not is_elf(bytes(data[:4])):
        raise ElfError("not an ELF file")
    if data[4] != ELFCLASS64 or data[5] != ELFDATA2LSB:
        raise ElfError("not a 64-bit little-endian ELF (the only kind this reader knows)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0:
        return [], 0
    if shentsize < SECTION_HEADER.size or shoff + shentsize > len(data):
        raise ElfError("its section header table lies outside the file")
    if shnum == 0:
        shnum = SECTION_HEADER.unpack_from(data, shoff)[5]
    if shstrndx == SHN_XNUM:
        shstrndx = SECTION_HEADER.unpack_from(data, shoff)[6]
    if shnum > MAX_SECTIONS or shoff + shnum * shentsize > len(data):
        raise ElfError(f"{shnum} section headers do not fit in the file")
    out = []
    for i in range(shnum):
        name, kind, _flags, _addr, offset, size, link = SECTION_HEADER.unpack_from(data, shoff + i * shentsize)[:7]
        if kind != SHT_NOBITS and offset + size > len(data):
            raise ElfError(f"section {i} lies outside the file")
        out.append((name, kind, offset, size if kind != SHT_NOBITS else 0, link))
    if shstrndx >= len(out):
        raise ElfError("its section name table is missing")
    return out, shstrndx


def parse(data: Data) -> Elf:
    """The sections (with names), DT_NEEDED and DT_SONAME of an ELF image held in `data`."""
    rows, shstrndx = _headers(data)
    if not rows:
        return Elf((), (), None)
    _, _, names_offset, names_size, _ = rows[shstrndx]
    names = Section(".shstrtab", 3, names_offset, names_size, 0)
    sections = tuple(Section(_string(data, names, n), kind, off, size, link) for n, kind, off, size, link in rows)
    needed: list[str] = []
    soname = None
    dynamic = next((s for s in sections if s.type == SHT_DYNAMIC), None)
    if dynamic is not None and dynamic.link < len(sections):
        strings = sections[dynamic.link]
        count = min(dynamic.size // DYN_ENTRY.size, MAX_DYNAMIC)
        for i in range(count):
            tag, value = DYN_ENTRY.unpack_from(data, dynamic.offset + i * DYN_ENTRY.size)
            if tag == DT_NULL:
                break
            if tag == DT_NEEDED:
                needed.append(_string(data, strings, value))
            elif tag == DT_SONAME:
                soname = _string(data, strings, value)
    return Elf(sections, tuple(needed), soname)


@contextlib.contextmanager
def mapped(path: str) -> Iterator[Data]:
    """The file's bytes, memory-mapped read-only: only the pages a reader touches are read from disk."""
    with open(path, "rb") as f:
        try:
            view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            yield b""
            return
        try:
            yield view
        finally:
            view.close()


def read(path: str) -> Elf:
    with mapped(path) as data:
        return parse(data)
