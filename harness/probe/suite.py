"""`run_probes`: the whole suite on one device, each probe guarded so one failure never loses the rest."""

from __future__ import annotations

import datetime
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from harness.probe import devices, gemm, memory_bw, precision, results, roofline, sweep, telemetry, transfer
from harness.probe.devices import ProbeError, Target, torch_module
from harness.probe.sizes import Plan, make_plan

LOG = logging.getLogger(__name__)


def _release(cuda: bool) -> None:
    """Hand cached device memory back between probes, so one probe's buffers never crowd the next."""
    if cuda:
        torch_module().cuda.empty_cache()


def _guarded(ids: Sequence[str], probe: Callable[[], list[dict[str, Any]]], cuda: bool) -> list[dict[str, Any]]:
    """The probe's records, or FAIL records naming what it raised (the suite goes on, as in cog's doctor)."""
    try:
        return probe()
    except Exception as exc:
        LOG.warning("probe %s raised: %s", ", ".join(ids), exc)
        return [results.failed(mid, f"probe raised {results.describe_error(exc)}") for mid in ids]
    finally:
        _release(cuda)


def _one_gemm(target: Target, plan: Plan, dtype: str) -> list[dict[str, Any]]:
    return [gemm.probe_gemm(target, plan, dtype)]


def _spec_section(target: Target) -> dict[str, Any]:
    if not target.cuda:
        return {"match": None, "row": None, "cpu_peak_estimate": target.cpu_peak}
    row = None
    if target.spec:
        row = {k: v for k, v in asdict(target.spec).items() if k not in ("family", "match", "exclude", "aliases")}
    return {"match": target.match.to_dict() if target.match else None, "row": row, "cpu_peak_estimate": None}


def _roofline(target: Target, plan: Plan, measurements: list[dict[str, Any]]) -> dict[str, Any]:
    """The sweeps, and the measured ridge beside the spec's."""
    if target.cuda:
        dtype = "fp16" if gemm.skip_reason("bf16", "cuda", target.capability) else "bf16"
        spec_peak = target.spec.peak_tflops(dtype) if target.spec else None
        spec_bw = target.spec.bandwidth_gbps if target.spec else None
    else:
        dtype = "fp32"
        spec_peak = target.cpu_peak["gflops"] / 1000.0 if target.cpu_peak else None
        spec_bw = None
    sweeps = []
    runs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("gemm_shapes", functools.partial(sweep.gemm_sweep, target, plan, dtype)),
        ("fused_fma", functools.partial(sweep.fused_sweep, target, plan)),
    ]
    for name, run in runs:
        try:
            sweeps.append(run())
        except Exception as exc:
            sweeps.append({"method": name, "dtype": dtype, "status": "FAIL", "points": [],
                           "reason": f"sweep raised {results.describe_error(exc)}"})
        finally:
            _release(target.cuda)
    return roofline.summarize(measurements, sweeps, dtype, spec_peak, spec_bw)


def run_probes(mode: str = "quick", device: str = "auto") -> dict[str, Any]:
    """Run the quick or full suite on 'auto', 'cuda' or 'cpu'; the refenv.probe JSON document.

    Raises ProbeError when the device asked for cannot be probed (e.g. 'cuda' without a usable GPU).
    """
    t0 = time.perf_counter()
    make_plan(mode, "cpu")  # rejects an unknown mode before anything is imported
    try:
        torch_module()
    except Exception as exc:  # an OSError from broken CUDA libraries as much as an ImportError
        doc = results.new_document(mode, device)
        doc["notes"].append(f"torch is not importable: {results.describe_error(exc)}")
        doc["measurements"] = [results.skipped(m, "torch is not importable") for m in results.GPU_IDS]
        return results.finish(doc)
    dev = devices.resolve_device(device)
    target = devices.gpu_target() if dev == "cuda" else devices.cpu_target()
    return run_suite(make_plan(mode, dev), target, t0)


def run_suite(plan: Plan, target: Target, t0: float | None = None) -> dict[str, Any]:
    """Every probe of `plan` on `target`, timed from `t0` (default: now); the document."""
    t0 = time.perf_counter() if t0 is None else t0
    doc = results.new_document(plan.mode, target.device)
    doc["started_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    doc.update(environment=devices.environment(), device_info=target.info, spec=_spec_section(target))
    doc["precision"] = {"at_start": precision.read_precision(), "tf32_override": precision.tf32_override()}
    if precision.tf32_override():
        doc["notes"].append(f"{precision.OVERRIDE_ENV}=1: cuBLAS runs float32 matmuls as TF32 whatever the "
                            "flags say; the fp32 GEMM figure is a TF32 figure")
    if target.cuda:
        doc["telemetry"] = {"before": telemetry.read_telemetry(target.uuid), "after": None}
    else:
        doc["notes"].append(f"CPU probes with {target.info.get('torch_threads')} torch threads; no GPU measured")

    measurements: list[dict[str, Any]] = []
    measurements += _guarded(("memory.copy", "memory.triad"), lambda: memory_bw.probe_memory(target, plan),
                             target.cuda)
    measurements += _guarded(transfer.IDS, lambda: transfer.probe_transfers(target, plan), target.cuda)
    for dtype in gemm.DTYPES:
        measurements += _guarded((f"gemm.{dtype}",), functools.partial(_one_gemm, target, plan, dtype),
                                 target.cuda)
    if not target.cuda:
        measurements += _guarded(("gemm.fp32_onednn",), lambda: [gemm.probe_onednn(target, plan)], False)
    doc["measurements"] = measurements
    doc["roofline"] = _roofline(target, plan, measurements)
    if target.cuda:
        doc["telemetry"]["after"] = telemetry.read_telemetry(target.uuid)
    doc["wall_seconds"] = round(time.perf_counter() - t0, 2)
    return results.finish(doc)


__all__ = ["ProbeError", "run_probes", "run_suite"]
