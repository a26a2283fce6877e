"""Who owns a run's containers, so that a run killed without a chance to clean up is cleaned up by the next.

A run records its owner (host, process id and the process's start time, the engine it runs on) in refenv's
cache when it begins, and at its end removes whatever of it is left and the record. A run killed with
SIGKILL, or one whose engine died under it, leaves its record behind; the next run on the same engine
removes the containers (or jobs) labelled with that run's id, but only where the owner is gone: its
process no longer exists on this host (the start time guards against a reused pid), or the run ended
without being able to sweep. Runs of other people, and live runs, are never touched.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from refenv import paths
from refenv.engines.seam import CellEngine

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Owner:
    """One run's owner, as its record in the cache says."""

    run_id: str
    host: str
    pid: int
    started: int | None      # the process's start time (clock ticks since boot, /proc/PID/stat field 22)
    engine: str              # which engine its containers are on (engine_key)
    ended: bool = False      # the run ended but could not remove what it left (its engine did not answer)


def folder() -> Path:
    return paths.cache_root() / "runs"


def engine_key(engine: CellEngine) -> str:
    """The engine a run's containers live on: its kind and the Docker endpoint (DOCKER_HOST) behind it."""
    return f"{type(engine).__name__}@{os.environ.get('DOCKER_HOST') or 'default'}"


def process_start(pid: int) -> int | None:
    """A process's start time from /proc (None where there is no /proc or no such process)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the name in parentheses may hold spaces
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def alive(pid: int, started: int | None) -> bool:
    """Whether the process that recorded `started` still runs (a zombie or a reused pid does not count)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: ask the kernel whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    fields = text[text.rfind(")") + 2:].split()
    if not fields or fields[0] in ("Z", "X"):
        return False
    return started is None or (len(fields) > 19 and fields[19] == str(started))


def orphaned(owners: Iterable[Owner], host: str, engine: str, is_alive: Callable[[int, int | None], bool]
             ) -> list[Owner]:
    """The runs on `engine` whose owner is gone: ended without sweeping, or a process of this host that is dead.
    A run recorded on another host is left alone unless it ended: its process cannot be seen from here."""
    return [o for o in owners if o.engine == engine
            and (o.ended or (o.host == host and not is_alive(o.pid, o.started)))]


def this_run(run_id: str, engine: str) -> Owner:
    pid = os.getpid()
    return Owner(run_id, socket.gethostname(), pid, process_start(pid), engine)


def _path(run_id: str) -> Path:
    return folder() / f"{run_id}.json"


def record(owner: Owner) -> None:
    """Write the owner's record beside and rename it; a full disk is logged, not fatal (nothing runs yet)."""
    path = _path(owner.run_id)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(asdict(owner)), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        LOG.warning("could not record the run's owner in %s: %s", path, exc.strerror or exc)


def read_all() -> list[Owner]:
    """Every owner recorded on this machine (a record that does not read is skipped)."""
    out = []
    for path in sorted(folder().glob("*.json")) if folder().is_dir() else ():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out.append(Owner(str(data["run_id"]), str(data["host"]), int(data["pid"]),
                             None if data.get("started") is None else int(data["started"]), str(data["engine"]),
                             bool(data.get("ended"))))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            LOG.debug("skipping run record %s: %s", path, exc)
    return out


def reap(engine: CellEngine, key: str) -> dict[str, int]:
    """Remove what dead runs left on this engine; by run id, how many containers (or jobs) went."""
    done: dict[str, int] = {}
    for owner in orphaned(read_all(), socket.gethostname(), key, alive):
        try:
            removed = engine.cancel(owner.run_id)
        except Exception as exc:  # the engine refused now: the record stays for the next run
            LOG.warning("could not remove what run %s left: %s", owner.run_id, exc)
            continue
        _path(owner.run_id).unlink(missing_ok=True)
        done[owner.run_id] = removed
        LOG.info("run %s (pid %d on %s) is gone: removed %d of its containers", owner.run_id, owner.pid,
                 owner.host, removed)
    return done


def release(engine: CellEngine, owner: Owner) -> None:
    """At the end of a run: remove what is left of it and its record; where the engine does not answer, keep the
    record, marked ended, for the next run on that engine."""
    try:
        engine.cancel(owner.run_id)
    except Exception as exc:  # a lost engine fails in its own way (docker-py, requests, a Slurm command)
        LOG.warning("could not sweep run %s: %s; the next run on this engine will", owner.run_id, exc)
        record(replace(owner, ended=True))
        return
    _path(owner.run_id).unlink(missing_ok=True)
