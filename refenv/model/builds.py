"""How an environment's image came to be in a run: built, found cached, or failed, with its log.

The engine seam returns one per environment (refenv/engines/seam.py `CellEngine.ensure_image`); the
planners read it, and the run document records it (refenv/model/rundoc.py `BuildRecord`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BUILT = "BUILT"      # built in this run
CACHED = "CACHED"    # found: its content hash was built before (or a given image is present)
FAILED = "FAILED"    # could not be built; its cells are BUILD_FAILED
BUILD_STATUSES = (BUILT, CACHED, FAILED)


@dataclass(frozen=True)
class EnvBuild:
    """One environment's image in this run: its tag and content hash, or why there is none."""

    environment: str
    status: str                 # one of BUILD_STATUSES
    tag: str | None
    content_hash: str | None
    wall_s: float
    log: Path | None
    error: str | None = None
    log_tail: str | None = None
    lock_sha256: str | None = None  # the digest of the lock its wheels were installed from

    @property
    def image(self) -> str | None:
        """The tag to run, or None when the build failed."""
        return None if self.status == FAILED else self.tag
