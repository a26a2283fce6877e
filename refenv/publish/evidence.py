"""Where the verification of an image is: its content hash now, and the newest matrix run that tested it."""

from __future__ import annotations

import hashlib
import logging
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from refenv import baseimage, images, paths, wheelhouse
from refenv.engine import Engine
from refenv.errors import LockError, RefenvError
from refenv.matrix import Environment, Matrix
from refenv.rundoc import RunDocument, RunDocumentError, load_run

LOG = logging.getLogger(__name__)


def current_image(engine: Engine, matrix: Matrix, env: Environment) -> tuple[str, str]:
    """(content hash, tag) of the environment's image as the matrix defines it now, without building anything.

    The hash is planned the way `build_environment` plans it (base image, lock, harness tree, template),
    so a changed harness or lock gives a new hash; the image must be in the engine with that hash.
    """
    base_ref = env.base.image or baseimage.bootstrap_tag(env.base.bootstrap)
    base_id = engine.image_id(base_ref)
    if base_id is None:
        raise RefenvError(f"{env.name}: its base image {base_ref} is not in the engine", "run `invoke matrix` first")
    try:
        lock = wheelhouse.read_lock(wheelhouse.lock_path(matrix.path, env.name))
    except LockError as exc:
        raise RefenvError(f"{env.name}: {exc.message}", exc.hint) from None
    if lock is None or not wheelhouse.is_current(lock, env):
        raise RefenvError(f"{env.name}: its lock is missing or older than its definition",
                          f"run `invoke matrix --env {env.name}` first")
    plan = images.plan(env, base_id, lock, images.tree_digest(paths.project_root() / "harness"))
    labels = engine.image_labels(plan.env_tag)
    if labels is None:
        raise RefenvError(f"{env.name}: its image {plan.env_tag} is not built (the environment changed since the "
                          "last build)", f"run `invoke matrix --env {env.name}` first")
    if labels.get("refenv.content-hash") != plan.content_hash:
        raise RefenvError(f"{env.name}: image {plan.env_tag} says content hash "
                          f"{labels.get('refenv.content-hash')}, not {plan.content_hash}")
    return plan.content_hash, plan.env_tag


def run_documents(results_root: Path) -> list[tuple[Path, RunDocument]]:
    """Every matrix run's cells.json under `results_root`, newest first (run ids begin with their time)."""
    found: dict[Path, RunDocument] = {}
    for path in results_root.glob("*/cells.json"):
        real = path.resolve()
        if real in found:
            continue
        try:
            found[real] = load_run(real)
        except RunDocumentError as exc:
            LOG.info("skipping %s: %s", path, exc)
    return sorted(found.items(), key=lambda item: item[1].run.started or "", reverse=True)


def find_run(results_root: Path, env: str, content_hash: str) -> tuple[Path, RunDocument] | str:
    """The newest run that tested this image, or why there is none."""
    newest_other = None
    for path, doc in run_documents(results_root):
        entry = doc.environment(env)
        if entry is None:
            continue
        if entry.content_hash == content_hash:
            return path, doc
        newest_other = newest_other or (path, str(entry.content_hash))
    if newest_other:
        return (f"the image's content hash {content_hash[:16]} differs from the one the newest run of {env} tested "
                f"({newest_other[1][:16]}, {newest_other[0]}): run `invoke matrix --env {env}` first")
    return f"no matrix run under {results_root} tested {env}: run `invoke matrix` first"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_info(root: Path) -> tuple[str | None, str]:
    """(commit, where the source is): the commit when it is a git checkout, its origin's URL or its folder."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() or None if done.returncode == 0 else None

    remote = git("remote", "get-url", "origin")
    # Without a remote the source is the checkout it was built from, which is still where the source is.
    return git("rev-parse", "HEAD"), without_userinfo(remote) if remote else root.resolve().as_uri()


def without_userinfo(url: str) -> str:
    """A remote URL without any user or token in it ('https://tok@host/x' -> 'https://host/x')."""
    parts = urlsplit(url)
    if parts.scheme and "@" in parts.netloc:
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return url
