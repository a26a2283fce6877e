"""Is an environment known-good? Its cells in a matrix run's cells.json, judged for publishing (pure).

Known-good means: the run tested this very image (same content hash), was not interrupted, and every
cell of the environment agreed with its expectation. A NOT_RUN cell (the `real` host on a machine
without an NVIDIA runtime) does not disagree, but it is not verification either: the hosts it WAS
verified on are the hosts of its PASS cells, and they are named.
"""

from __future__ import annotations

from dataclasses import dataclass

from refenv.results import NOT_RUN, PASS
from refenv.rundoc import HostRecord, RunDocument

SHOWN = 5  # failing cells named in a refusal; the rest are counted


@dataclass(frozen=True)
class Judgement:
    environment: str
    ok: bool
    reasons: tuple[str, ...]          # why it is refused (empty when ok)
    verified_on: tuple[str, ...]      # hosts with PASS cells, described
    hosts: tuple[str, ...]            # their names
    passed: int
    not_verified: tuple[str, ...]     # NOT_RUN cells, with why
    run_id: str | None


def describe_host(host: HostRecord) -> str:
    """'r580 (simulated driver 580.95.05, 2 x NVIDIA H100 80GB HBM3)', 'none (no driver)'."""
    if host.kind == "none":
        return f"{host.name} (no driver)"
    names = sorted({g.name for g in host.gpus if g.name})
    gpus = host.gpus
    what = f", {len(gpus)} x {names[0]}" if len(names) == 1 else (f", {len(gpus)} GPUs" if gpus else "")
    faults = f"; faults: {', '.join(host.faults)}" if host.faults else ""
    kind = "simulated" if host.kind == "simulated" else host.kind
    return f"{host.name} ({kind} driver {host.driver or '?'}{what}{faults})"


def judge(doc: RunDocument, environment: str, content_hash: str) -> Judgement:
    """Whether the run in `doc` makes `environment` (the image with `content_hash`) publishable, and why."""
    run_id = doc.run.id

    def refuse(*reasons: str) -> Judgement:
        return Judgement(environment, False, reasons, (), (), 0, (), run_id)

    if doc.run.interrupted:
        return refuse(f"run {run_id} was interrupted: not every cell ran")
    entry = doc.environment(environment)
    if entry is None:
        return refuse(f"run {run_id} did not test {environment}")
    if entry.content_hash != content_hash:
        return refuse(f"the image's content hash {content_hash[:16]} differs from the one run {run_id} tested "
                      f"({str(entry.content_hash)[:16]}): run `invoke matrix --env {environment}` first")
    cells = [c for c in doc.cells if c.environment == environment]
    if not cells:
        return refuse(f"run {run_id} has no cells of {environment}")
    bad = [c for c in cells if c.bad]
    if bad:
        named = [f"{c.id}: {c.status} ({c.reason})" for c in bad[:SHOWN]]
        more = [f"and {len(bad) - SHOWN} more"] if len(bad) > SHOWN else []
        return refuse(f"{len(bad)} of its {len(cells)} cells disagree or did not run as planned in run {run_id}",
                      *named, *more)
    passed = [c for c in cells if c.status == PASS]
    if not passed:
        return refuse(f"no cell of {environment} passed in run {run_id}: nothing verified it")
    names = tuple(dict.fromkeys(c.host for c in passed))
    verified = tuple(describe_host(doc.host(n) or HostRecord(n)) for n in names)
    not_run = tuple(f"{c.id}: {c.reason}" for c in cells if c.status == NOT_RUN)
    return Judgement(environment, True, (), verified, names, len(passed), not_run, run_id)
