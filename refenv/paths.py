"""Where refenv keeps what it makes (caches under ~/.cache/refenv) and finds what it ships (package data).

Two of its caches may live apart from the rest, shared by several cache roots: the wheelhouse
(REFENV_WHEELHOUSE: every wheel is checked against its lock's sha256 before use) and the simulated driver's
build root (REFENV_BUILDROOT: a Debian tree named by its recipe's digest). Both are read through and filled by
what needs them; everything else under the cache root (cells, image facts, run records, linker caches) is the
root's own, so a run given an empty REFENV_CACHE depends on nothing an earlier run left (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """REFENV_CACHE, else $XDG_CACHE_HOME/refenv, else ~/.cache/refenv."""
    if os.environ.get("REFENV_CACHE"):
        return Path(os.environ["REFENV_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "refenv"


def wheelhouse() -> Path:
    """REFENV_WHEELHOUSE, else `wheelhouse/` under the cache root."""
    if os.environ.get("REFENV_WHEELHOUSE"):
        return Path(os.environ["REFENV_WHEELHOUSE"])
    return cache_root() / "wheelhouse"


def build_root() -> Path:
    """Where the simulated driver's Debian build roots are made: REFENV_BUILDROOT, else `buildroot/` under the
    cache root."""
    if os.environ.get("REFENV_BUILDROOT"):
        return Path(os.environ["REFENV_BUILDROOT"])
    return cache_root() / "buildroot"


def build_logs() -> Path:
    return cache_root() / "build-logs"


def cell_cache() -> Path:
    return cache_root() / "cells"


def package_dir() -> Path:
    """refenv's own folder: in a checkout, or in site-packages once installed (the package data lives there)."""
    return Path(__file__).resolve().parent


def images_dir() -> Path:
    """The Dockerfile template, the offline base recipe and the simulated driver's C sources (package data)."""
    return package_dir() / "images"


def web_dir() -> Path:
    """The paste page's sources (package data)."""
    return package_dir() / "web"


def harness_dir() -> Path:
    """The harness package that cells mount and images carry: beside refenv, checkout or site-packages."""
    import harness

    return Path(harness.__file__).resolve().parent

