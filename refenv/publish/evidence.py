"""What publishing reads besides the runs: the image's content hash now, its report's digest, the source's remote."""

from __future__ import annotations

import hashlib
import logging
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from refenv import paths
from refenv.builder import baseimage, images, team, wheelhouse
from refenv.engines.docker.sdk import Engine
from refenv.errors import LockError, RefenvError
from refenv.model.matrix import Environment, Matrix

LOG = logging.getLogger(__name__)


def current_image(engine: Engine, matrix: Matrix, env: Environment) -> tuple[str, str]:
    """(content hash, tag) of the environment's image as the matrix defines it now, without building anything.

    The hash is planned the way `build_environment` plans it (base image, lock, harness tree, template),
    so a changed harness or lock gives a new hash; the image must be in the engine with that hash. A team image's
    is its image (or Dockerfile digest) and the harness mounted into it (refenv/builder/team.py).
    """
    if env.team is not None:
        return team.current(engine, env)
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
    plan = images.plan(env, base_id, lock, images.tree_digest(paths.harness_dir()))
    labels = engine.image_labels(plan.env_tag)
    if labels is None:
        raise RefenvError(f"{env.name}: its image {plan.env_tag} is not built (the environment changed since the "
                          "last build)", f"run `invoke matrix --env {env.name}` first")
    if labels.get("refenv.content-hash") != plan.content_hash:
        raise RefenvError(f"{env.name}: image {plan.env_tag} says content hash "
                          f"{labels.get('refenv.content-hash')}, not {plan.content_hash}")
    return plan.content_hash, plan.env_tag


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_info(root: Path) -> tuple[str | None, str | None]:
    """(commit, the repository's remote URL): each None where git, the checkout or a remote is not there."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() or None if done.returncode == 0 else None

    remote = git("remote", "get-url", "origin")
    return git("rev-parse", "HEAD"), remote_url(remote) if remote else None


def remote_url(url: str) -> str | None:
    """A remote as a label may show it: without any user or token, and None for a local path or file:// URL.

    'https://tok@host/x' -> 'https://host/x'; 'git@host:org/x.git' -> 'host:org/x.git'; '/srv/x.git' -> None.
    """
    parts = urlsplit(url)
    if parts.scheme and parts.netloc and parts.scheme != "file":
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    # git's scp-like syntax, [user@]host:path, is a remote; anything else without a scheme is a local path.
    m = re.fullmatch(r"(?:[^@/:]+@)?([A-Za-z0-9.-]+):(?!/)(.+)", url)
    return f"{m.group(1)}:{m.group(2)}" if m else None
