"""The wheel layer: a CPU-only torch, or a torch whose CUDA runtime needs a newer driver (pure)."""

from __future__ import annotations

from harness import catalogue, compat
from harness.catalogue import wheels
from harness.catalogue.remedies import render
from harness.classify.context import Context, fmt_driver
from harness.schema import CPU_WHEEL, DRIVER_TOO_OLD, SEVERITY_ERROR, SEVERITY_INFO, SEVERITY_WARNING, Finding, Remedy

LAYER = "wheel"


def check_import(ctx: Context) -> list[Finding]:
    t = ctx.torch
    if t.get("error"):
        return [Finding("", SEVERITY_WARNING, "torch could not be examined", (str(t["error"]),), layer=LAYER)]
    if t.get("importable") is False:
        fixes = (wheels.wheel_for_driver(None, ctx.driver_cuda_version) if ctx.driver_cuda_version
                 else ["pip install torch", f"the driver is not known: {wheels.driver_for_torch(None)}"])
        return [Finding("", SEVERITY_WARNING, "torch is not importable here, so the wheel layer cannot be judged",
                        (f"import torch: {t.get('import_error')}",), tuple(fixes), LAYER)]
    if t.get("version"):
        cuda = t.get("cuda")
        cudart, hip = t.get("cudart_version"), t.get("hip")
        runtime = f"bundled CUDA runtime {compat.int_to_cuda(cudart)}" if cudart else None
        built = f"built for CUDA {cuda}" if cuda else (f"built for ROCm {hip}" if hip else "CPU-only")
        return [Finding("", SEVERITY_INFO, f"torch {t['version']}, {built}",
                        tuple(x for x in (runtime, t.get("cuda_runtime_package")) if x), layer=LAYER)]
    return []


def check_cpu_wheel(ctx: Context) -> list[Finding]:
    if not ctx.cpu_wheel:
        return []
    t = ctx.torch
    version = t.get("version") or ""
    evidence = [f"torch.__version__ = {version!r}" if version else "torch version unknown",
                "torch.version.cuda = None (no CUDA in this build)"]
    said = ctx.said("torch.not_compiled")
    if said:
        evidence.append(f"torch: {said.text}")
    dcv = ctx.driver_cuda_version
    if dcv:
        evidence.append(f"this machine's {fmt_driver(ctx)}")
    remedy = Remedy("install_wheel").with_params(torch=version or None, driver_cuda=dcv)
    return [Finding(CPU_WHEEL, SEVERITY_ERROR, "this torch is a CPU-only build: it cannot use a GPU",
                    tuple(evidence), render(remedy), LAYER, remedy)]


def check_driver_too_old(ctx: Context) -> list[Finding]:
    t = ctx.torch
    cuda = t.get("cuda")
    dcv = ctx.driver_cuda_version
    found = ctx.too_old_found
    if not cuda or not dcv:
        if found is None:
            return []
    elif compat.runtime_accepts(cuda, dcv) and found is None:
        return []
    dcv = dcv or found
    assert dcv is not None
    bundles = (f"torch {t.get('version') or ''} bundles the CUDA {cuda} runtime".replace("  ", " ") if cuda else
               f"torch{' ' + str(t.get('version')) if t.get('version') else ''} bundles a CUDA runtime newer than the "
               "driver supports (torch's message says so; the report does not name that runtime)")
    evidence = [bundles,
                f"the driver reports CUDA {compat.int_to_cuda(dcv)} (cuDriverGetVersion = {dcv})"
                + (f", driver {ctx.driver_string}" if ctx.driver_string else "")]
    if cuda:
        floor = compat.minor_floor(compat.parse_version(cuda)[0])
        if floor:
            evidence.append(f"a CUDA {compat.parse_version(cuda)[0]}.x runtime needs a driver reporting >= "
                            f"{floor[1]} (>= {floor[0]})")
    warning = ctx.torch.get("init_warning")
    if warning:
        said = warning.split(". Please")[0]
        evidence.append(f"torch: {catalogue.torch_message(said, None)}.")
    # The driver update first, then a torch this driver runs (torch's own message offers both, in that order).
    remedy = Remedy("install_driver").with_params(action="upgrade", cuda=cuda, torch=t.get("version"),
                                                  driver_cuda=dcv)
    fixes = render(remedy)
    title = f"the driver is too old for this torch's CUDA {cuda or ''} runtime".replace("  ", " ")
    return [Finding(DRIVER_TOO_OLD, SEVERITY_ERROR, title, tuple(evidence), fixes, LAYER, remedy)]
