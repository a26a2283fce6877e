"""The probe's result document (harness/schema/probe_document.py): its measurements, the waived-GPU
document, the overall status, and the check a saved document passes before its figures are read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.probe import accounting, bands, stats
from harness.schema.jsondata import DecodeError, decode
from harness.schema.probe_document import (
    PROBE_SCHEMA,
    PROBE_VERSION,
    Figures,
    Measurement,
    ProbeDocument,
    ProbeParams,
)

SCHEMA = PROBE_SCHEMA
VERSION = PROBE_VERSION

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


def describe_error(exc: BaseException) -> str:
    """'TypeName: first line of the message', short enough for a report row."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__


def skipped(mid: str, reason: str) -> Measurement:
    """A waived measurement: SKIP and the reason, no figures."""
    return Measurement(mid, TITLES.get(mid, mid), bands.SKIP, reason)


def failed(mid: str, reason: str) -> Measurement:
    """A measurement whose probe raised: FAIL with what it raised; the suite goes on."""
    return Measurement(mid, TITLES.get(mid, mid), bands.FAIL, reason)


def measured(mid: str, *, unit: str, work: float, seconds: Sequence[float], convention: str,
             judgement: bands.Judgement, reference: float | None, params: ProbeParams,
             flags: Sequence[str] = ()) -> Measurement:
    """A measurement record: median and samples in `unit` ('gbps' or 'tflops'), and its judgement."""
    if unit not in ("gbps", "tflops"):
        raise ValueError(f"unknown unit {unit!r}; expected one of gbps, tflops")
    s = stats.summarize(work, seconds, accounting.gbps if unit == "gbps" else accounting.tflops)
    figures = Figures(unit, s.median, s.samples, s.seconds_median, s.seconds_samples, s.spread_percent, int(work),
                      convention, reference, judgement.percent_of_peak, judgement.band, tuple(flags), params)
    return Measurement(mid, TITLES.get(mid, mid), judgement.status, judgement.reason, figures)


def figure(record: Measurement | None) -> float | None:
    """The median figure of a record (GB/s or TFLOP/s), or None when it has none."""
    return record.median if record is not None else None


def new_document(mode: str, device: str) -> ProbeDocument:
    """An empty document of the current schema; every section present, unknowns null."""
    return ProbeDocument(mode=mode, device=device)


def finish(doc: ProbeDocument) -> ProbeDocument:
    """The document with its status: the worst of its measurements and sweeps (SKIP when none ran)."""
    sweeps = doc.roofline.sweeps if doc.roofline else ()
    status = bands.worst_status([m.status for m in doc.measurements] + [s.status for s in sweeps])
    return dataclasses.replace(doc, status=status)


def waived_gpu(reason: str) -> ProbeDocument:
    """The document for a host where GPU probes cannot run (a simulated driver): every one SKIP, with why."""
    return finish(ProbeDocument(mode="waived", device="cuda", waived=reason,
                                measurements=tuple(skipped(mid, reason) for mid in GPU_IDS),
                                notes=("GPU probes waived: device work is only ever measured on a real GPU",)))


def check_header(data: object, where: str = "probe document") -> None:
    """ValueError unless `data` is a refenv.probe document of the version this code reads, with measurements."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{where}: schema is {data.get('schema')!r}, expected {SCHEMA!r} "
                         "(write one with `python -m harness probe --json --out FILE`)")
    if data.get("version") != VERSION:
        raise ValueError(f"{where}: version {data.get('version')!r} is not {VERSION}")
    if not isinstance(data.get("measurements"), list):
        raise ValueError(f"{where}: 'measurements' must be a list")


def check_document(data: object, where: str = "probe document") -> ProbeDocument:
    """A saved refenv.probe document this code reads, as its record; ValueError naming what is off."""
    check_header(data, where)
    try:
        return decode(ProbeDocument, data)
    except DecodeError as exc:
        raise ValueError(f"{where}: {exc}") from None
