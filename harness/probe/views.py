"""Plain-text views of a probe document and of a roofline answer (the commands' default output)."""

from __future__ import annotations

from typing import Any


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}"
    return str(value)


def _device_line(doc: dict[str, Any]) -> str:
    info = doc.get("device_info") or {}
    if doc.get("device") == "cuda" and info:
        mem = info.get("memory_total_bytes")
        l2 = info.get("l2_cache_bytes")
        return (f"device: {info.get('name')} · CC {info.get('compute_capability')} · {info.get('sm_count')} SMs"
                f" · {_num(mem / 2**30 if mem else None)} GiB · L2 {_num(l2 / 2**20 if l2 else None)} MiB")
    if info:
        llc = info.get("llc_bytes")
        return (f"device: CPU {info.get('model')} · {info.get('physical_cores')} cores · "
                f"{info.get('torch_threads')} torch threads · {info.get('vector_isa')} · "
                f"LLC {_num(llc / 2**20 if llc else None)} MiB")
    return f"device: {doc.get('device')}"


def _telemetry(reading: dict[str, Any] | None) -> str:
    if not reading:
        return "-"
    if not reading.get("available"):
        return f"unavailable ({reading.get('error')})"
    reasons = ",".join(reading.get("throttle_reasons") or []) or "none"
    return (f"SM {_num(reading.get('sm_clock_mhz'))} MHz, mem {_num(reading.get('mem_clock_mhz'))} MHz, "
            f"{_num(reading.get('power_w'))}/{_num(reading.get('power_limit_w'))} W, "
            f"{_num(reading.get('temperature_c'))} C, throttle: {reasons}")


def render_probe(doc: dict[str, Any]) -> str:
    """The document as a short report: device, spec match, one row per measurement, the roofline."""
    lines = [f"refenv probe ({doc.get('mode')}, {doc.get('device')}): {doc.get('status')}"
             + (f" · {doc['wall_seconds']} s" if doc.get("wall_seconds") is not None else "")]
    if doc.get("waived"):
        lines.append(f"waived: {doc['waived']}")
    lines.append(_device_line(doc))
    spec = doc.get("spec") or {}
    if spec.get("match"):
        lines.append(f"spec: {spec['match']['reason']}")
    if spec.get("cpu_peak_estimate"):
        est = spec["cpu_peak_estimate"]
        given = f"; the share given: {est['given_by']}" if est.get("given_by") else ""
        lines.append(f"CPU peak estimate: {est['gflops']} GFLOP/s fp32 = {est['cores']:g} cores x "
                     f"{est['mhz']:.0f} MHz x {est['sp_flops_per_cycle']} FLOP/cycle ({est['isa']}){given}")
    prec = (doc.get("precision") or {}).get("at_start")
    if prec:
        lines.append("precision at start: " + ", ".join(f"{k}={v}" for k, v in prec.items()))
    tele = doc.get("telemetry")
    if tele:
        lines.append(f"before: {_telemetry(tele.get('before'))}")
        lines.append(f"after:  {_telemetry(tele.get('after'))}")
    lines.append("")
    lines.append(f"{'status':6}  {'measurement':36} {'median':>10} {'unit':8} {'reference':>9} {'% peak':>7} "
                 f"{'spread':>7}")
    for m in doc.get("measurements", []):
        value = m.get("gbps_median", m.get("tflops_median"))
        ref = m.get("reference_gbps", m.get("reference_tflops"))
        row = (f"{m['status']:6}  {m.get('title', m['id'])[:36]:36} {_num(value):>10} {m.get('unit', ''):8} "
               f"{_num(ref):>9} {_num(m.get('percent_of_peak'), 3):>7} "
               f"{_num(m.get('spread_percent'), 2) + '%' if m.get('spread_percent') is not None else '-':>7}")
        lines.append(row)
        if m["status"] != "PASS" or m.get("percent_of_peak") is None or m.get("flags"):
            lines.append(f"{'':8}{m.get('reason')}")
    roof = doc.get("roofline")
    if roof:
        meas, spec_roof = roof["measured"], roof["spec"]
        lines.append("")
        lines.append(f"roofline ({roof['dtype']}): measured peak {_num(meas['peak_tflops'])} TFLOP/s, "
                     f"bandwidth {_num(meas['bandwidth_gbps'])} GB/s, ridge {_num(meas['ridge_flop_per_byte'])} "
                     f"FLOP/B; spec ridge {_num(spec_roof['ridge_flop_per_byte'])} FLOP/B")
        for sweep in roof.get("sweeps", []):
            if not sweep.get("points"):
                lines.append(f"  {sweep['method']}: {sweep.get('status')} ({sweep.get('reason')})")
                continue
            lines.append(f"  {sweep['method']} ({sweep['dtype']}):")
            for p in sweep["points"]:
                label = f"m={p['m']}" if "m" in p else f"k={p.get('steps')}"
                lines.append(f"    {label:>8}  intensity {_num(p['intensity_flop_per_byte']):>7} FLOP/B  "
                             f"{_num(p['tflops_median']):>8} TFLOP/s  {_num(p['gbps_median']):>7} GB/s  "
                             f"{p.get('bound', '-'):7} {_num(p.get('percent_of_attainable'), 3)}% of roof")
    for note in doc.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def render_roofline(result: dict[str, Any]) -> str:
    """A roofline answer: bound, intensity against the ridge, attainable figures, a measured time's gap."""
    roofs = result["roofs"]
    lines = [
        f"{result['operation']}",
        f"roofs: {roofs['name']}: {_num(roofs['peak_tflops'])} TFLOP/s {result['dtype']}, "
        f"{_num(roofs['bandwidth_gbps'])} GB/s",
        f"{_num(result['flops'])} FLOP over {_num(result['bytes'])} B: intensity "
        f"{_num(result['intensity_flop_per_byte'])} FLOP/B, ridge {_num(result['ridge_flop_per_byte'])} FLOP/B",
        f"{result['bound']}-bound: at best {_num(result['attainable_tflops'])} TFLOP/s, "
        f"{_num(result['attainable_ms'])} ms",
    ]
    measured = result.get("measured")
    if measured:
        lines.append(f"measured {_num(measured['ms'])} ms: {_num(measured['tflops'])} TFLOP/s, "
                     f"{_num(measured['gbps'])} GB/s, {_num(measured['percent_of_roofline'], 3)}% of the "
                     f"roofline ({_num(measured['slower_by'], 3)}x its time)")
    return "\n".join(lines)
