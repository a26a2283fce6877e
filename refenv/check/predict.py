"""Each cell of a matrix row predicted for an environment read from a Dockerfile, and its readiness (pure).

The verdicts are the matrix's own predictor's (refenv/run/expect.py: the compatibility tables, the toolkit's
injection, CUDA_VISIBLE_DEVICES as the driver parses it, the failure catalogue), run on the image's environment
with its baked-in visibility variables beneath each scenario's; readiness is `refenv.readiness` over those
verdicts, worded as the matrix's reports word it. One set of rules, two sources of facts. A real host's GPUs are
read where its cells run (`refenv matrix --dry-run`); the check reads no machine, so its cells are not predicted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from refenv import readiness
from refenv.model.matrix import Environment, Host, Scenario
from refenv.model.status import NOT_RUN
from refenv.readiness import CellFacts, Readiness
from refenv.run import expect


@dataclass(frozen=True)
class CellCheck:
    """One cell's prediction: the verdict torch would give (None: not predicted, or the container cannot start)."""

    environment: str
    host: str
    scenario: str
    verdict: str | None
    verdicts: tuple[str, ...]
    reason: str
    simulated: bool
    gpu_access: bool          # plain GPU access: the cells readiness reads


def predict(env: Environment, image_env: Mapping[str, str], hosts: tuple[Host, ...],
            scenarios: tuple[Scenario, ...]) -> list[CellCheck]:
    """Every host x scenario cell of the environment, as the matrix predicts it."""
    out = []
    for host in hosts:
        for scenario in scenarios:
            plain = readiness.plain_gpu_access(scenario.gpus, scenario.env_dict)
            simulated = host.kind == "simulated"
            if host.kind == "real":
                out.append(CellCheck(env.name, host.name, scenario.name, None, (),
                                     "a real host's GPUs are read where its cells run (refenv matrix --dry-run)",
                                     False, plain))
                continue
            profile = expect.host_profile(host, None)
            e = expect.expect(env, host, profile, expect.in_image(scenario, image_env))
            out.append(CellCheck(env.name, host.name, scenario.name, e.verdict or None, e.verdicts, e.reason,
                                 simulated, plain))
    return out


def judge(env: Environment, cells: list[CellCheck], hosts: tuple[Host, ...]) -> Readiness:
    """Readiness of the environment as if every prediction were observed (the matrix's readiness, pure)."""
    by_host = {h.name: h for h in hosts}
    facts = []
    for c in cells:
        profile = expect.host_profile(by_host[c.host], None)
        facts.append(CellFacts(
            environment=c.environment, host=c.host, scenario=c.scenario,
            status=readiness.PASS if c.verdict else NOT_RUN,
            expected=c.verdict, observed=c.verdict, simulated=c.simulated, gpu_access=c.gpu_access,
            driver=profile.driver_version if profile else None, torch=env.torch, cuda=env.cuda,
            driver_cuda=profile.cuda_driver_version if profile else None,
            capability=profile.gpus[0].compute_capability if profile and profile.gpus else None,
            reason=c.reason))
    return readiness.judge(facts)[0]


def lines(r: Readiness) -> list[str]:
    """The readiness in the matrix console's words: where torch gets a GPU, then each refused host and its fix."""
    where = ", ".join(h.label for h in r.ready) if r.ready else "no host"
    out = [f"{r.environment}: torch would get a GPU on {where}"]
    out += [f"  no GPU: {line}" for line in readiness.grouped(r)]
    out += [f"  not predicted: {host}: {why}" for host, why in r.untested]
    return out
