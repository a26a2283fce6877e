"""The last check: can this wheel's compiled kernels run on these GPUs? (pure)"""

from __future__ import annotations

from harness import compat, cvd, remedy
from harness.classify.context import ARCH_WARN_RE, Context
from harness.schema import ARCH_UNSUPPORTED, ERROR, Finding

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
    for m in ARCH_WARN_RE.finditer(ctx.torch_texts):
        cc = f"{int(m.group(2))}.{m.group(3)}"
        if cc not in seen:
            seen.add(cc)
            findings.append(_finding(ctx, m.group(1).strip(), cc, arches or []))
    return findings


def _finding(ctx: Context, name: str, cc: str, arches: list[str]) -> Finding:
    evidence = [f"{name}: compute capability {cc} ({compat.sm_name(cc)})"]
    if arches:
        evidence.append(f"torch {ctx.torch.get('version') or ''} is compiled for {' '.join(arches)}".replace("  ", " "))
    evidence.append("no cubin of the same major at or below it, and no PTX at or below it to JIT "
                    "(kernels fail: 'no kernel image is available for execution on the device')")
    fixes = remedy.wheel_for_arch(ctx.torch.get("version"), cc, ctx.driver_cuda_version)
    return Finding(ARCH_UNSUPPORTED, ERROR, f"{name} ({compat.sm_name(cc)}) is not among this torch's compiled "
                   "architectures", tuple(evidence), tuple(fixes), LAYER)
