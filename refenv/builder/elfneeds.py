"""Which symbol versions an ELF file needs from its libraries (its `.gnu.version_r` section), read in Python.

A shared library or program linked against glibc records, per library it needs, the version nodes of the
symbols it binds (`GLIBC_2.14` for the newer `memcpy`, `GLIBC_2.34` for `pthread_once` since glibc merged
libpthread into libc). The dynamic loader refuses the file where a needed node is missing ("version
`GLIBC_2.34' not found"), so the newest `GLIBC_x.y` node is the oldest glibc the file loads with.

Layout (System V ABI, ELF-64 object file format; the GNU symbol versioning extension as glibc documents it in
elf/elf.h: Elf64_Verneed and Elf64_Vernaux): section headers at e_shoff, SHT_GNU_verneed = 0x6ffffffe, its
sh_link the string table of the names, sh_info the number of Verneed entries.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

SHT_GNU_VERNEED = 0x6FFFFFFE
MAX_BYTES = 64 << 20   # refenv's own driver files are tens of kB; anything far larger is not one of them
MAX_ENTRIES = 4096     # Verneed and Vernaux entries walked, so a looping chain ends


class ElfError(ValueError):
    """The file is not an ELF file this reader understands; the message names it and why."""


@dataclass(frozen=True)
class Need:
    """One version node the file needs: from which library (`libc.so.6`), and its name (`GLIBC_2.14`)."""

    library: str
    version: str


def _cstring(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("ascii", "replace")


def needs(path: Path) -> tuple[Need, ...]:
    """Every version node `path` needs, in file order; () for a file without a `.gnu.version_r` section."""
    data = path.read_bytes()[:MAX_BYTES]
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path}: not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError(f"{path}: only 64-bit little-endian ELF files are read (class {data[4]}, data {data[5]})")
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        found = next((s for s in sections if s[1] == SHT_GNU_VERNEED), None)
        if found is None:
            return ()
        _, _, _, _, offset, _, link, count, _, _ = found
        strtab_offset, strtab_size = sections[link][4], sections[link][5]
        strtab = data[strtab_offset:strtab_offset + strtab_size]
        out: list[Need] = []
        entry = offset
        for _ in range(min(count, MAX_ENTRIES)):
            _, cnt, file_name, aux, nxt = struct.unpack_from("<HHIII", data, entry)
            library = _cstring(strtab, file_name)
            at = entry + aux
            for _ in range(min(cnt, MAX_ENTRIES)):
                _, _, _, name, aux_next = struct.unpack_from("<IHHII", data, at)
                out.append(Need(library, _cstring(strtab, name)))
                if not aux_next:
                    break
                at += aux_next
            if not nxt:
                break
            entry += nxt
    except (struct.error, IndexError) as exc:
        raise ElfError(f"{path}: a truncated or malformed ELF file ({exc})") from None
    return tuple(out)


def glibc_key(version: str) -> tuple[int, ...] | None:
    """`GLIBC_2.2.5` as (2, 2, 5); None for other nodes (`GLIBC_PRIVATE`, `GCC_3.0`, ...)."""
    if not version.startswith("GLIBC_"):
        return None
    parts = version[len("GLIBC_"):].split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def newest_glibc(paths: list[Path] | tuple[Path, ...]) -> str | None:
    """The newest `GLIBC_x.y` node any of the files needs, as "x.y" (the oldest glibc they all load with)."""
    keys = [k for p in paths for n in needs(p) if (k := glibc_key(n.version)) is not None]
    return ".".join(str(p) for p in max(keys)) if keys else None
