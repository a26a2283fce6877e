"""What this machine can fetch: is PyTorch's index reachable, which torch wheels lie on disk (thin I/O)."""

from __future__ import annotations

import concurrent.futures
import logging
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

from harness import compat
from refenv import paths
from refenv.builder import baseimage
from refenv.reproduce.builds import Offer

LOG = logging.getLogger(__name__)
# torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl, torch-2.10.0-3-cp311-...: PEP 427 names.
_TORCH_WHEEL_RE = re.compile(r"^torch-(?P<version>\d+\.\d+\.\d+)(?:\+(?P<label>[a-z0-9]+))?(?:-\d[^-]*)?"
                             r"-cp(?P<py>\d)(?P<minor>\d+)-[^-]+-(?P<plat>[^-]+)\.whl$")


def index_reachable(timeout: float = 3.0) -> bool:
    """Whether PyTorch's index host resolves (here its DNS fails; elsewhere it answers)."""
    host = urlparse(compat.index_url("cpu")).hostname or ""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return bool(pool.submit(socket.getaddrinfo, host, 443).result(timeout=timeout))
    except (OSError, concurrent.futures.TimeoutError) as exc:
        LOG.info("%s is not reachable: %s", host, exc)
        return False
    finally:
        pool.shutdown(wait=False)


def find_links() -> list[Path]:
    """The folders pip's configuration and PIP_FIND_LINKS name as find-links (pip reads the same)."""
    values = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.endswith("find-links"):
            values.extend(value.strip().strip("'\"").split())
    folders = [Path(v.removeprefix("file://")) for v in values if not v.startswith(("http://", "https://"))]
    return [f for f in dict.fromkeys(folders) if f.is_dir()]


def local_builds(folders: Iterable[Path]) -> frozenset[tuple[str, str, str]]:
    """(release, variant, python) of the Linux x86_64 torch wheels in these folders."""
    found = set()
    for folder in folders:
        for file in folder.glob("torch-*.whl"):
            m = _TORCH_WHEEL_RE.match(file.name)
            if not m or "x86_64" not in m.group("plat") or "linux" not in m.group("plat"):
                continue
            version, label = m.group("version"), m.group("label")
            release = compat.torch_release(version)
            variant = label or (compat.cuda_variant(release.default_cuda) if release else None)
            if variant:
                found.add((version, variant, f"{m.group('py')}.{m.group('minor')}"))
    return frozenset(found)


def probe_offer() -> Offer:
    """The offer of this machine, now."""
    # Only what pip itself finds (its find-links) can be locked; refenv's wheelhouse tells which releases
    # are already downloaded, so a substitute prefers them.
    cached = local_builds([paths.wheelhouse()] if paths.wheelhouse().is_dir() else [])
    return Offer(index_reachable(), local_builds(find_links()),
                 tuple(sorted(set(baseimage.SUITE_PYTHON.values()), key=compat.parse_version)), cached)
