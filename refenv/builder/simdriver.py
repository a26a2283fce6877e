"""Build the simulated driver (libcuda.so.1, libnvidia-ml.so.1, nvidia-smi) from images/simdriver, cached by hash.

The cache key is the SHA-256 of the sources, the flags, the compiler's identity and the machine, so an
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

LOGGER = logging.getLogger(__name__)

SOURCE_DIR = Path(__file__).resolve().parents[2] / "images" / "simdriver"

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


class SimDriverBuildError(RuntimeError):
    """The simulated driver could not be built; the message says why and what to do."""


@dataclass(frozen=True)
class SimDriver:
    """A built simulated driver: the directory to put on LD_LIBRARY_PATH and the three files in it."""

    root: Path
    libcuda: Path
    libnvidia_ml: Path
    nvidia_smi: Path
    digest: str

    def env(self, config: Path | str) -> dict[str, str]:
        """Variables that make a host process load this driver with the configuration at `config`."""
        return {"LD_LIBRARY_PATH": str(self.root), "REFENV_SIMDRIVER_CONF": str(config)}


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


def _run(argv: list[str]) -> tuple[int, str]:
    """Run a command; (exit code, stderr + stdout). Never raises for a failing command."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return done.returncode, done.stderr + done.stdout


def compiler_identity(compiler: str) -> str:
    """The first line of `compiler --version`, part of the cache key."""
    rc, out = _run([compiler, "--version"])
    if rc != 0:
        raise SimDriverBuildError(f"{compiler} --version failed: {out.strip()[:300]}")
    return out.strip().splitlines()[0] if out.strip() else compiler


def source_files(source_dir: Path = SOURCE_DIR) -> tuple[Path, ...]:
    """The C sources and headers the build reads, sorted."""
    files = tuple(sorted(p for p in source_dir.iterdir() if p.suffix in (".c", ".h", ".inc")))
    if not files:
        raise SimDriverBuildError(f"no simulated-driver sources in {source_dir}")
    return files


def digest(files: tuple[Path, ...], compiler_id: str, machine: str) -> str:
    """SHA-256 over the sources' names and contents, the flags, the compiler identity and the machine."""
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(json.dumps([COMMON_FLAGS, TARGETS, compiler_id, machine]).encode())
    return h.hexdigest()


def _complete(root: Path) -> bool:
    return all((root / name).is_file() for name, *_ in TARGETS) and (root / "BUILD.json").is_file()


def _driver(root: Path, key: str) -> SimDriver:
    return SimDriver(root, root / LIBCUDA, root / LIBNVML, root / SMI, key)


def build(cache_root: Path | None = None, source_dir: Path = SOURCE_DIR) -> SimDriver:
    """Build the simulated driver into `<cache_root>/<sha256>/`, or return the cached build."""
    compiler = find_compiler()
    compiler_id = compiler_identity(compiler)
    files = source_files(source_dir)
    key = digest(files, compiler_id, platform.machine())
    root_dir = cache_root or default_cache_root()
    final = root_dir / key
    if _complete(final):
        return _driver(final, key)

    root_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root_dir))
    work.chmod(0o755)  # mkdtemp makes it private; containers running as any user read these files
    try:
        # Compile a snapshot of the sources, so the tree hashed is the tree built.
        src = work / "src"
        src.mkdir()
        for path in files:
            shutil.copy2(path, src / path.name)
        for output, sources, flags, libs in TARGETS:
            argv = [compiler, *COMMON_FLAGS, *flags, "-o", str(work / output), *(str(src / s) for s in sources), *libs]
            rc, out = _run(argv)
            if rc != 0:
                raise SimDriverBuildError(f"building {output} failed ({' '.join(argv)}):\n{out.strip()}")
        record = {"digest": key, "compiler": compiler, "compiler_id": compiler_id, "flags": list(COMMON_FLAGS),
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
            LOGGER.info("built the simulated driver in %s", final)
            return _driver(final, key)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return _driver(final, key)
