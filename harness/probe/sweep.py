"""The measured roofline: arithmetic-intensity sweeps whose points climb the memory roof to the compute roof.

Two sweeps (probe facts, "Roofline"): a GEMM shape sweep from skinny (m rows against an n x n
matrix: intensity ~m) to square (n/3 for bf16), which climbs to the tensor-core roof; and, on a GPU
in --full, a fused kernel `x = x*a + b` repeated k times through torch.compile, 2k FLOPs per 8 bytes
of fp32 traffic, which climbs to the CUDA-core roof. Chaining the op in eager torch would not raise
intensity (each op goes through memory again), which is why the fused sweep needs a compiler.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from harness.probe import accounting, bands, buffers, results, stats
from harness.probe.devices import Target, torch_module
from harness.probe.sizes import Plan
from harness.probe.timing import time_samples
from harness.schema.probe_document import Sweep, SweepPoint

LOG = logging.getLogger(__name__)
FMA_A, FMA_B = 0.999, 0.001  # keeps x bounded however many steps are chained


def _point(work: float, nbytes: float, seconds: list[float], *, m: int | None = None, n: int | None = None,
           k: int | None = None, steps: int | None = None, numel: int | None = None) -> SweepPoint:
    s = stats.summarize(work, seconds, accounting.tflops)
    return SweepPoint(round(work / nbytes, 3), s.median, s.samples, s.seconds_median, s.seconds_samples,
                      s.spread_percent, round(stats.median_rate(nbytes, seconds, accounting.gbps), 1),
                      m=m, n=n, k=k, steps=steps, numel=numel)


def gemm_sweep(target: Target, plan: Plan, dtype: str) -> Sweep:
    """(m, n, n) GEMMs for m from skinny to square, in `dtype` ('bf16' on a GPU, 'fp32' on the CPU)."""
    torch = torch_module()
    tdtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    n = plan.sweep_n
    points = []
    # The CPU fills its 64 MiB weight from a repeated randn block: the time goes to the points, not to randn.
    weight = buffers.stream_array(torch, n * n, tdtype, target.device).view(n, n)
    for m in plan.sweep_ms:
        x = torch.randn(m, n, dtype=tdtype, device=target.device)
        out = torch.empty(m, n, dtype=tdtype, device=target.device)
        seconds = time_samples(functools.partial(torch.mm, x, weight, out=out), plan.sweep, target.cuda)
        points.append(_point(accounting.gemm_flops(m, n, n), accounting.gemm_bytes(m, n, n, dtype), seconds,
                             m=m, n=n, k=n))
    return Sweep("gemm_shapes", dtype, bands.PASS, None, "each operand read once, the output written once",
                 buffers.describe(target.device, n * n), tuple(points))


def fused_sweep(target: Target, plan: Plan) -> Sweep:
    """x = x*a + b chained k times in one torch.compile kernel, fp32, for each k of the plan."""
    def sweep(status: str, reason: str | None, points: tuple[SweepPoint, ...] = ()) -> Sweep:
        return Sweep("fused_fma", "fp32", status, reason, "x read once and written once (8 bytes per element)",
                     points=points)

    if not plan.fused_steps:
        return sweep(bands.SKIP, f"not in the {plan.mode} suite on {plan.device}"
                     + (" (run --full on a GPU)" if plan.device == "cuda" else ""))
    torch = torch_module()
    if not hasattr(torch, "compile"):
        return sweep(bands.SKIP, f"torch {torch.__version__} has no torch.compile")
    x = torch.randn(plan.fused_numel, dtype=torch.float32, device=target.device)
    points = []
    try:
        for steps in plan.fused_steps:
            fn = torch.compile(_chain(steps), dynamic=False, fullgraph=True)
            seconds = time_samples(functools.partial(fn, x), plan.sweep, target.cuda)
            points.append(_point(accounting.fused_fma_flops(plan.fused_numel, steps),
                                 accounting.fused_fma_bytes(plan.fused_numel, 4), seconds,
                                 steps=steps, numel=plan.fused_numel))
    except Exception as exc:  # a missing compiler or Triton must not lose the rest of the suite
        LOG.warning("fused sweep stopped: %s", exc)
        return sweep(bands.SKIP, f"torch.compile failed: {results.describe_error(exc)}", tuple(points))
    return sweep(bands.PASS, None, tuple(points))


def _chain(steps: int) -> Any:
    def chain(x: Any) -> Any:
        for _ in range(steps):
            x = x * FMA_A + FMA_B
        return x

    return chain
