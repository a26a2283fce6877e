"""The probe's result document: measurement records, the waived-GPU document, the overall status.

A versioned document after nvbandwidth and DCGM: `{"schema": "refenv.probe", "version": 1, ...}`,
numbers as numbers with units in key names (`gbps_median`, `tflops_median`), null for missing,
samples beside every median, and a status per measurement (PASS / WARN / FAIL / SKIP with reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.probe import accounting, bands, stats

SCHEMA = "refenv.probe"
VERSION = 1

# Every measurement the suite knows, in report order, with its title.
TITLES = {
    "memory.copy": "device memory copy",
    "memory.triad": "device memory triad",
    "transfer.h2d_pageable": "host to device, pageable",
    "transfer.h2d_pinned": "host to device, pinned",
    "transfer.d2h_pageable": "device to host, pageable",
    "transfer.d2h_pinned": "device to host, pinned",
    "gemm.fp32": "GEMM fp32 (IEEE)",
    "gemm.tf32": "GEMM tf32",
    "gemm.bf16": "GEMM bf16",
    "gemm.fp16": "GEMM fp16",
    "gemm.fp8": "GEMM fp8 (e4m3, torch._scaled_mm)",
    "gemm.fp32_onednn": "GEMM fp32 through oneDNN (CPU)",
}
GPU_IDS = tuple(i for i in TITLES if i != "gemm.fp32_onednn")
UNITS = {"gbps": "GB/s", "tflops": "TFLOP/s"}


def describe_error(exc: BaseException) -> str:
    """'TypeName: first line of the message', short enough for a report row."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__


def skipped(mid: str, reason: str) -> dict[str, Any]:
    """A waived measurement: SKIP and the reason, no figures."""
    return {"id": mid, "title": TITLES.get(mid, mid), "status": bands.SKIP, "reason": reason}


def failed(mid: str, reason: str) -> dict[str, Any]:
    """A measurement whose probe raised: FAIL with what it raised; the suite goes on."""
    return {"id": mid, "title": TITLES.get(mid, mid), "status": bands.FAIL, "reason": reason}


def measured(mid: str, *, unit: str, work: float, seconds: Sequence[float], convention: str,
             judgement: bands.Judgement, reference: float | None, params: dict[str, Any],
             flags: Sequence[str] = ()) -> dict[str, Any]:
    """A measurement record: median and samples in `unit` ('gbps' or 'tflops'), and its judgement."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")
    to_rate = accounting.gbps if unit == "gbps" else accounting.tflops
    record: dict[str, Any] = {
        "id": mid,
        "title": TITLES.get(mid, mid),
        "status": judgement.status,
        "reason": judgement.reason,
        "unit": UNITS[unit],
    }
    record.update(stats.summarize(unit, work, seconds, to_rate))
    record.update({
        ("bytes_per_call" if unit == "gbps" else "flops_per_call"): int(work),
        "convention": convention,
        f"reference_{unit}": reference,
        "percent_of_peak": judgement.percent_of_peak,
        "band": judgement.band.to_dict() if judgement.band else None,
        "flags": list(flags),
        "params": params,
    })
    return record


def figure(record: dict[str, Any]) -> float | None:
    """The median figure of a record (GB/s or TFLOP/s), or None when it has none."""
    for key in ("gbps_median", "tflops_median"):
        if isinstance(record.get(key), (int, float)):
            return float(record[key])
    return None


def by_id(doc: dict[str, Any], mid: str) -> dict[str, Any] | None:
    """The measurement `mid` of a document, or None."""
    for record in doc.get("measurements", []):
        if record.get("id") == mid:
            return dict(record)
    return None


def new_document(mode: str, device: str) -> dict[str, Any]:
    """An empty document of the current schema; every section present, unknowns null."""
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "mode": mode,
        "device": device,
        "status": bands.SKIP,
        "waived": None,
        "started_utc": None,
        "wall_seconds": None,
        "environment": {},
        "device_info": {},
        "spec": None,
        "precision": None,
        "telemetry": None,
        "measurements": [],
        "roofline": None,
        "notes": [],
    }


def finish(doc: dict[str, Any]) -> dict[str, Any]:
    """Set the document's status: the worst of its measurements and sweeps (SKIP when none ran)."""
    sweeps = (doc.get("roofline") or {}).get("sweeps", [])
    doc["status"] = bands.worst_status([m["status"] for m in doc["measurements"]] + [s["status"] for s in sweeps])
    return doc


def waived_gpu(reason: str) -> dict[str, Any]:
    """The document for a host where GPU probes cannot run (a simulated driver): every one SKIP, with why."""
    doc = new_document("waived", "cuda")
    doc["waived"] = reason
    doc["measurements"] = [skipped(mid, reason) for mid in GPU_IDS]
    doc["notes"].append("GPU probes waived: device work is only ever measured on a real GPU")
    return finish(doc)


def check_document(doc: Any, where: str = "probe document") -> dict[str, Any]:
    """The document itself if it is a refenv.probe document this code reads; ValueError naming what is off."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"{where}: schema is {doc.get('schema')!r}, expected {SCHEMA!r} "
                         "(write one with `python -m harness probe --json --out FILE`)")
    if doc.get("version") != VERSION:
        raise ValueError(f"{where}: version {doc.get('version')!r} is not {VERSION}")
    if not isinstance(doc.get("measurements"), list):
        raise ValueError(f"{where}: 'measurements' must be a list")
    return doc
