"""An image's C library against what the simulated driver's libraries need: read once per image, judged here.

A real driver's user-mode libraries are built to load on any distribution its users run, and the container
toolkit mounts them into whatever image a container starts from. refenv's simulated libraries are built in
its oldest base (`refenv.builder.buildroot`), so they need no glibc newer than that one's; an image whose glibc
is older still (or that has none: musl) would make the loader refuse them, and its cells would report that
refusal as if it were the driver's. Such cells are not run, and say why (pure, but for reading one file).
"""

from __future__ import annotations

import re
from pathlib import Path

from refenv.builder.driverfiles import SimDriver
from refenv.model import suites

NONE = "none"  # what the linker-cache container writes when `getconf GNU_LIBC_VERSION` answers nothing
_GETCONF = re.compile(r"^glibc (\d{1,2}\.\d{1,3})(?:\.\d{1,3})?$")


def parse(text: str) -> str | None:
    """`getconf GNU_LIBC_VERSION`'s answer as "2.31", NONE for an image without glibc, None when unreadable."""
    value = text.strip()
    if value == NONE:
        return NONE
    found = _GETCONF.match(value)
    return found.group(1) if found else None


def beside(ldcache: str | None) -> Path | None:
    """Where the glibc of an image is kept: next to its linker cache (refenv.run.pipeline.prepare_ldcache)."""
    return Path(ldcache).with_suffix(".glibc") if ldcache else None


def read_beside(ldcache: str | None) -> str | None:
    """The glibc recorded beside a linker cache (see `parse`), or None when none was recorded."""
    path = beside(ldcache)
    try:
        return parse(path.read_text(encoding="utf-8")[:200]) if path else None
    except OSError:
        return None


def refusal(image_glibc: str | None, driver: SimDriver, image: str) -> str | None:
    """Why a cell of `image` cannot have the simulated driver mounted, or None when it can (or cannot be told)."""
    if image_glibc is None or driver.glibc is None:
        return None
    if image_glibc == NONE:
        return (f"not simulated: {image} has no GNU C library (getconf GNU_LIBC_VERSION answers nothing), and "
                "NVIDIA's driver libraries, as refenv's simulated ones, need glibc; run this image on a real host")
    if suites.glibc_key(image_glibc) >= suites.glibc_key(driver.glibc):
        return None
    return (f"not simulated: {image} has glibc {image_glibc}, and the simulated driver's libraries need glibc "
            f">= {driver.glibc} (their newest symbol version, GLIBC_{driver.glibc}; built in {driver.built_in or '?'})"
            ": the loader would refuse them and the cell would report refenv's driver, not this stack; run this "
            "image on a real host, or use a newer base")
