"""The base image: pulled from a registry when configured and reachable, else bootstrapped offline."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.inputs import InputError
from refenv import paths
from refenv.builder.store import ImageStore
from refenv.errors import BuildError, RefenvError
from refenv.model import accepts
from refenv.model.labels import MANAGED
from refenv.model.matrix import Base, Bootstrap

LOG = logging.getLogger(__name__)
RECIPE = "base/bootstrap.sh"
# The Python each Debian suite ships (packages.debian.org: python3).
SUITE_PYTHON = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}
IMPORT_CHANGES = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
                  'CMD ["python3"]', f"LABEL {MANAGED}=true", "LABEL refenv.kind=base"]


@dataclass(frozen=True)
class BaseImage:
    ref: str
    image_id: str
    source: str          # "registry", "bootstrap" or "cached"
    python: str | None   # the Python the suite ships, when known


def recipe_digest(boot: Bootstrap) -> str:
    """What names a bootstrapped base: the recipe script and its arguments."""
    script = (paths.images_dir() / RECIPE).read_bytes()
    data = json.dumps({"suite": boot.suite, "mirror": boot.mirror, "packages": list(boot.packages),
                       "changes": IMPORT_CHANGES}, sort_keys=True).encode()
    return hashlib.sha256(script + b"\0" + data).hexdigest()


def bootstrap_tag(boot: Bootstrap) -> str:
    return f"refenv/base:{boot.suite}-{recipe_digest(boot)[:16]}"


def python_of(boot: Bootstrap) -> str | None:
    return SUITE_PYTHON.get(boot.suite)


def suite_for_python(python: str) -> str | None:
    return next((s for s, p in SUITE_PYTHON.items() if p == python), None)


def ensure(engine: ImageStore, base: Base, log: Callable[[str], None]) -> BaseImage:
    """The base image, made or found; a registry that does not answer falls back to the bootstrap."""
    if base.image:
        try:
            accepts.image_reference(base.image, "base.image")
        except InputError as exc:
            raise BuildError(str(exc)) from None
        local = engine.image_id(base.image)
        if local:
            return BaseImage(base.image, local, "cached", None)
        try:
            log(f"pulling {base.image}")
            return BaseImage(base.image, engine.pull(base.image), "registry", None)
        except RefenvError as exc:
            log(f"cannot pull {base.image} ({exc.message}); bootstrapping Debian {base.bootstrap.suite} instead")
    tag = bootstrap_tag(base.bootstrap)
    found = engine.image_id(tag)
    if found:
        return BaseImage(tag, found, "cached", python_of(base.bootstrap))
    return BaseImage(tag, _bootstrap(engine, base.bootstrap, tag, log), "bootstrap", python_of(base.bootstrap))


def check_recipe(boot: Bootstrap) -> None:
    """debootstrap runs as root: a suite such as "../../x" or "--help", or a mirror that is not a URL, stops here."""
    try:
        accepts.suite(boot.suite, "base.bootstrap.suite")
        accepts.url(boot.mirror, "base.bootstrap.mirror")
        for package in boot.packages:
            accepts.deb_package(package, "base.bootstrap.packages")
    except InputError as exc:
        raise BuildError(f"refusing to bootstrap: {exc}") from None


def _bootstrap(engine: ImageStore, boot: Bootstrap, tag: str, log: Callable[[str], None]) -> str:
    if shutil.which("debootstrap") is None:
        raise BuildError("cannot bootstrap the base image: debootstrap is not installed",
                         hint="apt-get install debootstrap (./go installs it), or set base.image in matrix.yaml "
                              "to an image a reachable registry has")
    check_recipe(boot)
    work = Path(tempfile.mkdtemp(prefix="refenv-base-", dir=paths.cache_root().as_posix()
                                 if paths.cache_root().exists() else None))
    try:
        root = work / "root"
        script = paths.images_dir() / RECIPE
        log(f"bootstrapping Debian {boot.suite} with {', '.join(boot.packages)} (debootstrap, about a minute)")
        proc = subprocess.run(["sh", str(script), boot.suite, boot.mirror, ",".join(boot.packages), str(root)],
                              capture_output=True, text=True, check=False)
        for line in (proc.stdout + proc.stderr).splitlines():
            log(line)
        if proc.returncode != 0:
            raise BuildError(f"debootstrap of {boot.suite} from {boot.mirror} failed (exit {proc.returncode})",
                             "\n".join((proc.stdout + proc.stderr).splitlines()[-20:]),
                             hint="is the Debian mirror reachable from this host? debootstrap must run as root")
        tar = work / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(tar), "."], check=True)
        log(f"importing the root filesystem as {tag}")
        return engine.import_rootfs(tar, tag, IMPORT_CHANGES)
    finally:
        shutil.rmtree(work, ignore_errors=True)
