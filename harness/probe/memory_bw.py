"""Memory bandwidth: STREAM-style copy and triad on buffers far larger than the last cache level.

On a GPU: fp32 buffers of max(16-32 x L2, 1-2 GiB) (L2 read from the device properties). On the CPU:
fp64 arrays of at least 4x the last-level cache, as STREAM asks. Copy counts read + write (2x the
buffer); triad `a = b + s*c` is one fused torch kernel (`torch.add(b, c, alpha=s, out=a)`), 3x.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.probe import accounting, bands, buffers, results, stats
from harness.probe.devices import Target, torch_module
from harness.probe.sizes import Plan, buffer_bytes
from harness.probe.timing import time_samples
from harness.schema.probe_document import Measurement, ProbeParams

TRIAD_SCALAR = 3.0


def plan_numel(target: Target, plan: Plan, elem_bytes: int) -> tuple[int, int]:
    """(elements per buffer, bytes per buffer) for this target and plan."""
    cap = int(target.free_bytes * plan.buffer_cap_fraction) if target.free_bytes else None
    nbytes = buffer_bytes(target.cache_bytes, plan.cache_multiple, plan.buffer_floor_bytes, cap)
    return nbytes // elem_bytes, nbytes // elem_bytes * elem_bytes


def _judge(target: Target, gbps: float) -> bands.Judgement:
    if target.cuda:
        spec = target.spec.bandwidth_gbps if target.spec else None
        return bands.judge(gbps, spec, bands.BANDS["memory"], "spec GB/s")
    return bands.judge(gbps, None, None, "spec memory bandwidth")


def stream_kernels(torch: Any, a: Any, b: Any, c: Any) -> list[tuple[str, Callable[[], object], int, str]]:
    """(id, kernel, bytes per call, convention) of copy `b = a` and triad `a = b + s*c` over 1-D arrays."""
    numel, elem = a.numel(), a.element_size()
    return [
        ("memory.copy", lambda: b.copy_(a), accounting.copy_bytes(numel, elem), accounting.COPY_CONVENTION),
        ("memory.triad", lambda: torch.add(b, c, alpha=TRIAD_SCALAR, out=a),
         accounting.triad_bytes(numel, elem), accounting.TRIAD_CONVENTION),
    ]


def probe_memory(target: Target, plan: Plan) -> list[Measurement]:
    """The copy and triad measurements."""
    torch = torch_module()
    dtype, name = (torch.float32, "fp32") if target.cuda else (torch.float64, "fp64")
    elem = accounting.element_bytes(name)
    numel, nbytes = plan_numel(target, plan, elem)
    a = buffers.stream_array(torch, numel, dtype, target.device)
    b = buffers.stream_array(torch, numel, dtype, target.device)
    c = buffers.stream_array(torch, numel, dtype, target.device)
    params = ProbeParams(
        dtype=name,
        numel=numel,
        buffer_bytes=nbytes,
        cache_bytes=target.cache_bytes,
        buffer_over_cache=round(nbytes / target.cache_bytes, 1) if target.cache_bytes else None,
        data=buffers.describe(target.device, numel),
        timer="cuda events" if target.cuda else "time.perf_counter",
    )
    out = []
    for mid, fn, work, convention in stream_kernels(torch, a, b, c):
        seconds = time_samples(fn, plan.memory, target.cuda)
        rate = stats.median_rate(work, seconds, accounting.gbps)
        out.append(results.measured(
            mid, unit="gbps", work=work, seconds=seconds, convention=convention,
            judgement=_judge(target, rate),
            reference=target.spec.bandwidth_gbps if target.cuda and target.spec else None,
            params=params))
    return out
