"""Installed distributions and small ELF shared objects written byte by byte, for the stack's tests.

The layout is the System V ABI's ELF-64 (header, section header table, SHT_DYNAMIC with its string table) and
the fatbin container and entry headers as harness/stack/fatbin.py documents them; the real libraries the reader
was checked against (torch 2.14.1's libtorch_cuda.so, torchvision's _C.so) are read in tests/docker/test_stack.py.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

PTX = 1
SASS = 2
ARCH_SPECIFIC = 0x100000

HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
SECTION = struct.Struct("<IIQQQQIIQQ")


def entry(kind: int, sm: int, flags: int = 0, isa: tuple[int, int] = (0, 0), payload: bytes = b"\0" * 13) -> bytes:
    """One fatbin entry: its 64-byte header and its payload padded to 8 bytes."""
    padded = payload + b"\0" * (-len(payload) % 8)
    major, minor = isa if kind == PTX else (1, 8)
    head = struct.pack("<HHIQIIHHIIIQ", kind, 0x0101, 64, len(padded), len(payload), 0, minor, major, sm, 0, 0,
                       0x11 | flags)
    return head + b"\0" * 16 + padded


def container(entries: Sequence[bytes]) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def shared_object(fatbin: bytes | None = None, needed: Sequence[str] = (), soname: str | None = None) -> bytes:
    """A 64-bit little-endian ELF with .dynstr/.dynamic (DT_NEEDED, DT_SONAME) and, if given, a .nv_fatbin."""
    dynstr = b"\0"
    tags: list[tuple[int, int]] = []
    for name in needed:
        tags.append((1, len(dynstr)))
        dynstr += name.encode() + b"\0"
    if soname:
        tags.append((14, len(dynstr)))
        dynstr += soname.encode() + b"\0"
    dynamic = b"".join(struct.pack("<qQ", t, v) for t, v in [*tags, (0, 0)])
    sections = [(".dynstr", 3, dynstr, 0), (".dynamic", 6, dynamic, 1)]
    if fatbin is not None:
        sections.append((".nv_fatbin", 1, fatbin, 0))
    names = b"\0"
    name_at = []
    for section in [*(s[0] for s in sections), ".shstrtab"]:
        name_at.append(len(names))
        names += section.encode() + b"\0"
    blobs = [blob for _, _, blob, _ in sections] + [names]
    offset = HEADER.size
    data = b""
    placed = []
    for blob in blobs:
        placed.append((offset + len(data), len(blob)))
        data += blob + b"\0" * (-len(blob) % 8)
    shoff = offset + len(data)
    table = SECTION.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    kinds = [kind for _, kind, _, _ in sections] + [3]
    links = [link for _, _, _, link in sections] + [0]
    for i, (at, size) in enumerate(placed):
        # sh_link of .dynamic is the index of .dynstr: 1, after the null section
        table += SECTION.pack(name_at[i], kinds[i], 0, 0, at, size, links[i], 0, 8, 0)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = HEADER.pack(ident, 3, 62, 1, 0, 0, shoff, 0, HEADER.size, 0, 0, SECTION.size, len(placed) + 1,
                         len(placed))
    return header + data + table


def install(site: Path, name: str, version: str, files: dict[str, bytes | str], requires: tuple[str, ...] = (),
            top_level: str | None = None) -> None:
    """A distribution as pip leaves it: its files, and NAME-VERSION.dist-info with METADATA, RECORD, top_level."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    for rel, content in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    if top_level:
        (info / "top_level.txt").write_text(top_level + "\n")
    record = [f"{rel},," for rel in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")
