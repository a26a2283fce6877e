"""A path matrix.yaml names stays inside its project: the folder that holds matrix.yaml.

A team environment's `dockerfile:` and `context:` are sent to the engine whole: a context of `/` would send
the whole filesystem, and a `COPY` from a context outside the project could bake host files into an image
that `publish` pushes. So a path is resolved first (symbolic links followed, `..` applied: what the engine
would read) and then checked: inside the folder of matrix.yaml, unless `allow_outside: true` is written
beside it. The filesystem's root and the host's own folders (/proc, /sys, /dev, /etc) are never a build
input, allowed outside or not. A loop of links or a name longer than the filesystem takes is refused as such.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from harness.inputs import InputError, shorten

# Linux's limits (linux/limits.h): NAME_MAX bytes in one component, PATH_MAX bytes in a path.
NAME_MAX = 255
PATH_MAX = 4096
# The host's own folders: kernel and device interfaces, and its configuration (passwords, keys).
SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/etc"))
ALLOW = "allow_outside"


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _system(path: Path, root: Path) -> Path | None:
    """The host folder the path is in, unless the project itself lives there."""
    return next((s for s in SYSTEM if _under(path, s) and not _under(root, s)), None)


def _resolved(text: str, root: Path, kind: str) -> Path:
    """The path as the engine would read it; InputError for a loop, an over-long name or a missing path."""
    too_long = next((part for part in text.split("/") if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX),
                    None)
    if too_long is not None:
        raise InputError(f"{shorten(text)}: a name of {len(too_long.encode('utf-8', 'surrogateescape'))} bytes in it "
                         f"({shorten(too_long, 40)}) is longer than the {NAME_MAX} a filesystem allows")
    if len(str(root / text).encode("utf-8", "surrogateescape")) > PATH_MAX:
        raise InputError(f"{shorten(text)}: longer than the {PATH_MAX} bytes a path may have")
    try:
        return Path(os.path.realpath(root / text, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{shorten(text)}: its symbolic links loop (each points on to another, never to "
                             "a file): fix the link") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(f"{shorten(text)}: a name in it, or what a link in it points to, is longer than "
                             "the filesystem allows") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise InputError(f"{shorten(text)} is not a {kind} (looked for {root / text})") from None
        raise InputError(f"{shorten(text)} cannot be read: {exc.strerror}") from None


def inside(text: str, root: Path, folder: bool, allow_outside: bool = False) -> str:
    """The absolute, resolved path of `text` named relative to `root` (the folder of matrix.yaml), a folder or
    a file as asked; InputError saying why not (outside the project, a host folder, a loop, too long, missing)."""
    kind = "folder" if folder else "file"
    if not text.strip() or not text.isprintable():
        raise InputError(f"expected a {kind} path, got {shorten(text)}")
    root = Path(os.path.realpath(root))
    path = _resolved(text, root, kind)
    if path == Path("/"):
        raise InputError(f"{shorten(text)} resolves to the filesystem's root /: never a build {kind}")
    host = _system(path, root)
    if host is not None:
        raise InputError(f"{shorten(text)} resolves to {shorten(str(path), 80)}, in the host's own {host}: never a "
                         f"build {kind}, {ALLOW} or not")
    if not allow_outside and not _under(path, root):
        raise InputError(f"{shorten(text)} resolves to {shorten(str(path), 80)}, outside the project folder {root} "
                         f"(the folder of matrix.yaml, whose files a build may send and copy); move it inside, or "
                         f"write {ALLOW}: true beside it")
    if not (path.is_dir() if folder else path.is_file()):
        raise InputError(f"{shorten(text)} is not a {kind} (looked for {path})")
    return str(path)
