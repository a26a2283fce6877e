"""`invoke zipapp`: the harness as one file, `dist/refenv-diagnose.pyz`, that any Python 3.8+ runs.

Built with the standard library's `zipapp` from a staged copy of harness/ (sources and data, no caches)
whose `__main__.py` is harness/launcher.py, plus harness/data/build.json naming the version and commit the
version line prints. Every staged file gets the commit's time, so one commit gives one archive, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import zipapp
from dataclasses import dataclass
from pathlib import Path

from refenv.errors import RefenvError

NAME = "refenv-diagnose.pyz"
SHEBANG = "/usr/bin/env python3"
# What goes into the archive: the harness's code and its data, nothing a checkout accumulates beside them.
SUFFIXES = (".py", ".json")
ZIP_EPOCH = 315532800  # 1980-01-01: the oldest time a zip entry can carry


class PyzError(RefenvError):
    """The archive could not be built (no harness/ in the tree, an unwritable output)."""


@dataclass(frozen=True)
class Build:
    path: Path
    version: str
    commit: str
    files: int


def revision(root: Path) -> tuple[str, int]:
    """(short commit, '-dirty' when the tree has changes; its commit time); ('no commit', epoch) without git, or
    when `root` is no checkout of its own (an installed harness in site-packages, perhaps inside a team's
    repository, whose commit is not the harness's)."""
    if not (root / ".git").exists():
        return "no commit", ZIP_EPOCH
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("describe", "--always", "--dirty", "--abbrev=12")
    when = git("log", "-1", "--format=%ct")
    stamp = int(when) if when and when.isdigit() else ZIP_EPOCH
    return commit or "no commit", max(stamp, ZIP_EPOCH)


def harness_files(root: Path) -> list[Path]:
    """The harness's sources and data files, relative to `root`, sorted."""
    base = root / "harness"
    if not (base / "__init__.py").is_file():
        raise PyzError(f"{base}: no harness package here (give the folder that holds harness/)")
    return sorted(p.relative_to(root) for p in base.rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
                  and p.name != "build.json")


def harness_version(root: Path) -> str:
    """harness.__version__, read from the source (the archive is built from the tree, not the installed copy)."""
    for line in (root / "harness" / "__init__.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise PyzError(f"{root / 'harness' / '__init__.py'}: no __version__")


def build(root: Path, out: Path) -> Build:
    """Write the archive to `out` (a file path); the Build it made."""
    files = harness_files(root)
    version = harness_version(root)
    commit, stamp = revision(root)
    with tempfile.TemporaryDirectory(prefix="refenv-pyz-") as tmp:
        stage = Path(tmp) / "app"
        for rel in files:
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, stage / rel)
        shutil.copyfile(root / "harness" / "launcher.py", stage / "__main__.py")
        info = {"name": "refenv-diagnose", "version": version, "commit": commit,
                "built": time.strftime("%Y-%m-%d", time.gmtime(stamp))}
        (stage / "harness" / "data" / "build.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        for path in [stage, *stage.rglob("*")]:
            os.utime(path, (stamp, stamp))
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            zipapp.create_archive(stage, out, interpreter=SHEBANG, compressed=True)
        except OSError as exc:
            raise PyzError(f"cannot write {out}: {exc.strerror or exc}") from None
    return Build(out, version, commit, len(files) + 2)
