"""Judge the facts: findings with evidence and a fix, and one primary verdict (pure).

The checks run layer by layer — driver, then wheel and runtime, then visibility — and every finding
is kept; the primary verdict is the first failing one in VERDICTS order (DESIGN.md, "Verdicts").
A check that raises is recorded and the others still run (the shape of cog's doctor).
"""

from __future__ import annotations

from typing import Callable  # noqa: UP035  (collections.abc.Callable[...] is 3.9+; the harness runs on 3.8)

from harness import catalogue
from harness.catalogue.remedies import render
from harness.classify import arch, driver, pci, visibility, wheel
from harness.classify.context import Context
from harness.facts import Facts
from harness.schema import (
    DRIVER_BROKEN,
    NOT_VISIBLE,
    OK,
    SEVERITY_ERROR,
    SEVERITY_INFO,
    SEVERITY_WARNING,
    VERDICTS,
    Diagnosis,
    Finding,
    Remedy,
)

Check = Callable[[Context], "list[Finding]"]

CHECKS: tuple[Check, ...] = (
    pci.check_pci,           # first: what the bus shows comes before what the libraries say
    driver.check_presence,
    driver.check_health,
    wheel.check_import,
    wheel.check_cpu_wheel,
    wheel.check_driver_too_old,
    visibility.check_cuda_visible_devices,
    visibility.check_no_device,
    arch.check_arch,
)


def classify(facts: Facts) -> Diagnosis:
    """Every finding, and the primary verdict, for one set of facts."""
    ctx = Context(facts)
    findings: list[Finding] = []
    problems: list[str] = []
    for check in CHECKS:
        try:
            findings.extend(check(ctx))
        except Exception as exc:  # one broken check must not hide the others' findings
            problems.append(f"check {check.__name__} failed: {type(exc).__name__}: {exc}")
    failing = [f for f in findings if f.failing]
    findings.extend(_torch_outcome(ctx, bool(failing)))
    failing = [f for f in findings if f.failing]
    verdict = min((f.verdict for f in failing), key=VERDICTS.index) if failing else OK
    simulated = ctx.simulated is not None
    return Diagnosis(verdict, simulated, tuple(_ordered(findings)), tuple(_unknowns(ctx) + problems))


def _ordered(findings: list[Finding]) -> list[Finding]:
    """Failing findings first, in verdict order; then warnings; then context."""
    def key(f: Finding) -> tuple[int, int]:
        if f.failing:
            return 0, VERDICTS.index(f.verdict)
        return (1 if f.severity == SEVERITY_WARNING else 2), 0
    return sorted(findings, key=key)


def _torch_outcome(ctx: Context, explained: bool) -> list[Finding]:
    """What torch itself concluded, reconciled with the findings above."""
    t = ctx.torch
    available = t.get("is_available")
    if available is True:
        count = t.get("device_count")
        seen = f"torch sees {count} CUDA device(s)" if count is not None else "torch sees CUDA"
        return [Finding(OK, SEVERITY_INFO, seen, (f"torch.cuda.is_available() = True{_count(count)}",),
                        layer="torch")]
    if available is not False:
        return []
    said = [f"torch.cuda.is_available() = False{_count(t.get('device_count'))}"]
    if t.get("init_warning"):
        said.append(f"torch warned: {catalogue.torch_message(t['init_warning'], None)}")
    if t.get("init_error"):
        said.append(f"torch.cuda.init(): {t['init_error']}")
    if ctx.simulated is not None and ctx.runtime_accepted_simulated:
        stage = ctx.stage
        evidence = [f"the CUDA runtime accepted the simulated driver: it queried the driver version, then "
                    f"called cuInit (result {stage.get('cuinit_result')}), with {len(ctx.simulated_visible)} "
                    "device(s) visible",
                    "the simulated driver stops there (it offers no export tables), so torch then reports an "
                    "error; device work is not tested on a simulated host", *said]
        return [Finding(OK if not explained else "", SEVERITY_INFO,
                        "simulated: this stack would start on a real driver of this version", tuple(evidence),
                        layer="torch")]
    if explained:
        return [Finding("", SEVERITY_INFO, "what torch says", tuple(said), layer="torch")]
    if ctx.torch_texts and ctx.torch_texts.strip() != catalogue.entry("torch.no_gpus").text:
        remedy = Remedy("check_logs", (("hint", "see torch's message above; run nvidia-smi and check dmesg"),))
        return [Finding(DRIVER_BROKEN, SEVERITY_ERROR,
                        "torch cannot use CUDA, for a reason the other checks do not explain", tuple(said),
                        render(remedy), "torch", remedy)]
    started = driver.launch_remedy(ctx)
    if started is not None and ctx.vis.get("gpu_requested") is False:
        # The report shows how the work was started, and that start asks for no GPU.
        return [Finding(NOT_VISIBLE, SEVERITY_ERROR, f"{driver.launch_words(ctx)} asks for no GPU, so torch "
                        "sees none", (*said, *driver.launch_evidence(ctx)), render(started), "torch", started)]
    remedy = Remedy("expose_devices", (("where", "unknown"),))
    return [Finding(NOT_VISIBLE, SEVERITY_ERROR, "torch sees no CUDA device and says nothing about why", tuple(said),
                    render(remedy), "torch", remedy)]


def _count(count: int | None) -> str:
    """', device_count() = N' where torch's count is known; nothing where it is not (no placeholder)."""
    return f", device_count() = {count}" if count is not None else ""


def _unknowns(ctx: Context) -> list[str]:
    out = []
    if ctx.libcuda.get("loaded") is None:
        out.append("whether libcuda.so.1 loads and what cuInit returns")
    if ctx.driver_cuda_version is None and ctx.libcuda.get("loaded") is not False:
        out.append("the CUDA version the driver supports")
    if ctx.torch.get("importable") is None and not ctx.torch.get("version"):
        out.append("which torch is installed")
    if ctx.vis.get("in_container") is None and ctx.facts.get("source") == "probed":
        out.append("whether it runs in a container")
    if ctx.nvml.get("devices") is None and ctx.torch.get("devices") is None:
        out.append("the GPU models and their compute capabilities")
    return out
