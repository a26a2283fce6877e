"""Build every environment of a matrix: base image, lock, wheels, images; one failure marks only its cells."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from refenv import paths
from refenv.builder import baseimage, images, wheelhouse
from refenv.builder.crossresolve import uv_binary
from refenv.builder.store import ImageStore
from refenv.errors import BuildError, LockError, RefenvError
from refenv.model.builds import CACHED, FAILED, EnvBuild
from refenv.model.matrix import Environment, Matrix

LOG = logging.getLogger(__name__)
Progress = Callable[[str, str], None]  # (environment, message)


def get_lock(matrix: Matrix | None, env: Environment, log: Callable[[str], None], relock: bool = False,
             lock_file: Path | None = None) -> wheelhouse.Lock:
    """The environment's lock (`lock_file`, else locks/ beside the matrix): read, or (re)made when missing,
    stale or asked for."""
    path = lock_file or wheelhouse.lock_path(matrix.path if matrix else ".", env.name)
    lock = None if relock else wheelhouse.read_lock(path)
    if not wheelhouse.is_current(lock, env):
        how = "uv pip compile, then pip download" if wheelhouse.cross_python(env.python) else "pip download"
        log(f"resolving {', '.join(wheelhouse.inputs_of(env)['requirements'])} for Python {env.python} ({how})")
        lock = wheelhouse.resolve(env, paths.wheelhouse(), log)
        wheelhouse.write_lock(lock, path)
        log(f"locked {len(lock.wheels)} wheels in {path}")
    assert lock is not None
    return lock


class BuildLog:
    """An environment's build log: each line to `~/.cache/refenv/build-logs/ENV.log` (unbuffered, so a full disk
    refuses the line it is written with), to the progress callback, and to a tail kept for the record of a
    failure. The disk's first refusal fails the build with its words (a BuildError, raised once); later lines go
    to the tail and the progress only. Opening the log raises OSError when the disk has no room for it."""

    def __init__(self, environment: str, progress: Progress) -> None:
        self.environment = environment
        self.progress = progress
        self.path = paths.build_logs() / f"{environment}.log"
        self.tail: list[str] = []
        self.refused: OSError | None = None
        self.said = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def __call__(self, line: str) -> None:
        for part in line.splitlines() or [""]:
            self.tail.append(part)
            del self.tail[:-40]
            if self.fd is not None:
                try:
                    os.write(self.fd, (part + "\n").encode("utf-8", "replace"))
                except OSError as exc:
                    self.refused = exc
                    self.close()
        self.progress(self.environment, line.splitlines()[-1] if line.strip() else line)
        if self.refused is not None and not self.said:
            self.said = True
            raise BuildError(f"cannot write the build log {self.path}: {self.refused.strerror or self.refused}")

    def failed(self, exc: Exception, start: float, tag: str | None = None, content_hash: str | None = None,
               lock_sha256: str | None = None) -> EnvBuild:
        """The FAILED record of an expected failure (the disk's own words for an OSError), with the log's tail."""
        error = exc if not isinstance(exc, OSError) else \
            BuildError(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
        with contextlib.suppress(BuildError):  # the log's own refusal is said once, by the error it raised
            self(f"FAILED: {error}")
        tail_text = getattr(error, "log_tail", "") or "\n".join(self.tail[-30:])
        return EnvBuild(self.environment, FAILED, tag, content_hash, round(time.monotonic() - start, 1), self.path,
                        str(error), tail_text, lock_sha256)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def __enter__(self) -> BuildLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_environment(engine: ImageStore, matrix: Matrix | None, env: Environment, progress: Progress,
                      relock: bool = False, lock_file: Path | None = None) -> EnvBuild:
    """Build one environment; expected failures (a full disk among them) come back as a FAILED record with the
    log's tail."""
    start = time.monotonic()
    try:
        log = BuildLog(env.name, progress)
    except OSError as exc:
        return EnvBuild(env.name, FAILED, None, None, 0.0, None,
                        f"cannot write the build log in {paths.build_logs()}: {exc.strerror or exc}", "")
    with log:
        plan = lock = None
        try:
            base = baseimage.ensure(engine, env.base, log)
            if base.python and base.python != env.python:
                suite = baseimage.suite_for_python(env.python)
                raise BuildError(f"{env.name} asks for Python {env.python}, but the base ({base.ref}) has "
                                 f"Python {base.python}",
                                 hint=f"use base.bootstrap.suite: {suite}" if suite else
                                 "name a base image with that Python")
            lock = get_lock(matrix, env, log, relock, lock_file)
            wheelhouse.ensure_wheels(lock, paths.wheelhouse(), log)
            plan = images.plan(env, base.image_id, lock, images.tree_digest(paths.harness_dir()))
            built = images.ensure(engine, plan, base.ref, paths.wheelhouse(), uv_binary(), log, log.path)
            log(f"{built.status.lower()}: {built.tag}")
        except (BuildError, LockError, RefenvError, OSError) as exc:
            return log.failed(exc, start, plan.env_tag if plan else None, plan.content_hash if plan else None,
                              lock.sha256 if lock else None)
    return EnvBuild(env.name, built.status, built.tag, plan.content_hash, round(time.monotonic() - start, 1),
                    log.path, None, None, lock.sha256)


def given_image(engine: ImageStore, env: Environment, ref: str) -> EnvBuild:
    """An image to run as it is (a pulled release), found like a cached build; FAILED when it is not here."""
    labels = engine.image_labels(ref)
    if labels is None:
        return EnvBuild(env.name, FAILED, None, None, 0.0, None, f"image {ref} is not in the engine")
    return EnvBuild(env.name, CACHED, ref, labels.get("refenv.content-hash"), 0.0, None)
