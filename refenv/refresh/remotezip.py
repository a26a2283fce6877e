"""One member of a zip file that lies on a server, read through HTTP range requests: a wheel's METADATA without
the wheel.

An index that does not serve PEP 658's metadata file still serves the wheel; where its server answers ranged
requests (RFC 9110 section 14: `Range: bytes=...`, answered 206) the metadata is three short reads away: the end
of the archive (the end-of-central-directory record, and ZIP64's locator where the archive needs it), the central
directory, then the member's local header and its compressed bytes. A server that answers a range with the whole
file (200) is refused at once, before its body is read: no wheel is downloaded. The layouts are PKWARE's
APPNOTE.TXT (sections 4.3.7 local header, 4.3.12 central directory header, 4.3.14-4.3.16 ZIP64 and end records,
4.5.3 the ZIP64 extra field); the parsing is pure, over the bytes a reader returns.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

END = struct.Struct("<IHHHHIIH")            # end of central directory, 22 bytes
END_SIGNATURE = 0x06054B50
LOCATOR = struct.Struct("<IIQI")            # ZIP64 end of central directory locator, 20 bytes
LOCATOR_SIGNATURE = 0x07064B50
END64 = struct.Struct("<IQHHIIQQQQ")        # ZIP64 end of central directory record, 56 bytes
END64_SIGNATURE = 0x06064B50
CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # central directory header, 46 bytes
CENTRAL_SIGNATURE = 0x02014B50
LOCAL = struct.Struct("<IHHHHHIIIHH")       # local file header, 30 bytes
LOCAL_SIGNATURE = 0x04034B50
STORED, DEFLATED = 0, 8
TAIL = END.size + 0xFFFF + LOCATOR.size     # the end record, its longest comment, and the ZIP64 locator
LARGEST_MEMBER = 16 << 20                   # a METADATA file is kilobytes; refuse to inflate a large member

# reader(start, length) -> those bytes; start < 0 reads the last -start bytes (a suffix range).
Reader = Callable[[int, int], bytes]


class ZipReadError(ValueError):
    """The bytes are not the zip archive the reader expects; the message says what was wrong."""


@dataclass(frozen=True)
class Member:
    name: str
    method: int
    compressed: int
    size: int
    offset: int             # of its local header


def _directory_span(tail: bytes, tail_start: int) -> tuple[int, int]:
    """(offset, size) of the central directory, from the archive's last bytes (which begin at tail_start)."""
    at = tail.rfind(END_SIGNATURE.to_bytes(4, "little"))
    if at < 0 or len(tail) - at < END.size:
        raise ZipReadError("no end-of-central-directory record in the archive's last bytes: not a zip file")
    _, _, _, _, _, size, offset, _ = END.unpack_from(tail, at)
    if offset == 0xFFFFFFFF or size == 0xFFFFFFFF:
        locator = at - LOCATOR.size
        if locator < 0 or int.from_bytes(tail[locator:locator + 4], "little") != LOCATOR_SIGNATURE:
            raise ZipReadError("a ZIP64 archive without its end-of-central-directory locator")
        end64 = LOCATOR.unpack_from(tail, locator)[2] - tail_start
        if end64 < 0 or end64 + END64.size > len(tail):
            raise ZipReadError("the ZIP64 end record lies outside the archive's last bytes")
        fields = END64.unpack_from(tail, end64)
        if fields[0] != END64_SIGNATURE:
            raise ZipReadError("no ZIP64 end-of-central-directory record where the locator points")
        size, offset = fields[8], fields[9]
    return offset, size


def _zip64_extra(extra: bytes, sizes: list[int]) -> list[int]:
    """The sizes and offset that were 0xFFFFFFFF in the header, from the ZIP64 extra field (in their order)."""
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        if tag == 0x0001:
            body, k = extra[at + 4:at + 4 + length], 0
            out = list(sizes)
            for i, value in enumerate(out):
                if value == 0xFFFFFFFF and k + 8 <= len(body):
                    out[i] = struct.unpack_from("<Q", body, k)[0]
                    k += 8
            return out
        at += 4 + length
    return sizes


def members(directory: bytes) -> list[Member]:
    """Every member the central directory names."""
    out, at = [], 0
    while at + CENTRAL.size <= len(directory):
        fields = CENTRAL.unpack_from(directory, at)
        if fields[0] != CENTRAL_SIGNATURE:
            break
        method, compressed, size = fields[4], fields[8], fields[9]
        name_len, extra_len, comment_len, offset = fields[10], fields[11], fields[12], fields[16]
        name = directory[at + CENTRAL.size:at + CENTRAL.size + name_len].decode("utf-8", "replace")
        extra = directory[at + CENTRAL.size + name_len:at + CENTRAL.size + name_len + extra_len]
        size, compressed, offset = _zip64_extra(extra, [size, compressed, offset])
        out.append(Member(name, method, compressed, size, offset))
        at += CENTRAL.size + name_len + extra_len + comment_len
    if not out:
        raise ZipReadError("the central directory names no member")
    return out


def inflate(member: Member, data: bytes) -> bytes:
    """The member's own bytes from its compressed ones (stored or deflated, the two a wheel uses)."""
    if member.method == STORED:
        return data[:member.size]
    if member.method == DEFLATED:
        return zlib.decompressobj(-zlib.MAX_WBITS).decompress(data, member.size)
    raise ZipReadError(f"{member.name}: compression method {member.method} (only stored and deflated are read)")


def read_member(read: Reader, size: int, choose: Callable[[str], bool]) -> tuple[str, bytes]:
    """(name, bytes) of the first member `choose` accepts, in an archive of `size` bytes read through `read`."""
    tail_start = max(0, size - TAIL)
    tail = read(tail_start, size - tail_start)
    offset, length = _directory_span(tail, tail_start)
    directory = tail[offset - tail_start:offset - tail_start + length] if offset >= tail_start else read(offset, length)
    wanted = next((m for m in members(directory) if choose(m.name)), None)
    if wanted is None:
        raise ZipReadError("no member of the archive is the one wanted")
    if wanted.size > LARGEST_MEMBER:
        raise ZipReadError(f"{wanted.name}: {wanted.size} bytes; a metadata file is kilobytes")
    head = read(wanted.offset, LOCAL.size)
    fields = LOCAL.unpack(head[:LOCAL.size]) if len(head) >= LOCAL.size else None
    if fields is None or fields[0] != LOCAL_SIGNATURE:
        raise ZipReadError(f"{wanted.name}: no local header at offset {wanted.offset}")
    start = wanted.offset + LOCAL.size + fields[9] + fields[10]
    return wanted.name, inflate(wanted, read(start, wanted.compressed))
