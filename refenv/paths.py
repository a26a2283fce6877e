"""Where refenv keeps what it makes: caches under ~/.cache/refenv, results beside the matrix."""

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
    return cache_root() / "wheelhouse"


def build_logs() -> Path:
    return cache_root() / "build-logs"


def cell_cache() -> Path:
    return cache_root() / "cells"


def project_root() -> Path:
    return Path(__file__).resolve().parent.parent


def images_dir() -> Path:
    return project_root() / "images"
