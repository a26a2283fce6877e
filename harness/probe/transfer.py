"""Host <-> device copies, pageable and pinned, each direction.

Pinned copies are timed by CUDA events on the stream; pageable ones are staged through a driver
bounce buffer, so they are timed on the host clock with synchronisation around them (probe facts).
Pinned copies are judged against the spec's host link per direction; pageable ones are reported, not
judged (no reference band: they are slower by design).
"""

from __future__ import annotations

from harness.probe import accounting, bands, buffers, results, stats
from harness.probe.devices import Target, torch_module
from harness.probe.sizes import Plan
from harness.probe.timing import time_samples
from harness.schema.probe_document import Measurement, ProbeParams

CPU_REASON = "no GPU: host<->device transfers need one"
IDS = ("transfer.h2d_pageable", "transfer.h2d_pinned", "transfer.d2h_pageable", "transfer.d2h_pinned")


def probe_transfers(target: Target, plan: Plan) -> list[Measurement]:
    """The four transfer measurements (SKIP on the CPU)."""
    if not target.cuda:
        return [results.skipped(mid, CPU_REASON) for mid in IDS]
    torch = torch_module()
    numel = plan.transfer_bytes // 4
    pageable = buffers.stream_array(torch, numel, torch.float32, "cpu")
    pinned = pageable.pin_memory()
    dev = torch.empty(numel, dtype=torch.float32, device="cuda")
    link = target.spec.host_link_gbps if target.spec else None
    kernels = (
        ("transfer.h2d_pageable", lambda: dev.copy_(pageable), True),
        ("transfer.h2d_pinned", lambda: dev.copy_(pinned, non_blocking=True), False),
        ("transfer.d2h_pageable", lambda: pageable.copy_(dev), True),
        ("transfer.d2h_pinned", lambda: pinned.copy_(dev, non_blocking=True), False),
    )
    what = f"{target.spec.host_link} x16 GB/s per direction" if target.spec else "link GB/s"
    out = []
    for mid, fn, host_timed in kernels:
        seconds = time_samples(fn, plan.transfer, True, host_timed=host_timed)
        rate = stats.median_rate(plan.transfer_bytes, seconds, accounting.gbps)
        band = None if host_timed else bands.BANDS["transfer.pinned"]
        out.append(results.measured(
            mid, unit="gbps", work=plan.transfer_bytes, seconds=seconds,
            convention=accounting.TRANSFER_CONVENTION, judgement=bands.judge(rate, link, band, what),
            reference=link,
            params=ProbeParams(bytes=plan.transfer_bytes, pinned=not host_timed,
                               timer="time.perf_counter + synchronize" if host_timed else "cuda events")))
    return out
