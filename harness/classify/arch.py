"""The last check: can this wheel's compiled kernels run on these GPUs? (pure)"""

from __future__ import annotations

from harness import catalogue, compat, cvd
from harness.catalogue.remedies import render
from harness.classify.context import Context
from harness.schema import ARCH_UNSUPPORTED, SEVERITY_ERROR, Finding, Remedy

LAYER = "wheel"


def _visible_gpus(ctx: Context) -> list[dict[str, object]]:
    gpus = [dict(g) for g in ctx.gpus]
    value = ctx.vis.get("cuda_visible_devices")
    uuids = [str(g.get("uuid")) for g in gpus]
    if value is None or not all(g.get("uuid") for g in gpus):
        return gpus
    return [gpus[i] for i in cvd.parse(value, uuids).visible]


def check_arch(ctx: Context) -> list[Finding]:
    t = ctx.torch
    arches = t.get("arch_list")
    findings: list[Finding] = []
    seen: set[str] = set()
    if arches:
        for gpu in _visible_gpus(ctx):
            cc = gpu.get("compute_capability")
            if not cc or compat.arch_supports(str(cc), arches) or str(cc) in seen:
                continue
            seen.add(str(cc))
            findings.append(_finding(ctx, str(gpu.get("name") or "this GPU"), str(cc), arches))
    for hit in ctx.torch_hits:
        if hit.id != "torch.arch_not_compatible":
            continue
        sm = hit.params["sm"]
        cc = f"{int(sm[:-1])}.{sm[-1]}"
        if cc not in seen:
            seen.add(cc)
            findings.append(_finding(ctx, hit.params["name"].strip(), cc, arches or []))
    if not findings and not arches and ctx.said("cuda.no_kernel_image"):
        # The runtime found no kernel for a device, the build's architectures are unknown: the GPU it ran on
        # is the one whose capability the build lacks (of several, the oldest: a build covers newer ones first).
        known = [g for g in _visible_gpus(ctx) if g.get("compute_capability")]
        if known:
            gpu = min(known, key=lambda g: compat.parse_version(str(g["compute_capability"])))
            findings.append(_finding(ctx, str(gpu.get("name") or "this GPU"), str(gpu["compute_capability"]), []))
    return findings


def _finding(ctx: Context, name: str, cc: str, arches: list[str]) -> Finding:
    named = ctx.said("cuda.no_kernel_image")
    evidence = [f"{name}: compute capability {cc} ({compat.sm_name(cc)})"]
    if named is not None and not arches:
        evidence.append(f"the CUDA runtime says '{named.text}': the build has no kernel for {compat.sm_name(cc)}")
        return _arch_finding(ctx, name, cc, evidence)
    if arches:
        evidence.append(f"torch {ctx.torch.get('version') or ''} is compiled for {' '.join(arches)}".replace("  ", " "))
    evidence.append("no cubin of the same major at or below it, and no PTX at or below it to JIT "
                    f"(kernels fail: '{catalogue.entry('cuda.no_kernel_image').text}')")
    return _arch_finding(ctx, name, cc, evidence)


def _arch_finding(ctx: Context, name: str, cc: str, evidence: list[str]) -> Finding:
    remedy = Remedy("install_wheel").with_params(torch=ctx.torch.get("version"), capability=cc,
                                                 driver_cuda=ctx.driver_cuda_version)
    return Finding(ARCH_UNSUPPORTED, SEVERITY_ERROR,
                   f"{name} ({compat.sm_name(cc)}) is not among this torch's compiled architectures",
                   tuple(evidence), render(remedy), LAYER, remedy)
