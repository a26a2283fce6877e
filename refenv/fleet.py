"""`invoke fleet`: per node of a cluster, its driver and GPUs and which environments can use them (pure).

Each node answers a probe job (`python -m harness diagnose --json` run on the node itself: the harness
needs only the standard library). What the node would give each environment is refenv's prediction
(`expect.expect`) for a container with plain GPU access, judged by the readiness rules of the report
(`refenv.readiness`): the same "ready" and "install R580 (>= 580.65.06)" a matrix run would print.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness import compat, schema
from refenv import readiness
from refenv.engines.realhost import profile_of
from refenv.engines.seam import NodeProbe
from refenv.model.matrix import Environment, Host, Scenario
from refenv.model.profiles import Profile
from refenv.run import expect

GPU = Scenario("gpu", "all", (), "plain GPU access")


@dataclass(frozen=True)
class NodeReport:
    node: str
    features: tuple[str, ...]
    gres: str
    driver: str | None                     # '535.104.05', or None without a working driver
    gpus: tuple[str, ...]                  # 'NVIDIA H100 80GB HBM3 (sm_90)'
    why_no_driver: str | None
    readiness: tuple[readiness.Readiness, ...]
    error: str | None = None               # the probe job itself failed


def node_readiness(node: str, profile: Profile | None,
                   environments: Iterable[Environment]) -> tuple[readiness.Readiness, ...]:
    """Each environment on this node, as refenv predicts a container with plain GPU access would see it."""
    host = Host(node, "real" if profile is not None else "none")
    cells = []
    for env in environments:
        verdict = expect.expect(env, host, profile, GPU).verdict
        if profile is None and env.cuda is not None:
            # In a container the missing driver shows as no GPU visible; on the node itself the diagnosis
            # found no driver, and a driver is what the node needs (readiness names the branch).
            verdict = schema.NO_DRIVER
        cells.append(readiness.CellFacts(
            environment=env.name, host=node, scenario=GPU.name, status=readiness.PASS, expected=verdict,
            observed=verdict, simulated=False, gpu_access=True,
            driver=profile.driver_version if profile else None, torch=env.torch, cuda=env.cuda,
            driver_cuda=compat.cuda_to_int(profile.cuda_version) if profile else None,
            capability=profile.gpus[0].compute_capability if profile and profile.gpus else None))
    return readiness.judge(cells)


def report(probe: NodeProbe, environments: Iterable[Environment]) -> NodeReport:
    envs = tuple(environments)
    if probe.document is None:
        return NodeReport(probe.node, probe.features, probe.gres, None, (), None, (), probe.error or "no answer")
    profile, why = profile_of(probe.document)
    gpus = tuple(f"{g.name} ({compat.sm_name(g.compute_capability)})" for g in profile.gpus) if profile else ()
    return NodeReport(probe.node, probe.features, probe.gres, profile.driver_version if profile else None, gpus, why,
                      node_readiness(probe.node, profile, envs))


def lines(r: NodeReport) -> list[str]:
    """The node in a few lines: what it is, then one line per environment."""
    about = ([f"features {','.join(r.features)}"] if r.features else []) + ([f"gres {r.gres}"] if r.gres else [])
    head = f"node {r.node}" + (f" ({'; '.join(about)})" if about else "")
    if r.error is not None:
        return [head, f"  probe failed: {r.error}"]
    driver = f"driver {r.driver}" if r.driver else f"no driver ({r.why_no_driver})"
    gpus = ", ".join(r.gpus) if r.gpus else "no GPU"
    out = [head, f"  {driver}; {gpus}"]
    for env in r.readiness:
        if env.ready:
            out.append(f"  {env.environment}: torch gets a GPU")
        for line in readiness.grouped(env):
            out.append(f"  {env.environment}: no GPU: {line.split(': ', 1)[1]}")
    return out


def needs(reports: Iterable[NodeReport], environment: str) -> list[str]:
    """For one environment, what each node would need (nothing, or the fix readiness names)."""
    out = []
    for r in reports:
        env = next((e for e in r.readiness if e.environment == environment), None)
        if env is None:
            out.append(f"{r.node}: not probed ({r.error})")
        elif env.ready:
            out.append(f"{r.node}: ready")
        else:
            out += [f"{r.node}: {h.verdict}; {h.fix.text}" for h in env.refused]
    return out


__all__ = ["GPU", "NodeProbe", "NodeReport", "lines", "needs", "node_readiness", "profile_of", "report"]
