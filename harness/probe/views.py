"""Plain-text views of a probe document and of a roofline answer (the commands' default output)."""

from __future__ import annotations

from harness.probe.roofline import Analysis
from harness.schema.probe_document import Measurement, ProbeDocument, SpecSection, Telemetry


def _num(value: object, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}"
    return str(value)


def _device_line(doc: ProbeDocument) -> str:
    info = doc.device_info
    if doc.device == "cuda" and info:
        mem = info.get("memory_total_bytes")
        l2 = info.get("l2_cache_bytes")
        return (f"device: {info.get('name')} · CC {info.get('compute_capability')} · {info.get('sm_count')} SMs"
                f" · {_num(mem / 2**30 if mem else None)} GiB · L2 {_num(l2 / 2**20 if l2 else None)} MiB")
    if info:
        llc = info.get("llc_bytes")
        return (f"device: CPU {info.get('model')} · {info.get('physical_cores')} cores · "
                f"{info.get('torch_threads')} torch threads · {info.get('vector_isa')} · "
                f"LLC {_num(llc / 2**20 if llc else None)} MiB")
    return f"device: {doc.device}"


def _telemetry(reading: Telemetry | None) -> str:
    if reading is None:
        return "-"
    if not reading.available:
        return f"unavailable ({reading.error})"
    reasons = ",".join(reading.throttle_reasons or ()) or "none"
    return (f"SM {_num(reading.sm_clock_mhz)} MHz, mem {_num(reading.mem_clock_mhz)} MHz, "
            f"{_num(reading.power_w)}/{_num(reading.power_limit_w)} W, "
            f"{_num(reading.temperature_c)} C, throttle: {reasons}")


def _spec_lines(spec: SpecSection | None) -> list[str]:
    lines = []
    if spec is not None and spec.match is not None:
        lines.append(f"spec: {spec.match.reason}")
    est = spec.cpu_peak_estimate if spec is not None else None
    if est is not None:
        given = f"; the share given: {est.given_by}" if est.given_by else ""
        lines.append(f"CPU peak estimate: {est.gflops} GFLOP/s fp32 = {est.cores:g} cores x "
                     f"{est.mhz:.0f} MHz x {est.sp_flops_per_cycle} FLOP/cycle ({est.isa}){given}")
    return lines


def _row(m: Measurement) -> list[str]:
    f = m.figures
    spread = f"{_num(f.spread_percent, 2)}%" if f is not None else "-"
    row = (f"{m.status:6}  {m.title[:36]:36} {_num(f.median if f else None):>10} "
           f"{f.unit_label if f else '':8} "
           f"{_num(f.reference if f else None):>9} {_num(f.percent_of_peak if f else None, 3):>7} {spread:>7}")
    out = [row]
    if m.status != "PASS" or f is None or f.percent_of_peak is None or f.flags:
        out.append(f"{'':8}{m.reason}")
    return out


def render_probe(doc: ProbeDocument) -> str:
    """The document as a short report: device, spec match, one row per measurement, the roofline."""
    lines = [f"refenv probe ({doc.mode}, {doc.device}): {doc.status}"
             + (f" · {doc.wall_seconds} s" if doc.wall_seconds is not None else "")]
    if doc.waived:
        lines.append(f"waived: {doc.waived}")
    lines.append(_device_line(doc))
    lines += _spec_lines(doc.spec)
    prec = doc.precision.at_start if doc.precision else None
    if prec:
        lines.append("precision at start: " + ", ".join(f"{k}={v}" for k, v in prec.items()))
    if doc.telemetry is not None:
        lines.append(f"before: {_telemetry(doc.telemetry.before)}")
        lines.append(f"after:  {_telemetry(doc.telemetry.after)}")
    lines.append("")
    lines.append(f"{'status':6}  {'measurement':36} {'median':>10} {'unit':8} {'reference':>9} {'% peak':>7} "
                 f"{'spread':>7}")
    for m in doc.measurements:
        lines += _row(m)
    roof = doc.roofline
    if roof is not None:
        meas, spec_roof = roof.measured, roof.spec
        lines.append("")
        lines.append(f"roofline ({roof.dtype}): measured peak {_num(meas.peak_tflops)} TFLOP/s, "
                     f"bandwidth {_num(meas.bandwidth_gbps)} GB/s, ridge {_num(meas.ridge_flop_per_byte)} "
                     f"FLOP/B; spec ridge {_num(spec_roof.ridge_flop_per_byte)} FLOP/B")
        for sweep in roof.sweeps:
            if not sweep.points:
                lines.append(f"  {sweep.method}: {sweep.status} ({sweep.reason})")
                continue
            lines.append(f"  {sweep.method} ({sweep.dtype}):")
            for p in sweep.points:
                label = f"m={p.m}" if p.m is not None else f"k={p.steps}"
                lines.append(f"    {label:>8}  intensity {_num(p.intensity_flop_per_byte):>7} FLOP/B  "
                             f"{_num(p.tflops_median):>8} TFLOP/s  {_num(p.gbps_median):>7} GB/s  "
                             f"{p.bound or '-':7} {_num(p.percent_of_attainable, 3)}% of roof")
    lines += [f"note: {note}" for note in doc.notes]
    return "\n".join(lines)


def render_roofline(result: Analysis) -> str:
    """A roofline answer: bound, intensity against the ridge, attainable figures, a measured time's gap."""
    roofs = result.roofs
    lines = [
        f"{result.operation}",
        f"roofs: {roofs.name}: {_num(roofs.peak_tflops)} TFLOP/s {result.dtype}, {_num(roofs.bandwidth_gbps)} GB/s",
        f"{_num(result.flops)} FLOP over {_num(result.bytes)} B: intensity "
        f"{_num(result.intensity_flop_per_byte)} FLOP/B, ridge {_num(result.ridge_flop_per_byte)} FLOP/B",
        f"{result.bound}-bound: at best {_num(result.attainable_tflops)} TFLOP/s, {_num(result.attainable_ms)} ms",
    ]
    measured = result.measured
    if measured:
        lines.append(f"measured {_num(measured.ms)} ms: {_num(measured.tflops)} TFLOP/s, "
                     f"{_num(measured.gbps)} GB/s, {_num(measured.percent_of_roofline, 3)}% of the "
                     f"roofline ({_num(measured.slower_by, 3)}x its time)")
    return "\n".join(lines)
