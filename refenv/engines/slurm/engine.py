"""The runner's engine on a Slurm cluster: cells packed into jobs (packs.py), each cell's script starting its
container.

Images are built (or found) on the local Docker engine, which the nodes reach: on the single-node cluster
of the slurm tier it is the nodes' engine; on a real cluster the images come from a registry or the
nodes' engines, and the results folder and refenv's cache sit on a filesystem the nodes share. Cells
write their result where the local engine's would (the job's `/out` bind), so `cellrun.run_one` judges
them the same way; the job's state only fills the gaps (`state.gap`).

All waiting threads share one `squeue --json` call per poll, not one per cell.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from refenv import paths
from refenv.engines import realhost
from refenv.engines.onlocal import OnLocalEngine
from refenv.engines.realhost import profile_of
from refenv.engines.seam import OUT, CellEngine, ContainerSpec, RealHost, RunOutcome
from refenv.engines.slurm import client, packs, script, state
from refenv.errors import NotStarted, RefenvError
from refenv.model.labels import CELL, KIND, RUN
from refenv.model.matrix import Host
from refenv.model.placement import SlurmPlacement

LOG = logging.getLogger(__name__)
# Slurm checks time limits every 30 s or so and rounds them up to a minute: past this much more than
# the cell's own limit, the job is cancelled here and the cell is TIMEOUT all the same.
LATE_S = 120.0
# Cells submitted within this window go to Slurm as packs (refenv/engines/slurm/packs.py). The runner starts
# its first cells within milliseconds of each other, and later ones one at a time as others finish: a longer
# window gathers no more of them, and every cell would wait it out.
BATCH_S = 0.05


@dataclass
class _Submission:
    """One cell waiting for its job id from the next batch."""

    run_id: str
    argv: list[str]
    files: script.JobFiles
    done: threading.Event = field(default_factory=threading.Event)
    job_id: str | None = None
    waves: int = 1                # how many cells' time its pack may take before this one starts
    error: Exception | None = None


class SlurmEngine(OnLocalEngine):
    """A `CellEngine` whose cells are Slurm jobs; images and other containers go to `local`."""

    def __init__(self, local: CellEngine, hosts: tuple[Host, ...] = (), launcher: str = "docker",
                 commands: client.Commands | None = None, poll_s: float = 0.5) -> None:
        if launcher != "docker":
            raise RefenvError(f"run.launcher {launcher!r}: refenv renders its job scripts but does not run them yet",
                              "set run.launcher: docker (Docker and the NVIDIA container toolkit on the nodes)")
        super().__init__(local)
        self.commands = commands or client.Commands()
        self.placements = {h.name: h.slurm or SlurmPlacement() for h in hosts}
        self.poll_s = poll_s
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._snapshot: dict[str, state.Job] = {}
        self._polled = 0.0
        self._jobs: dict[str, set[str]] = {}     # run id -> job ids submitted
        self._queue: list[_Submission] = []
        self._flushing = False
        self._submitting = threading.Lock()      # held while a batch is submitted and recorded
        self._batches = 0
        self._cancelled: set[str] = set()
        self._nodes = self.nodes()
        state.check_placements(hosts, self._nodes)

    def nodes(self) -> list[state.Node]:
        return state.nodes(self.commands.sinfo_json())

    def pin(self, host: str, node: str) -> None:
        """Run `host`'s cells on `node` only (the node that answered the host's probe job)."""
        self.placements[host] = replace(self.placements.get(host) or SlurmPlacement(), nodelist=node)

    def probe_real_hosts(self, hosts: tuple[Host, ...]) -> dict[str, RealHost]:
        """A probe job per real host, placed as its cells will be; the host's cells are pinned to the node
        that answered, and predicted from what that node's diagnosis found."""
        from refenv.engines.slurm.probe import probe_placement

        folder = paths.cache_root() / "slurm-probes" / time.strftime("%Y%m%d-%H%M%S")
        out: dict[str, RealHost] = {}
        for host in (h for h in hosts if h.kind == "real"):
            probe = probe_placement(folder, host.name, self.placements.get(host.name) or SlurmPlacement(),
                                    self.commands)
            if probe.node:
                self.pin(host.name, probe.node)
            profile, why = profile_of(probe.document) if probe.document else (None, probe.error)
            error = None if profile else f"host {host.name} (node {probe.node or 'none'}): {why}"
            bus = realhost.bus_of(probe.document) if probe.document and profile is None else None
            out[host.name] = RealHost(profile, probe.node or None, error, bus)
        return out

    # ---- cells as jobs ----------------------------------------------------------------------

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        labels = dict(spec.labels)
        if labels.get(KIND) != "cell":
            return self.local.run(spec, timeout)  # linker caches and checks: small, and for the local image
        run_id, cell = labels.get(RUN, ""), labels.get(CELL, "")
        out = next(Path(src) for src, dst, _ in spec.binds if dst == OUT)
        files = script.JobFiles(str(out / "job.sh"), str(out / "job.log"), str(out / "job-outcome.json"))
        for stale in (files.outcome, files.log):
            Path(stale).unlink(missing_ok=True)
        Path(files.script).write_text(script.docker_script(spec, files, timeout), encoding="utf-8")
        host = cell.split("/")[1] if cell.count("/") == 2 else ""
        argv = script.sbatch_argv(spec, files, timeout, self.placements.get(host) or SlurmPlacement())
        sub = _Submission(run_id, argv, files)
        job_id = self._submit(sub)
        LOG.debug("cell %s is job %s", cell, job_id)
        return self._wait(job_id, files, timeout * sub.waves)

    def _submit(self, sub: _Submission) -> str:
        """The cell's job id, once the batch it joined is submitted."""
        with self._lock:
            if sub.run_id in self._cancelled:
                raise NotStarted("the run was cancelled before the job was submitted")
            self._queue.append(sub)
            if not self._flushing:
                self._flushing = True
                threading.Thread(target=self._flush, name="sbatch", daemon=True).start()
        sub.done.wait()
        if sub.error is not None:
            raise sub.error
        assert sub.job_id is not None
        return sub.job_id

    def _flush(self) -> None:
        """Submit what gathered in the window: cells sharing their options packed together (packs.py)."""
        time.sleep(BATCH_S)
        with self._lock:
            batch, self._queue, self._flushing = self._queue, [], False
        groups: dict[tuple[str, ...], list[_Submission]] = {}
        for sub in batch:
            groups.setdefault((sub.run_id, *script.pack_key(sub.argv)), []).append(sub)
        for subs in groups.values():
            with self._submitting:
                try:
                    if subs[0].run_id in self._cancelled:
                        raise NotStarted("the run was cancelled before the job was submitted")
                    ids = self._sbatch(subs)
                    with self._lock:
                        self._jobs.setdefault(subs[0].run_id, set()).update(ids)
                except Exception as exc:  # each cell reports it as its own failure
                    ids = []
                    for sub in subs:
                        sub.error = exc
            for i, sub in enumerate(subs):
                sub.job_id = ids[i] if ids else None
                sub.done.set()

    def _sbatch(self, subs: list[_Submission]) -> list[str]:
        """Start cells sharing their options as packs (packs.py), each through srun; each cell's job id."""
        key = script.pack_key(subs[0].argv)
        options = dict(a.partition("=")[::2] for a in key if a.startswith("--"))
        nodes = packs.eligible(self._nodes, options.get("--partition"),
                               state.constraint_features(options.get("--constraint", "")), options.get("--nodelist"))
        planned = packs.plan(len(subs), int(options.get("--cpus-per-task", "1")),
                             packs.memory_mb(options.get("--mem", "1G")), nodes)
        self._batches += 1
        folder = paths.cache_root() / "slurm-packs"
        folder.mkdir(parents=True, exist_ok=True)
        ids: list[str] = [""] * len(subs)
        for i, pack in enumerate(planned):
            stem = folder / f"{subs[0].run_id}-{self._batches}-{i}"
            job_id_file = stem.with_suffix(".jobid")
            job_id_file.unlink(missing_ok=True)
            stem.with_suffix(".sh").write_text(
                packs.pack_script([subs[c].files for c in pack.cells], pack.width, str(job_id_file)), encoding="utf-8")
            stem.with_suffix(".sh").chmod(0o755)  # srun executes it (sbatch copied a batch script)
            argv = packs.srun_argv(key, pack, str(stem.with_suffix(".log")), str(stem.with_suffix(".sh")))
            job_id = self.commands.srun(argv, job_id_file, stem.with_suffix(".srun.log"))
            for c in pack.cells:
                ids[c], subs[c].waves = job_id, pack.waves
        return ids

    def _poll(self) -> dict[str, state.Job]:
        """The latest squeue listing; at most one call per `poll_s`, shared by every waiting thread."""
        with self._poll_lock:
            if time.monotonic() - self._polled >= self.poll_s:
                try:
                    self._snapshot = state.jobs(self.commands.squeue_json())
                except (RefenvError, ValueError) as exc:
                    LOG.warning("squeue: %s", exc)
                self._polled = time.monotonic()
            return self._snapshot

    def _wait(self, job_id: str, files: script.JobFiles, timeout: float) -> RunOutcome:
        started_at: float | None = None
        unseen = 0
        while True:
            outcome = _read_outcome(files)
            if outcome is not None:
                return outcome
            job = state.find(self._poll(), job_id)
            if job is None:
                unseen += 1
                if unseen > max(20, int(30 / self.poll_s)):
                    raise RefenvError(f"job {job_id} left the queue without an outcome")
            elif job.terminal:
                outcome = _read_outcome(files)  # written just before the job ended
                if outcome is not None:
                    return outcome
                return _from_gap(state.gap(job), files)
            elif job.state == "PENDING" and job.reason in state.NEVER:
                self.commands.scancel([job_id])
                raise NotStarted(f"Slurm cannot start the job: {job.reason}")
            elif job.state == "RUNNING":
                started_at = started_at or time.monotonic()
                if time.monotonic() - started_at > timeout + LATE_S:
                    self.commands.scancel([job_id])
                    return RunOutcome(None, True, False, _tail(files.log))
            time.sleep(min(0.2, self.poll_s))

    def cancel(self, run_id: str) -> int:
        """Cancel every job of the run and wait until they have ended (their scripts remove the containers)."""
        with self._lock:
            self._cancelled.add(run_id)
        # A batch being submitted is recorded before it is cancelled.
        with self._submitting, self._lock:
            ids = sorted(self._jobs.get(run_id, set()))
        listed = state.jobs(self.commands.squeue_json())
        name = f"refenv-{run_id}"
        ids = sorted(set(ids) | {j.job_id for j in listed.values() if j.name == name and not j.terminal})

        def live(jobs: dict[str, state.Job]) -> list[str]:
            return [i for i in ids if (j := state.find(jobs, i)) is not None and not j.terminal]

        if live(listed):
            self.commands.scancel(live(listed))
        deadline = time.monotonic() + 60
        while live(listed) and time.monotonic() < deadline:
            time.sleep(0.3)
            listed = state.jobs(self.commands.squeue_json())
        return len(ids) + self.local.cancel(run_id)


def _tail(path: str, lines: int = 60) -> str:
    try:
        return "\n".join(Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _read_outcome(files: script.JobFiles) -> RunOutcome | None:
    try:
        data = json.loads(Path(files.outcome).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    timed_out = bool(data.get("timed_out"))  # killed at the cell's own limit by its script
    return RunOutcome(None if timed_out else int(data["exit_code"]), timed_out, bool(data.get("oom_killed")),
                      _tail(files.log))


def _from_gap(gap: state.Gap, files: script.JobFiles) -> RunOutcome:
    if gap.kind == "timeout":
        return RunOutcome(None, True, False, _tail(files.log))
    if gap.kind == "oom":
        return RunOutcome(None, False, True, _tail(files.log))
    if gap.kind == "not_run":
        raise NotStarted(gap.reason)
    raise RefenvError(gap.reason)
