"""A build context as an in-memory tar, the same bytes for the same inputs (no owners, times or caches)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import IO


def tar_context(files: dict[str, bytes | Path]) -> IO[bytes]:
    """A build context as an in-memory tar: name -> bytes or a file/folder on disk."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in sorted(files.items()):
            if isinstance(content, Path):
                tar.add(content, arcname=name, filter=_normalise)
            else:
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(content), 0o644, 0
                tar.addfile(info, io.BytesIO(content))
    buf.seek(0)
    return buf


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Same bytes in, same context out: no owners, no times, no caches."""
    if "__pycache__" in info.name or info.name.endswith(".pyc"):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info
