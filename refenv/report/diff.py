"""`refenv diff BASE NEW`: what changed between two runs of a matrix, as a CI gate reads it (pure).

Per environment of both runs and per host, what torch gets there (refenv.report.ready's states: a GPU, no GPU
with the verdict, the GPU with a stack that does not run, not tested); a host that had the GPU in the base run
and has not in the new one is a loss, whatever the new state (a host no longer tested proves nothing, so it is
a loss too); one that gains it is a gain. Extensions (the stack beside torch) that ran in every cell of the
base and are broken in the new run are named with why. Environments that only one run has are said, not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from refenv.model.rundoc import RunDocument
from refenv.report import ready, stack


@dataclass(frozen=True)
class HostMove:
    """One host of one environment whose GPU state differs between the runs."""

    environment: str
    host: str
    before: str                      # 'GPU (simulated)', 'no GPU: DRIVER_TOO_OLD', 'not tested'
    after: str
    fix: str = ""                    # the new run's smallest fix, where the host lost the GPU


@dataclass(frozen=True)
class RunDiff:
    base: str                        # the runs' ids
    new: str
    lost: tuple[HostMove, ...]
    gained: tuple[HostMove, ...]
    broke: tuple[str, ...]           # 'team: torchvision 0.28.0 does not import: ...'
    only_base: tuple[str, ...]       # environments the new run does not have
    only_new: tuple[str, ...]

    @property
    def regressed(self) -> bool:
        """A host lost the GPU, or an extension broke: the gate fails."""
        return bool(self.lost or self.broke)


def _has_gpu(state: str) -> bool:
    return state.startswith("GPU (")


def diff(base: RunDocument, new: RunDocument) -> RunDiff:
    """What moved from `base` to `new`, environment by environment, host by host."""
    before_r = {r.environment: r for r in ready.of_run(base)}
    after_r = {r.environment: r for r in ready.of_run(new)}
    names_base = [e.name for e in base.environments]
    names_new = [e.name for e in new.environments]
    hosts = list(dict.fromkeys([h.name for h in base.hosts] + [h.name for h in new.hosts]))
    lost, gained, broke = [], [], []
    for env in (n for n in names_base if n in names_new):
        for host in hosts:
            before, _ = ready.host_state(before_r.get(env), host)
            after, fix = ready.host_state(after_r.get(env), host)
            if _has_gpu(before) and not _has_gpu(after):
                lost.append(HostMove(env, host, before, after, fix))
            elif _has_gpu(after) and not _has_gpu(before) and before != "not in this run":
                gained.append(HostMove(env, host, before, after))
        was = stack.broken(base, env)
        broke += [f"{env}: {title}" for name, title in stack.broken(new, env).items() if name not in was]
    return RunDiff(base.run.id or "?", new.run.id or "?", tuple(lost), tuple(gained), tuple(broke),
                   tuple(n for n in names_base if n not in names_new),
                   tuple(n for n in names_new if n not in names_base))


def lines(d: RunDiff) -> list[str]:
    """The diff as text: the losses first (with the fix), then the gains, the broken extensions, the rest."""
    out = [f"from run {d.base} to run {d.new}: " + ("readiness REGRESSED" if d.regressed else "no host lost the GPU")]
    out += [f"  lost   {m.environment} on {m.host}: {m.before} -> {m.after}" + (f" ({m.fix})" if m.fix else "")
            for m in d.lost]
    out += [f"  gained {m.environment} on {m.host}: {m.before} -> {m.after}" for m in d.gained]
    out += [f"  broke  {line}" for line in d.broke]
    out += [f"  only in the base run: {name} (not judged)" for name in d.only_base]
    out += [f"  only in the new run: {name} (not judged)" for name in d.only_new]
    return out
