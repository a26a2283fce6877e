"""Wheels resolved on the host, pinned with sha256 in a lock file per environment, checked before use.

Containers cannot reach the package index here, so every wheel is fetched on the host (`pip download`,
with the host's pip configuration), recorded in `locks/<environment>.json` with its sha256, and installed
in the image offline with `--no-index --require-hashes`. A wheel whose bytes changed since it was locked
stops the build with a message that names it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from harness import compat
from harness.inputs import InputError
from refenv.builder import crossresolve
from refenv.errors import LockError
from refenv.model import accepts, suites
from refenv.model.matrix import Environment

LOG = logging.getLogger(__name__)
LOCK_SCHEMA = "refenv.lock"
# Wheel file names: {name}-{version}(-{build})?-{python}-{abi}-{platform}.whl (PEP 427).
WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")
# The legacy manylinux names (PEP 599, 571, 513): glibc 2.17, 2.12 and 2.5, older than any base.
LEGACY_PLATFORMS = ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def platforms(glibc: str) -> list[str]:
    """The manylinux tags whose wheels run on a base with this glibc: manylinux_2_N for every N up to its
    minor version (PEP 600: a wheel tagged 2_N needs glibc >= 2.N), newest first, then the legacy names."""
    major, minor = suites.glibc_key(glibc)
    return [f"manylinux_{major}_{n}_x86_64" for n in range(minor, 16, -1)] + LEGACY_PLATFORMS


def glibc_of(env: Environment) -> str:
    """The glibc of the environment's base: its Debian suite's (a base named by `base.image` is assumed to be
    the default's, bookworm's)."""
    return suites.DEFAULT_GLIBC if env.base.image else suites.glibc_of(env.base.bootstrap.suite)


@dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    filename: str
    sha256: str
    size: int


class LockInputs(TypedDict):
    """Everything that decides a resolution: a lock made from other inputs is stale."""

    requirements: list[str]
    python: str
    platform: str
    extra_index_url: str | None


@dataclass(frozen=True)
class Lock:
    environment: str
    inputs: LockInputs
    inputs_sha256: str
    wheels: tuple[Wheel, ...]

    @property
    def sha256(self) -> str:
        """The lock's own digest: what a content-addressed image tag depends on."""
        return hashlib.sha256(dumps(self).encode()).hexdigest()

    def wheel(self, name: str) -> Wheel | None:
        key = canonical(name)
        return next((w for w in self.wheels if canonical(w.name) == key), None)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def torch_requirement(env: Environment) -> str:
    """`torch==2.14.1` for PyPI's default build, `torch==2.13.0+cpu` for the others (PyTorch's index)."""
    release = compat.torch_release(env.torch)
    if release is not None and compat.cuda_variant(release.default_cuda) == env.variant:
        return f"torch=={env.torch}"
    return f"torch=={env.torch}+{env.variant}"


def extra_index(env: Environment) -> str | None:
    if env.index_url:
        return env.index_url
    return None if torch_requirement(env) == f"torch=={env.torch}" else compat.index_url(env.variant)


def inputs_of(env: Environment) -> LockInputs:
    """Everything that decides the resolution; a lock made from other inputs is stale."""
    return {"requirements": [torch_requirement(env), *env.requirements[1:]], "python": env.python,
            "platform": f"manylinux x86_64 (glibc {glibc_of(env)})", "extra_index_url": extra_index(env)}


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def dumps(lock: Lock) -> str:
    return json.dumps({"schema": LOCK_SCHEMA, "version": 1, "environment": lock.environment, "inputs": lock.inputs,
                       "inputs_sha256": lock.inputs_sha256, "wheels": [asdict(w) for w in lock.wheels]},
                      indent=2) + "\n"


def read_lock(path: Path) -> Lock | None:
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        wheels = tuple(Wheel(**w) for w in raw["wheels"])
        if raw.get("schema") != LOCK_SCHEMA:
            raise ValueError("not a refenv lock")
        return Lock(raw["environment"], raw["inputs"], raw["inputs_sha256"], wheels)
    except (ValueError, KeyError, TypeError) as exc:
        raise LockError(f"{path}: unreadable lock file ({exc})", "delete it and run `invoke lock` again") from None


def is_current(lock: Lock | None, env: Environment) -> bool:
    return lock is not None and lock.inputs_sha256 == digest(inputs_of(env))


def requirements_text(lock: Lock) -> str:
    """The lock as a requirements file that pip and uv install with --require-hashes."""
    lines = [f"# refenv lock of {lock.environment} ({lock.sha256[:16]})"]
    lines += [f"{w.name}=={w.version} --hash=sha256:{w.sha256}" for w in lock.wheels]
    return "\n".join(lines) + "\n"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class HashCache:
    """sha256 of wheelhouse files, remembered by (size, mtime) so 4 GB is not re-read on every run."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / ".sha256.json"
        try:
            self.data: dict[str, list[Any]] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def sha256(self, file: Path) -> str:
        st = file.stat()
        known = self.data.get(file.name)
        if known and known[0] == st.st_size and known[1] == st.st_mtime_ns:
            return str(known[2])
        value = sha256_file(file)
        self.data[file.name] = [st.st_size, st.st_mtime_ns, value]
        return value

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)


def pip_download(args: list[str], dest: Path, glibc: str, log: Any = None) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--retries", "1",
           "--timeout", "30", "--dest", str(dest), "--only-binary=:all:", "--implementation", "cp",
           *[a for p in platforms(glibc) for a in ("--platform", p)], *args]
    LOG.info("running %s", " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if log is not None:
        log(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        errors = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.startswith("ERROR")]
        raise LockError(f"pip download failed: {' | '.join(errors[-3:]) or proc.stderr[-500:]}",
                        "check the torch version and variant in matrix.yaml, and that the package index is reachable")


def download_args(env: Environment) -> list[str]:
    """`pip download`'s arguments for an environment; every requirement comes after "--", checked first."""
    inputs = inputs_of(env)
    py = env.python.replace(".", "")
    args = ["--python-version", env.python, "--abi", f"cp{py}", "--abi", "abi3", "--abi", "none"]
    try:
        # Checked again here, for environments made in code (reproduce) as well as from matrix.yaml.
        requirements = [accepts.requirement(r, f"{env.name}: requirement") for r in inputs["requirements"]]
        if inputs["extra_index_url"]:
            args.append(f"--extra-index-url={accepts.url(inputs['extra_index_url'], f'{env.name}: index_url')}")
    except InputError as exc:
        raise LockError(str(exc), "a requirement is a package name with optional versions, never a pip option") \
            from None
    # After "--" pip reads every word as a requirement: "-r/etc/passwd" cannot become an option.
    return [*args, "--", *requirements]


def cross_python(python: str) -> bool:
    """Whether `python` is not the interpreter refenv runs on: pip would then judge markers wrongly."""
    return python != f"{sys.version_info[0]}.{sys.version_info[1]}"


def resolve(env: Environment, wheelhouse: Path, log: Any = None) -> Lock:
    """Resolve the environment's requirements on the host and pin what pip chose (for another Python than
    this one, what uv resolves for it: refenv.builder.crossresolve)."""
    inputs = inputs_of(env)
    args = download_args(env)
    if cross_python(env.python):
        split = args.index("--")
        pinned = crossresolve.pins(str(crossresolve.uv_binary()), args[split + 1:], env.python, glibc_of(env),
                                   inputs["extra_index_url"], log)
        args = [*args[:split], "--no-deps", "--", *pinned]
    wheelhouse.mkdir(parents=True, exist_ok=True)
    cache = HashCache(wheelhouse)
    with tempfile.TemporaryDirectory(dir=wheelhouse, prefix=".resolve-") as tmp:
        pip_download(args, Path(tmp), glibc_of(env), log)
        wheels = []
        for file in sorted(Path(tmp).iterdir()):
            m = WHEEL_RE.match(file.name)
            if not m:
                raise LockError(f"pip chose {file.name}, which is not a wheel", "refenv installs wheels only")
            target = wheelhouse / file.name
            if not target.exists():
                shutil.move(str(file), target)
            sha = cache.sha256(target)
            wheels.append(Wheel(m.group("name"), m.group("version"), file.name, sha, target.stat().st_size))
    cache.save()
    return Lock(env.name, inputs, digest(inputs), tuple(wheels))


def ensure_wheels(lock: Lock, wheelhouse: Path, log: Any = None) -> None:
    """Fetch what the lock names and the wheelhouse lacks, then check every hash."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    missing = [w for w in lock.wheels if not (wheelhouse / w.filename).exists()]
    if missing:
        req = wheelhouse / f".missing-{lock.environment}.txt"
        req.write_text("".join(f"{w.name}=={w.version} --hash=sha256:{w.sha256}\n" for w in missing))
        extra = lock.inputs.get("extra_index_url")
        args = ["--no-deps", "--require-hashes", "-r", str(req), "--python-version", lock.inputs["python"]]
        glibc = _glibc_in(lock.inputs.get("platform"))
        pip_download([*args, *(["--extra-index-url", extra] if extra else [])], wheelhouse, glibc, log)
        req.unlink()
    check_hashes(lock, wheelhouse)


def _glibc_in(platform: Any) -> str:
    """The glibc a lock was resolved for, from its `platform` input ("manylinux x86_64 (glibc 2.31)")."""
    text = str(platform or "")
    found = re.search(r"glibc (\d{1,2}\.\d{1,3})\)", text)
    return found.group(1) if found else suites.DEFAULT_GLIBC


def check_hashes(lock: Lock, wheelhouse: Path) -> None:
    cache = HashCache(wheelhouse)
    try:
        for w in lock.wheels:
            path = wheelhouse / w.filename
            if not path.exists():
                raise LockError(f"{lock.environment}: {w.filename} is not in the wheelhouse ({wheelhouse})",
                                "run `invoke lock` to fetch it")
            actual = cache.sha256(path)
            if actual != w.sha256:
                raise LockError(
                    f"{lock.environment}: {w.filename} has sha256 {actual[:16]}…, but the lock says {w.sha256[:16]}…: "
                    "the wheel changed since it was locked",
                    f"delete {path} to fetch the locked file again, or run `invoke lock --env {lock.environment}` "
                    "to re-lock on purpose")
    finally:
        cache.save()


def lock_path(matrix_path: str | Path, env: str) -> Path:
    return Path(matrix_path).resolve().parent / "locks" / f"{env}.json"


def write_lock(lock: Lock, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(lock), encoding="utf-8")
