"""A build root of the oldest Debian suite refenv bootstraps, for compiling native code that loads on every base.

Why: a program linked against a glibc binds the newest version of each symbol that glibc offers (on bookworm,
`pthread_once@GLIBC_2.34`, since glibc 2.34 moved libpthread into libc), and the dynamic loader of an older
glibc then refuses it ("version `GLIBC_2.34' not found" on bullseye's 2.31). A binary built against the
oldest glibc it must run with loads on every newer one, since glibc keeps every old symbol version (the rule
the manylinux policies are built on: PEP 600, "build on the oldest distribution you support"). So refenv's
simulated driver is compiled inside `debootstrap` of the oldest suite (`refenv.model.suites.oldest_suite`) with
that suite's own compiler and C library, entered with `chroot` (root only, as debootstrap itself).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from refenv import paths
from refenv.model import suites
from refenv.model.matrix import Bootstrap

LOG = logging.getLogger(__name__)
RECIPE = "base/bootstrap.sh"
PACKAGES = ("gcc", "libc6-dev")
PATH = "/usr/local/bin:/usr/bin:/bin"


class BuildRootUnavailable(RuntimeError):
    """No build root here; the message says why (not root, no debootstrap, the mirror did not answer)."""


# Debian installs debootstrap and chroot in the administrator's folders, which a user's PATH (or a CI step's)
# may leave out although the process runs as root.
ADMIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def _admin_path() -> str:
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return ":".join([path, *(d for d in ADMIN_DIRS if d not in path.split(":"))])


def admin_tool(name: str) -> str | None:
    """Where an administrator's command is: on PATH, else in the sbin folders."""
    return shutil.which(name, path=_admin_path())


@dataclass(frozen=True)
class BuildRoot:
    """A bootstrapped root filesystem with a C compiler; `glibc` is the suite's."""

    path: Path
    suite: str
    glibc: str
    digest: str

    def compile(self, commands: list[list[str]], sources: list[Path], timeout: float = 300.0) -> dict[str, bytes]:
        """Run each compiler command inside the root, in a folder holding `sources`; the files it made, by name."""
        work = Path(tempfile.mkdtemp(prefix="refenv-build-", dir=self.path / "tmp"))
        try:
            for source in sources:
                shutil.copy2(source, work / source.name)
            inside = "/" + work.relative_to(self.path).as_posix()
            for argv in commands:
                script = f"cd {shlex.quote(inside)} && " + shlex.join(argv)
                done = subprocess.run([admin_tool("chroot") or "chroot", str(self.path), "/usr/bin/env", "-i",
                                       f"PATH={PATH}", "LANG=C",
                                       "/bin/sh", "-c", script], capture_output=True, text=True, timeout=timeout,
                                      check=False)
                if done.returncode != 0:
                    raise RuntimeError(f"{shlex.join(argv)} (in Debian {self.suite}) failed: "
                                       f"{(done.stderr + done.stdout).strip()[-2000:]}")
            names = {s.name for s in sources}
            return {f.name: f.read_bytes() for f in work.iterdir() if f.is_file() and f.name not in names}
        finally:
            shutil.rmtree(work, ignore_errors=True)


def recipe_digest(boot: Bootstrap) -> str:
    script = (paths.images_dir() / RECIPE).read_bytes()
    data = json.dumps({"suite": boot.suite, "mirror": boot.mirror, "packages": list(boot.packages)}).encode()
    return hashlib.sha256(script + b"\0" + data).hexdigest()


def default_root() -> Path:
    return paths.build_root()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One bootstrap at a time on this machine: the others wait for it and then find its result."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure(mirror: str = Bootstrap.mirror, log: Callable[[str], None] = LOG.info,
           folder: Path | None = None) -> BuildRoot:
    """The oldest suite's build root, bootstrapped once per machine (about a minute); BuildRootUnavailable when
    this machine cannot make one."""
    suite = suites.oldest_suite()
    boot = Bootstrap(suite, mirror, PACKAGES)
    digest = recipe_digest(boot)
    root_dir = folder or default_root()
    final = root_dir / f"{suite}-{digest[:16]}"
    made = BuildRoot(final, suite, suites.SUITE_GLIBC[suite], digest)
    if (final / "usr" / "bin" / "cc").exists():
        if os.geteuid() != 0 or admin_tool("chroot") is None:
            raise BuildRootUnavailable(f"entering the build root {final} needs root and chroot")
        return made
    if os.geteuid() != 0:
        raise BuildRootUnavailable("making a build root needs root (debootstrap and chroot)")
    if admin_tool("debootstrap") is None or admin_tool("chroot") is None:
        raise BuildRootUnavailable("debootstrap is not installed (apt-get install debootstrap; ./go installs it)")
    with _locked(root_dir):
        if (final / "usr" / "bin" / "cc").exists():
            return made
        work = Path(tempfile.mkdtemp(prefix=f".{suite}-", dir=root_dir))
        try:
            log(f"bootstrapping a Debian {suite} build root with {', '.join(PACKAGES)} (debootstrap, about a minute)")
            proc = subprocess.run(["sh", str(paths.images_dir() / RECIPE), suite, mirror, ",".join(PACKAGES),
                                   str(work / "root")], capture_output=True, text=True, check=False,
                                  env={**os.environ, "PATH": _admin_path()})
            if proc.returncode != 0:
                tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
                raise BuildRootUnavailable(f"debootstrap of {suite} from {mirror} failed (exit {proc.returncode}): "
                                           f"{tail}")
            (work / "root").rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return made
