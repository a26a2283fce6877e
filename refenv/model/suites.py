"""The Debian suites refenv bootstraps its base images from: the Python and the glibc each ships (data).

Sources: packages.debian.org, the `python3` package (bullseye 3.9.2, bookworm 3.11.2, trixie 3.13.5) and the
`libc6` package (bullseye 2.31-13, bookworm 2.36-9, trixie 2.41-12) of each suite.
"""

from __future__ import annotations

SUITE_PYTHON = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}
SUITE_GLIBC = {"bullseye": "2.31", "bookworm": "2.36", "trixie": "2.41"}
# What a base given as `base.image` (or a suite outside the table) is assumed to have: bookworm's, the
# default base's, so that an unchanged default matrix resolves the wheels it always did.
DEFAULT_GLIBC = SUITE_GLIBC["bookworm"]


def glibc_key(version: str) -> tuple[int, ...]:
    """"2.31" as (2, 31) and "2.2.5" as (2, 2, 5), for comparing; ValueError for anything else."""
    parts = version.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() and len(p) <= 4 for p in parts):
        raise ValueError(f"not a glibc version: {version!r} (expected MAJOR.MINOR, e.g. 2.31)")
    return tuple(int(p) for p in parts)


def oldest_suite() -> str:
    """The suite with the oldest glibc: what refenv builds its native code against, so it loads on every base."""
    return min(SUITE_GLIBC, key=lambda s: glibc_key(SUITE_GLIBC[s]))


def glibc_of(suite: str | None) -> str:
    """The glibc of a suite refenv knows, else DEFAULT_GLIBC."""
    return SUITE_GLIBC.get(suite or "", DEFAULT_GLIBC)
