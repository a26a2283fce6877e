"""`run_probes`: the whole suite on one device, each probe guarded so one failure never loses the rest."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
import time
from collections.abc import Callable, Sequence

from harness.probe import bands, devices, gemm, memory_bw, precision, results, roofline, sweep, telemetry, transfer
from harness.probe.devices import ProbeError, Target, torch_module
from harness.probe.sizes import Plan, make_plan
from harness.schema.probe_document import (
    Measurement,
    PrecisionSection,
    ProbeDocument,
    RooflineSection,
    SpecSection,
    Sweep,
    TelemetrySection,
)

LOG = logging.getLogger(__name__)


def _release(cuda: bool) -> None:
    """Hand cached device memory back between probes, so one probe's buffers never crowd the next."""
    if cuda:
        torch_module().cuda.empty_cache()


def _guarded(ids: Sequence[str], probe: Callable[[], list[Measurement]], cuda: bool) -> list[Measurement]:
    """The probe's records, or FAIL records naming what it raised (the suite goes on, as in cog's doctor)."""
    try:
        return probe()
    except Exception as exc:
        LOG.warning("probe %s raised: %s", ", ".join(ids), exc)
        return [results.failed(mid, f"probe raised {results.describe_error(exc)}") for mid in ids]
    finally:
        _release(cuda)


def _one_gemm(target: Target, plan: Plan, dtype: str) -> list[Measurement]:
    return [gemm.probe_gemm(target, plan, dtype)]


def _spec_section(target: Target) -> SpecSection:
    if not target.cuda:
        return SpecSection(cpu_peak_estimate=target.cpu_peak)
    if target.match is None:
        return SpecSection()
    return SpecSection(target.match.info(), target.match.row())


def _roofline(target: Target, plan: Plan, measurements: list[Measurement]) -> RooflineSection:
    """The sweeps, and the measured ridge beside the spec's."""
    if target.cuda:
        dtype = "fp16" if gemm.skip_reason("bf16", "cuda", target.capability) else "bf16"
        spec_peak = target.spec.peak_tflops(dtype) if target.spec else None
        spec_bw = target.spec.bandwidth_gbps if target.spec else None
    else:
        dtype = "fp32"
        spec_peak = target.cpu_peak_tflops
        spec_bw = None
    sweeps = []
    runs: list[tuple[str, Callable[[], Sweep]]] = [
        ("gemm_shapes", functools.partial(sweep.gemm_sweep, target, plan, dtype)),
        ("fused_fma", functools.partial(sweep.fused_sweep, target, plan)),
    ]
    for name, run in runs:
        try:
            sweeps.append(run())
        except Exception as exc:
            sweeps.append(Sweep(name, dtype, bands.FAIL, f"sweep raised {results.describe_error(exc)}"))
        finally:
            _release(target.cuda)
    return roofline.summarize(measurements, sweeps, dtype, spec_peak, spec_bw)


def run_probes(mode: str = "quick", device: str = "auto") -> ProbeDocument:
    """Run the quick or full suite on 'auto', 'cuda' or 'cpu'; the refenv.probe JSON document.

    Raises ProbeError when the device asked for cannot be probed (e.g. 'cuda' without a usable GPU).
    """
    t0 = time.perf_counter()
    make_plan(mode, "cpu")  # rejects an unknown mode before anything is imported
    try:
        torch_module()
    except Exception as exc:  # an OSError from broken CUDA libraries as much as an ImportError
        return results.finish(ProbeDocument(
            mode=mode, device=device, notes=(f"torch is not importable: {results.describe_error(exc)}",),
            measurements=tuple(results.skipped(m, "torch is not importable") for m in results.GPU_IDS)))
    dev = devices.resolve_device(device)
    target = devices.gpu_target() if dev == "cuda" else devices.cpu_target()
    return run_suite(make_plan(mode, dev), target, t0)


def run_suite(plan: Plan, target: Target, t0: float | None = None) -> ProbeDocument:
    """Every probe of `plan` on `target`, timed from `t0` (default: now); the document."""
    t0 = time.perf_counter() if t0 is None else t0
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    notes = []
    if precision.tf32_override():
        notes.append(f"{precision.OVERRIDE_ENV}=1: cuBLAS runs float32 matmuls as TF32 whatever the "
                     "flags say; the fp32 GEMM figure is a TF32 figure")
    before = telemetry.read_telemetry(target.uuid) if target.cuda else None
    if not target.cuda:
        notes.append(f"CPU probes with {target.info.get('torch_threads')} torch threads; no GPU measured")
    at_start = PrecisionSection(precision.read_precision(), precision.tf32_override())

    measurements: list[Measurement] = []
    measurements += _guarded(("memory.copy", "memory.triad"), lambda: memory_bw.probe_memory(target, plan),
                             target.cuda)
    measurements += _guarded(transfer.IDS, lambda: transfer.probe_transfers(target, plan), target.cuda)
    for dtype in gemm.DTYPES:
        measurements += _guarded((f"gemm.{dtype}",), functools.partial(_one_gemm, target, plan, dtype),
                                 target.cuda)
    if not target.cuda:
        measurements += _guarded(("gemm.fp32_onednn",), lambda: [gemm.probe_onednn(target, plan)], False)
    roof = _roofline(target, plan, measurements)
    tele = TelemetrySection(before, telemetry.read_telemetry(target.uuid)) if before is not None else None
    doc = ProbeDocument(mode=plan.mode, device=target.device, started_utc=started,
                        environment=devices.environment(), device_info=target.info, spec=_spec_section(target),
                        precision=at_start, telemetry=tele, measurements=tuple(measurements), roofline=roof,
                        notes=tuple(notes))
    return results.finish(dataclasses.replace(doc, wall_seconds=round(time.perf_counter() - t0, 2)))


__all__ = ["ProbeError", "run_probes", "run_suite"]
