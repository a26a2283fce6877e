"""Build the simulated driver (libcuda.so.1, libnvidia-ml.so.1, nvidia-smi) from refenv/images/simdriver, cached
by hash.

It is compiled in a build root of the oldest Debian suite refenv bootstraps (`refenv.builder.buildroot`: that
suite's compiler and glibc), so the files need no newer glibc symbol version than every base has, as a real
driver's libraries load in any container the toolkit mounts them into. Where no build root can be made (not
root, no debootstrap) it falls back to this machine's compiler and says so; either way the newest
`GLIBC_x.y` the files need is read from them (`refenv.builder.elfneeds`) and recorded, and a cell whose image
has an older glibc is refused before it runs (`refenv.run.glibc`).

The cache key is the SHA-256 of the sources, the flags, the toolchain's identity and the machine, so an
unchanged tree is never rebuilt. A build goes to a temporary directory beside its final place and is
renamed into it, so concurrent builds (threads or processes) never see a half-written driver.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from refenv import paths
from refenv.builder import buildroot, elfneeds
from refenv.builder.buildroot import BuildRoot, BuildRootUnavailable
from refenv.builder.driverfiles import SimDriver
from refenv.errors import RefenvError
from refenv.model import suites
from refenv.model.matrix import Bootstrap

LOGGER = logging.getLogger(__name__)

SOURCE_DIR = paths.images_dir() / "simdriver"

# -z nodelete keeps the library (and the stage it recorded) loaded after the CUDA runtime dlcloses it
# on a failed initialisation, so refenv's harness can still read it in the same process.
COMMON_FLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden")
LIBRARY_FLAGS = ("-fPIC", "-shared", "-Wl,-z,nodelete")
LIBCUDA = "libcuda.so.1"
LIBNVML = "libnvidia-ml.so.1"
SMI = "nvidia-smi"

# (output, sources, extra flags, libraries)
TARGETS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (LIBCUDA, ("libcuda.c", "sim_config.c"), (*LIBRARY_FLAGS, f"-Wl,-soname,{LIBCUDA}"), ("-lpthread",)),
    (LIBNVML, ("libnvidia-ml.c", "sim_config.c"), (*LIBRARY_FLAGS, f"-Wl,-soname,{LIBNVML}"), ("-lpthread",)),
    (SMI, ("nvidia-smi.c",), (), ("-ldl",)),
)

COMPILERS = ("cc", "gcc", "clang")


class SimDriverBuildError(RefenvError):
    """The simulated driver could not be built; the message says why and what to do (an expected failure,
    reported in its own words, not an internal error)."""


def write_pci_view(files: dict[str, str], links: dict[str, str], folder: Path) -> Path:
    """Write a PCI tree (refenv.model.profiles.pci_tree: files and driver links, relative paths) under `folder`."""
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for rel, target in links.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.symlink_to(target)
    return folder


def default_cache_root() -> Path:
    """`simdriver/` under refenv's cache root (REFENV_CACHE, XDG_CACHE_HOME or ~/.cache; see refenv.paths)."""
    return paths.cache_root() / "simdriver"


def find_compiler() -> str:
    """The C compiler to use: $CC, else the first of cc, gcc, clang on PATH."""
    wanted = os.environ.get("CC")
    for name in ((wanted,) if wanted else COMPILERS):
        path = shutil.which(name)
        if path:
            return path
    looked = f"$CC={wanted}" if wanted else ", ".join(COMPILERS)
    raise SimDriverBuildError(
        f"no C compiler found to build the simulated driver (looked for {looked}). Install one, e.g. "
        "`apt-get install gcc libc6-dev` (Debian/Ubuntu) or `dnf install gcc` (Fedora/RHEL), or set CC."
    )


def _run(argv: list[str], cwd: Path | None = None) -> tuple[int, str]:
    """Run a command; (exit code, stderr + stdout). Never raises for a failing command."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return done.returncode, done.stderr + done.stdout


def compiler_identity(compiler: str) -> str:
    """The first line of `compiler --version`, part of the cache key."""
    rc, out = _run([compiler, "--version"])
    if rc != 0:
        raise SimDriverBuildError(f"{compiler} --version failed: {out.strip()[:300]}")
    return out.strip().splitlines()[0] if out.strip() else compiler


@dataclass(frozen=True)
class Toolchain:
    """Where the driver is compiled: the oldest suite's build root, or this machine's compiler."""

    compiler: str              # "cc" inside the build root, else the host compiler's path
    identity: str              # what the cache key holds of it
    described: str             # for people: "Debian bullseye (glibc 2.31)"
    root: BuildRoot | None = None

    def compile(self, commands: list[list[str]], sources: list[Path]) -> dict[str, bytes]:
        """The files the commands made from `sources`, by name; SimDriverBuildError when one fails."""
        if self.root is not None:
            try:
                return self.root.compile(commands, sources)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                raise SimDriverBuildError(f"building the simulated driver failed: {exc}") from None
        with tempfile.TemporaryDirectory(prefix="refenv-simdriver-") as tmp:
            work = Path(tmp)
            for source in sources:
                shutil.copy2(source, work / source.name)
            for argv in commands:
                rc, out = _run(argv, cwd=work)
                if rc != 0:
                    raise SimDriverBuildError(f"building {argv[argv.index('-o') + 1]} failed ({' '.join(argv)}):\n"
                                              f"{out.strip()}")
            names = {s.name for s in sources}
            return {f.name: f.read_bytes() for f in work.iterdir() if f.is_file() and f.name not in names}


def host_toolchain() -> Toolchain:
    """This machine's C compiler ($CC, cc, gcc or clang): the files then need this machine's glibc."""
    compiler = find_compiler()
    identity = compiler_identity(compiler)
    return Toolchain(compiler, identity, f"this machine ({identity})")


def oldest_toolchain(mirror: str = Bootstrap.mirror) -> Toolchain:
    """The build root of the oldest suite when this machine can make one, else the host compiler (logged)."""
    try:
        root = buildroot.ensure(mirror, LOGGER.info)
    except BuildRootUnavailable as exc:
        LOGGER.warning("compiling the simulated driver with this machine's compiler, so it needs this machine's "
                       "glibc: no Debian build root here (%s)", exc)
        return host_toolchain()
    return Toolchain("cc", buildroot_identity(mirror), f"Debian {root.suite} (glibc {root.glibc})", root)


def buildroot_identity(mirror: str = Bootstrap.mirror) -> str:
    """What the cache key holds of the build root: its suite and recipe (known before it is made)."""
    suite = suites.oldest_suite()
    return f"buildroot {suite} {buildroot.recipe_digest(Bootstrap(suite, mirror, buildroot.PACKAGES))}"


def source_files(source_dir: Path = SOURCE_DIR) -> tuple[Path, ...]:
    """The C sources and headers the build reads, sorted."""
    files = tuple(sorted(p for p in source_dir.iterdir() if p.suffix in (".c", ".h", ".inc")))
    if not files:
        raise SimDriverBuildError(f"no simulated-driver sources in {source_dir}")
    return files


def digest(files: tuple[Path, ...], toolchain_id: str, machine: str) -> str:
    """SHA-256 over the sources' names and contents, the flags, the toolchain's identity and the machine."""
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(json.dumps([COMMON_FLAGS, TARGETS, toolchain_id, machine]).encode())
    return h.hexdigest()


def _complete(root: Path) -> bool:
    return all((root / name).is_file() for name, *_ in TARGETS) and (root / "BUILD.json").is_file()


def _driver(root: Path, key: str) -> SimDriver:
    try:
        record = json.loads((root / "BUILD.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    return SimDriver(root, root / LIBCUDA, root / LIBNVML, root / SMI, key, record.get("glibc"),
                     str(record.get("built_in") or ""))


def commands(compiler: str) -> list[list[str]]:
    """The compiler command of each file, run in a folder that holds the sources."""
    return [[compiler, *COMMON_FLAGS, *flags, "-o", output, *sources, *libs]
            for output, sources, flags, libs in TARGETS]


def build(cache_root: Path | None = None, source_dir: Path = SOURCE_DIR, toolchain: Toolchain | None = None,
          mirror: str = Bootstrap.mirror) -> SimDriver:
    """Build the simulated driver into `<cache_root>/<sha256>/`, or return the cached build.

    `toolchain` defaults to the oldest suite's build root (made once, from `mirror`), else this machine's compiler.
    """
    files = source_files(source_dir)
    root_dir = cache_root or default_cache_root()
    if toolchain is None:
        # A driver already built in the build root needs no build root: look before making one.
        key = digest(files, buildroot_identity(mirror), platform.machine())
        if _complete(root_dir / key):
            return _driver(root_dir / key, key)
    chosen = toolchain or oldest_toolchain(mirror)
    key = digest(files, chosen.identity, platform.machine())
    final = root_dir / key
    if _complete(final):
        return _driver(final, key)

    root_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root_dir))
    work.chmod(0o755)  # mkdtemp makes it private; containers running as any user read these files
    try:
        # Compile a snapshot of the sources, so the tree hashed is the tree built.
        made = chosen.compile(commands(chosen.compiler), list(files))
        for name, *_ in TARGETS:
            if name not in made:
                raise SimDriverBuildError(f"building the simulated driver made no {name}")
            (work / name).write_bytes(made[name])
            (work / name).chmod(0o755)
        try:
            glibc = elfneeds.newest_glibc([work / name for name, *_ in TARGETS])
        except elfneeds.ElfError as exc:
            raise SimDriverBuildError(f"cannot read what the simulated driver needs: {exc}") from None
        record = {"digest": key, "compiler": chosen.compiler, "compiler_id": chosen.identity,
                  "built_in": chosen.described, "glibc": glibc, "flags": list(COMMON_FLAGS),
                  "machine": platform.machine(), "sources": [p.name for p in files]}
        (work / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        try:
            work.rename(final)
        except OSError:
            # Another builder got there first (its result is the same build), or a broken leftover
            # sits there: replace the leftover once.
            if not _complete(final):
                shutil.rmtree(final, ignore_errors=True)
                work.rename(final)
                return _driver(final, key)
        else:
            LOGGER.info("built the simulated driver in %s (%s; needs glibc %s)", final, chosen.described, glibc)
            return _driver(final, key)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return _driver(final, key)
