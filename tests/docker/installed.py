"""refenv as a team installs it: a wheel built from this tree, installed into a fresh venv outside the checkout.

The wheel is built from a copy of the tree (what `git status` would show, without the venv, results and build
outputs), so building it leaves nothing in the checkout; pip fetches its dependencies as a user's would.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = shutil.ignore_patterns(".git", ".venv", "results", "build", "dist", "*.egg-info", "__pycache__",
                                  ".ruff_cache", ".mypy_cache", ".pytest_cache", "*.pyc")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def refenv(self) -> Path:
        return self.venv / "bin" / "refenv"

    @property
    def site_packages(self) -> Path:
        found = sorted(self.venv.glob("lib/python3*/site-packages"))
        assert found, f"no site-packages in {self.venv}"
        return found[0]


def build_wheel(out: Path) -> Path:
    """`pip wheel` of a copy of the tree; the wheel's path."""
    tree = out / "tree"
    shutil.copytree(ROOT, tree, ignore=LEFT_OUT, symlinks=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(out / "wheel"), str(tree)], check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = (out / "wheel").glob("refenv-*.whl")
    return wheel


def install(wheel: Path, where: Path) -> Installed:
    """A fresh venv with the wheel and its dependencies."""
    venv.EnvBuilder(with_pip=True).create(where)
    done = subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           str(wheel)], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return Installed(wheel, where)


def tree_state() -> str:
    """What `git status` says of the checkout (tracked changes and untracked files, ignored ones left out)."""
    done = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
