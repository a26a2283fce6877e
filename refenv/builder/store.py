"""What the builders need from an engine: find, pull, import, build and commit images (a narrow protocol).

The builders are typed against this, not against an engine: the Docker engine's SDK wrapper
(refenv/engines/docker/sdk.py) satisfies it, and so would any engine that can hold images.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Protocol


class ImageStore(Protocol):
    """An engine's image side, as the base image, the environment images and the given images use it."""

    def image_id(self, ref: str) -> str | None:
        """The id of an image the engine holds, or None."""
        ...

    def image_labels(self, ref: str) -> dict[str, str] | None:
        """An image's labels, or None when the engine does not hold it."""
        ...

    def pull(self, ref: str, auth: dict[str, str] | None = None) -> str:
        """Pull an image from its registry; its id."""
        ...

    def import_rootfs(self, tar_path: Path, tag: str, changes: list[str]) -> str:
        """Import a root filesystem tarball as `tag`; its id."""
        ...

    def build(self, context: IO[bytes], tag: str, log: Callable[[str], None],
              labels: dict[str, str] | None = None, timeout: float = 1800,
              build_args: dict[str, str] | None = None, dockerfile: str | None = None, network: str | None = "none",
              target: str | None = None, platform: str | None = None) -> str:
        """Build `tag` from a tar context (its Dockerfile at `dockerfile`, default `Dockerfile`), with `build_args`,
        on `network` (None: the engine's default), each log line to `log`; its id (BuildError when it fails)."""
        ...

    def save(self, ref: str) -> Iterator[bytes]:
        """An image as a `docker save` archive, in chunks."""
        ...

    def load(self, chunks: Iterator[bytes]) -> list[str]:
        """Load a `docker save` archive; the references it named."""
        ...

    def tag(self, image: str, ref: str) -> None:
        """Give an image another reference."""
        ...

    def untag(self, ref: str) -> None:
        """Remove one reference (the image stays while another names it)."""
        ...

    def commit_run(self, image: str, command: list[str], tag: str, changes: list[str], log: Callable[[str], None],
                   binds: list[tuple[str, str]], env: dict[str, str], labels: dict[str, str],
                   timeout: float = 1800) -> str:
        """Run `command` in a container of `image` with no network and commit it as `tag`; its id."""
        ...
