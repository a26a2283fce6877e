"""Draw a roofline picture as inline SVG: log-log axes, memory and compute roofs, ridge points, sweep points.

Pure string building; every label is escaped here, so the result may be inserted into HTML as is.
Roofs follow Williams, Waterman & Patterson, "Roofline" (CACM 2009): attainable = min(peak, I x BW).
"""

from __future__ import annotations

import math
from html import escape

from refenv.report.roofline_data import Figure, Roof

WIDTH, HEIGHT = 560, 340
LEFT, RIGHT, TOP, BOTTOM = 62, 18, 14, 46
ROOF_STYLE = {"spec": ("#6b7280", "6 4"), "measured": ("#0f766e", "")}
SWEEP_COLOURS = ("#2563eb", "#d97706", "#9333ea", "#dc2626")
STYLE = ("<style>.gm{stroke:#d1d5db;stroke-width:1}.gn{stroke:#eef0f3;stroke-width:1}"
         ".frame{fill:none;stroke:#9ca3af}.tk{font:11px sans-serif;fill:#4b5563}"
         ".al{font:12px sans-serif;fill:#374151}"
         ".rl{font:11px sans-serif;paint-order:stroke;stroke:#fff;stroke-width:3px}"
         ".lg{font:11px sans-serif;fill:#374151}</style>")


def _bounds(values: list[float], below: float, above: float) -> tuple[float, float]:
    """A log range around the values with some room either side (never empty)."""
    lo, hi = min(values) / below, max(values) * above
    return (lo, hi) if hi > lo * 1.01 else (lo / 10, hi * 10)


def _tick_text(v: float) -> str:
    return f"{v / 1000:g}k" if v >= 10000 else f"{v:g}"


class _Axes:
    """Maps data to pixels on log-log axes inside the plot area."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float]) -> None:
        self.x, self.y = x, y
        self.w, self.h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(self, v: float) -> float:
        lo, hi = (math.log10(b) for b in self.x)
        return LEFT + (math.log10(v) - lo) / (hi - lo) * self.w

    def py(self, v: float) -> float:
        lo, hi = (math.log10(b) for b in self.y)
        return TOP + self.h - (math.log10(v) - lo) / (hi - lo) * self.h

    @staticmethod
    def ticks(bounds: tuple[float, float]) -> list[tuple[float, bool]]:
        """1, 2, 5 x 10^k inside the bounds (decades only over a wide range); decades are major."""
        lo, hi = bounds
        steps = (1, 2, 5) if math.log10(hi / lo) <= 4 else (1,)
        out = []
        for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
            out += [(m * 10.0 ** e, m == 1) for m in steps if lo <= m * 10.0 ** e <= hi]
        return out


def _grid(ax: _Axes, unit: str, dtype: str) -> list[str]:
    parts = []
    for v, major in ax.ticks(ax.x):
        x = ax.px(v)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ax.h}" class="{"gm" if major else "gn"}"/>'
                     f'<text x="{x:.1f}" y="{TOP + ax.h + 15}" text-anchor="middle" class="tk">{_tick_text(v)}</text>')
    for v, major in ax.ticks(ax.y):
        y = ax.py(v)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + ax.w}" y2="{y:.1f}" '
                     f'class="{"gm" if major else "gn"}"/>'
                     f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tk">{_tick_text(v)}</text>')
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{ax.w}" height="{ax.h}" class="frame"/>')
    parts.append(f'<text x="{LEFT + ax.w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" class="al">'
                 "arithmetic intensity (FLOP/byte)</text>")
    ylabel = escape(f"{unit} ({dtype})" if dtype else unit)
    parts.append(f'<text transform="translate(14 {TOP + ax.h / 2:.1f}) rotate(-90)" text-anchor="middle" '
                 f'class="al">{ylabel}</text>')
    return parts


def _roof_points(ax: _Axes, roof: Roof, scale: float) -> list[tuple[float, float]]:
    """The roof's polyline in data units: up the memory roof to the ridge, then along the compute roof."""
    (xlo, xhi), (ylo, yhi) = ax.x, ax.y
    bw = roof.bandwidth_gbps * scale / 1000.0 if roof.bandwidth_gbps else None  # display units per FLOP/byte
    peak = roof.peak_tflops * scale if roof.peak_tflops else None
    points: list[tuple[float, float]] = []
    if bw:
        start = max(xlo, ylo / bw)
        end = min(xhi, peak / bw if peak else yhi / bw)
        if start < end:
            points += [(start, start * bw), (end, end * bw)]
    if peak and ylo <= peak <= yhi:
        left = max(xlo, peak / bw) if bw else xlo
        if left < xhi:
            points = [p for p in points if p[0] < left] + [(left, peak), (xhi, peak)]
    return points


def _roof(ax: _Axes, roof: Roof, scale: float, unit: str, dtype: str, upper: bool, index: int) -> list[str]:
    """One roof's lines and labels; `upper` puts its labels above its lines (the higher roof), else below."""
    colour, dash = ROOF_STYLE.get(roof.kind, ("#111827", ""))
    points = _roof_points(ax, roof, scale)
    if len(points) < 2:
        return []
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    path = " ".join(f"{ax.px(x):.1f},{ax.py(y):.1f}" for x, y in points)
    parts = [f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}>'
             f"<title>{escape(roof.kind)} roofs</title></polyline>"]
    off = -6 if upper else 14  # text baseline above or below the line
    peak = roof.peak_tflops * scale if roof.peak_tflops else None
    if peak and points[-1][1] == peak:
        label = f"{roof.kind} compute roof: {peak:.4g} {unit}"
        parts.append(f'<text x="{LEFT + ax.w - 4}" y="{ax.py(peak) + off:.1f}" text-anchor="end" class="rl" '
                     f'fill="{colour}">{escape(label)}</text>')
    ridge = roof.ridge
    if peak and ridge and ax.x[0] < ridge < ax.x[1] and ax.y[0] < peak < ax.y[1]:
        rx, ry = ax.px(ridge), ax.py(peak)
        parts.append(f'<line x1="{rx:.1f}" y1="{ry:.1f}" x2="{rx:.1f}" y2="{TOP + ax.h}" stroke="{colour}" '
                     'stroke-dasharray="2 3" stroke-width="1"/>')
        parts.append(f'<path d="M{rx:.1f} {ry - 5:.1f} l5 5 l-5 5 l-5 -5 z" fill="{colour}">'
                     f"<title>{escape(f'{roof.kind} ridge point: {ridge:.4g} FLOP/byte')}</title></path>")
        # Ridge labels stack bottom-left of their dotted lines: under the memory roof, where no point lies.
        parts.append(f'<text x="{rx - 4:.1f}" y="{TOP + ax.h - 6 - 13 * index:.1f}" text-anchor="end" class="rl" '
                     f'fill="{colour}">{escape(f"{roof.kind} ridge {ridge:.3g}")}</text>')
    if roof.bandwidth_gbps and points[1][0] > points[0][0] * 4 and points[1][1] != points[0][1]:
        # Along the memory roof's slope, a little way in from where it enters the plot.
        (x0, y0), (x1, y1) = points[0], points[1]
        angle = math.degrees(math.atan2(ax.py(y1) - ax.py(y0), ax.px(x1) - ax.px(x0)))
        lx, ly = x0 * 1.5, y0 * 1.5
        label = f"{roof.kind} memory roof: {roof.bandwidth_gbps:.4g} GB/s"
        parts.append(f'<text transform="translate({ax.px(lx):.1f} {ax.py(ly):.1f}) rotate({angle:.1f}) '
                     f'translate(0 {off})" class="rl" fill="{colour}">{escape(label)}</text>')
    return parts


def _legend(ax: _Axes, entries: list[tuple[str, str, str]]) -> list[str]:
    """Bottom-right, where a roofline has no points: under the compute roof, right of the ridge."""
    box_w = 40 + 6.2 * max((len(t) for _, _, t in entries), default=0)
    box_h = 15 * len(entries) + 8
    bx, by = LEFT + ax.w - box_w - 6, TOP + ax.h - box_h - 6
    parts = [f'<rect x="{bx:.1f}" y="{by:.1f}" width="{box_w:.1f}" height="{box_h}" rx="4" fill="#fff" '
             'fill-opacity="0.92" stroke="#e5e7eb"/>']
    for i, (colour, style, label) in enumerate(entries):
        y = by + 16 + 15 * i
        if style == "dot":
            parts.append(f'<circle cx="{bx + 16:.1f}" cy="{y - 4:.1f}" r="4" fill="{colour}"/>')
        else:
            dash = f' stroke-dasharray="{style}"' if style else ""
            parts.append(f'<line x1="{bx + 8:.1f}" y1="{y - 4:.1f}" x2="{bx + 24:.1f}" y2="{y - 4:.1f}" '
                         f'stroke="{colour}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{bx + 30:.1f}" y="{y:.1f}" class="lg">{escape(label)}</text>')
    return parts


def render_svg(fig: Figure) -> str:
    """The picture as an `<svg>` element with its own small stylesheet, sized to scale with its container."""
    points = [p for s in fig.sweeps for p in s.points]
    peaks = [r.peak_tflops for r in fig.roofs if r.peak_tflops]
    # Throughput in GFLOP/s when nothing reaches a TFLOP/s (a CPU), so tick labels stay readable.
    top = max(peaks + [p.tflops for p in points], default=1.0)
    scale, unit = (1000.0, "GFLOP/s") if top < 1.0 else (1.0, "TFLOP/s")
    xs = [p.intensity for p in points] + [r.ridge for r in fig.roofs if r.ridge]
    ys = [v * scale for v in peaks + [p.tflops for p in points]]
    ax = _Axes(_bounds(xs or [1.0, 100.0], 2.5, 3.0), _bounds(ys or [1.0, 100.0], 2.0, 1.8))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="roofline" '
             f'role="img" aria-label="{escape(fig.title)}">', STYLE, f"<title>{escape(fig.title)}</title>"]
    parts += _grid(ax, unit, fig.dtype)
    # The higher roof is labelled above its lines and the lower below, so close roofs keep legible labels.
    ranked = sorted(fig.roofs, key=lambda r: (r.peak_tflops or 0, r.bandwidth_gbps or 0), reverse=True)
    for i, roof in enumerate(fig.roofs):
        parts += _roof(ax, roof, scale, unit, fig.dtype, ranked.index(roof) == 0, i)
    legend = [(*ROOF_STYLE.get(r.kind, ("#111827", "")), f"{r.kind} roofs") for r in fig.roofs]
    for i, sweep in enumerate(fig.sweeps):
        colour = SWEEP_COLOURS[i % len(SWEEP_COLOURS)]
        legend.append((colour, "dot", f"{sweep.name} ({sweep.dtype})" if sweep.dtype else sweep.name))
        path = " ".join(f"{ax.px(p.intensity):.1f},{ax.py(p.tflops * scale):.1f}" for p in sweep.points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.2" opacity="0.6"/>')
        for p in sweep.points:
            tip = f"{p.label}: {p.tflops * scale:.4g} {unit} at {p.intensity:.4g} FLOP/byte"
            parts.append(f'<circle cx="{ax.px(p.intensity):.1f}" cy="{ax.py(p.tflops * scale):.1f}" r="4" '
                         f'fill="{colour}" stroke="#fff" stroke-width="1"><title>{escape(tip)}</title></circle>')
    parts += _legend(ax, legend)
    parts.append("</svg>")
    return "".join(parts)
