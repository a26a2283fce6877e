"""GEMM throughput per dtype: fp32 (IEEE, forced), tf32, bf16, fp16 and fp8 through torch._scaled_mm.

Square n x n x n products on randn data, FLOPs 2*n^3. The float32 precision is forced for fp32 and
tf32 and recorded. bf16 below compute capability 8.0 is emulated, TF32 needs 8.0, fp8 needs 8.9
(probe facts): those are skipped with the reason. On the CPU only fp32 is probed, by torch.mm and,
where torch bundles it, by oneDNN's matmul, so a slow default BLAS shows as the gap between the two.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from harness.probe import accounting, bands, precision, results, stats, telemetry
from harness.probe.devices import Target, torch_module
from harness.probe.sizes import Plan
from harness.probe.timing import time_samples
from harness.schema.probe_document import Measurement, ProbeParams

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


def skip_reason(dtype: str, device: str, capability: tuple[int, int] | None) -> str | None:
    """Why the `dtype` GEMM is not probed on this device, or None when it is."""
    if device == "cpu":
        return None if dtype == "fp32" else "CPU: only the fp32 GEMM is probed"
    if capability is None:
        return None
    if dtype == "tf32" and capability < (8, 0):
        return f"TF32 tensor cores need compute capability 8.0+ (this is {capability[0]}.{capability[1]})"
    if dtype == "bf16" and capability < (8, 0):
        return (f"bf16 is emulated below compute capability 8.0 (this is {capability[0]}.{capability[1]}): "
                "no peak to measure")
    if dtype == "fp8" and capability < (8, 9):
        return f"fp8 GEMMs need compute capability 8.9+ (this is {capability[0]}.{capability[1]})"
    return None


def operands(torch: Any, dtype: str, n: int, device: str) -> tuple[Any, Any]:
    """Two n x n randn operands in `dtype` (fp8: e4m3, the second column-major)."""
    if dtype == "fp8":
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        # torch._scaled_mm wants its second operand column-major.
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()
        return a, b
    tdtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    return torch.randn(n, n, device=device, dtype=tdtype), torch.randn(n, n, device=device, dtype=tdtype)


def kernel(torch: Any, dtype: str, a: Any, b: Any) -> Any:
    """A no-argument callable running one a @ b in `dtype` into a preallocated output."""
    if dtype == "fp8":
        one = torch.ones((), device=a.device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                        use_fast_accum=True)
    out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    return lambda: torch.mm(a, b, out=out)


def _judge(target: Target, dtype: str, rate: float) -> tuple[bands.Judgement, list[str]]:
    if not target.cuda:
        peak = target.cpu_peak_tflops
        given = (f" of the {target.cpu_peak.cores:g} CPU(s) given, set by {target.cpu_peak.given_by},"
                 if target.cpu_peak else "")
        judged = bands.judge(rate, peak, bands.BANDS["cpu.gemm.fp32"], f"the estimated peak{given} TFLOP/s")
        if judged.percent_of_peak is not None and judged.percent_of_peak > 100:
            judged = dataclasses.replace(judged, reason=judged.reason + "; above the estimate: the cores run "
                                         "faster than the clock the OS reports, so the estimate is a floor")
        return judged, []
    peak = target.spec.peak_tflops(dtype) if target.spec else None
    if dtype == "fp32":
        judgement, above = bands.judge_fp32(rate, peak, precision.tf32_override())
        return judgement, ["fp32_above_peak"] if above else []
    return bands.judge(rate, peak, bands.BANDS[f"gemm.{dtype}"], "spec TFLOP/s"), []


def probe_gemm(target: Target, plan: Plan, dtype: str) -> Measurement:
    """One GEMM measurement (or its SKIP)."""
    mid = f"gemm.{dtype}"
    reason = skip_reason(dtype, target.device, target.capability)
    if reason:
        return results.skipped(mid, reason)
    torch = torch_module()
    if dtype == "fp8" and not hasattr(torch, "_scaled_mm"):
        return results.skipped(mid, f"torch {torch.__version__} has no torch._scaled_mm")
    n = plan.gemm_n
    mode = "tf32" if dtype == "tf32" else "ieee"
    guard = precision.forced(mode) if dtype in ("fp32", "tf32") else contextlib.nullcontext(None)
    with guard as flags:
        a, b = operands(torch, dtype, n, target.device)
        seconds = time_samples(kernel(torch, dtype, a, b), plan.gemm, target.cuda)
        del a, b
    work = accounting.gemm_flops(n, n, n)
    rate = stats.median_rate(work, seconds, accounting.tflops)
    judgement, flags_raised = _judge(target, dtype, rate)
    params = ProbeParams(m=n, n=n, k=n, dtype=dtype, data="randn",
                         timer="cuda events" if target.cuda else "time.perf_counter")
    if flags is not None:
        params["precision"] = flags
    if dtype == "fp8":
        params["format"], params["out_dtype"], params["use_fast_accum"] = "float8_e4m3fn", "bf16", True
    if target.cuda:
        params["telemetry_after"] = telemetry.read_telemetry(target.uuid)
    reference = (target.spec.peak_tflops(dtype) if target.spec else None) if target.cuda else target.cpu_peak_tflops
    return results.measured(mid, unit="tflops", work=work, seconds=seconds,
                             convention=accounting.GEMM_CONVENTION, judgement=judgement,
                             reference=reference, params=params, flags=flags_raised)


def probe_onednn(target: Target, plan: Plan) -> Measurement:
    """The CPU fp32 GEMM through torch's bundled oneDNN (x @ w.T), beside torch.mm's."""
    mid = "gemm.fp32_onednn"
    torch = torch_module()
    try:
        op = torch.ops.mkldnn._linear_pointwise
    except (AttributeError, RuntimeError):
        return results.skipped(mid, f"torch {torch.__version__} has no oneDNN linear on this build")
    if not torch.backends.mkldnn.is_available():
        return results.skipped(mid, "torch reports oneDNN unavailable")
    n = plan.gemm_n
    x, w = operands(torch, "fp32", n, "cpu")
    seconds = time_samples(lambda: op(x, w, None, "none", [], ""), plan.gemm, False)
    work = accounting.gemm_flops(n, n, n)
    rate = stats.median_rate(work, seconds, accounting.tflops)
    judgement, _ = _judge(target, "fp32", rate)
    return results.measured(mid, unit="tflops", work=work, seconds=seconds,
                             convention=accounting.GEMM_CONVENTION, judgement=judgement,
                             reference=target.cpu_peak_tflops,
                             params=ProbeParams(m=n, n=n, k=n, dtype="fp32", data="randn",
                                                op="torch.ops.mkldnn._linear_pointwise", timer="time.perf_counter"))
