"""The ledgers as a picture: one stacked bar per estimate (or per rung of the OOM ladder) against the GPU's budget.

Standard-library string building (SVG 1.1, inline styles, no script): the bar's segments are the ledgers in
the text report's order; the budget is drawn as its usable part, then the CUDA context and the ~10%
fragmentation margin that the allocator loses (facts/memory.md), up to the device's total. The matrix's HTML
report draws its memory checks with the same bars (refenv/report/memory.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Callable  # noqa: UP035  (collections.abc.Callable[...] is 3.9+; the harness runs on 3.8)

from harness.memory.budget import FRAGMENTATION, Fit
from harness.memory.estimate import Estimate
from harness.memory.ladder import Plan
from harness.memory.output import describe, human, render_text

# Ledger -> (label, fill). Colour-blind-safe (Okabe-Ito), in the text report's order.
LEDGERS = (("weights", "weights", "#0072B2"), ("gradients", "gradients", "#E69F00"),
           ("optimizer_state", "optimizer state", "#009E73"), ("master_weights", "master weights", "#CC79A7"),
           ("activations", "activations", "#56B4E9"), ("kv_cache", "KV cache", "#D55E00"))
_FILL = {key: fill for key, _, fill in LEDGERS}
_LABEL = {key: label for key, label, _ in LEDGERS}
OTHER_FILL = "#999999"
SPAN = 440           # the bars' byte scale, in pixels
RIGHT = 170          # room for the total and the verdict
CHAR = 7             # about one character of the 12 px sans-serif, for the names' column
BAR = 26
GAP = 18


@dataclass(frozen=True)
class Bar:
    """One stacked bar: its name, its segments (ledger, bytes) and a word on the right (FITS, a status)."""

    name: str
    segments: tuple[tuple[str, int], ...]
    verdict: str = ""

    @property
    def total(self) -> int:
        return sum(b for _, b in self.segments)


@dataclass(frozen=True)
class BudgetMarks:
    """The budget drawn behind the bars: usable, then the CUDA context and the fragmentation margin."""

    name: str
    total_bytes: int
    usable_bytes: int
    context_bytes: int
    margin_bytes: int

    @classmethod
    def of(cls, fit: Fit) -> BudgetMarks:
        return cls(fit.budget.name, fit.budget.total_bytes, fit.usable_bytes, fit.cuda_context_bytes,
                   fit.fragmentation_margin_bytes)


def label_of(key: str) -> str:
    return _LABEL.get(key, key.replace("_", " "))


def estimate_bar(name: str, est: Estimate, verdict: str = "") -> Bar:
    """An estimate's ledgers (per GPU) as a bar; its training peak's transients as one more segment."""
    led = est.ledgers
    segments = [(key, int(getattr(led, key) or 0)) for key, _, _ in LEDGERS if getattr(led, key)]
    extra = est.peak_bytes - led.total
    if extra > 0:
        phase = est.phases.phase.replace("_", " ") if est.phases else "peak"
        segments.append((f"{phase} transients", extra))
    return Bar(name, tuple(segments), verdict)


def bars_svg(title: str, bars: tuple[Bar, ...], budget: BudgetMarks | None = None, subtitle: str = "") -> str:
    """The bars on one byte scale, the budget behind them, a legend below; an SVG document as text."""
    top = 44 + (18 if budget else 0) + (18 if subtitle else 0)
    height = top + len(bars) * (BAR + GAP) + 64
    biggest = max([b.total for b in bars] + ([budget.total_bytes] if budget else []) + [1])
    left = 24 + CHAR * max([len(_short(b.name)) for b in bars] + [8])
    width = max(left + SPAN + RIGHT, 24 + round(6.3 * len(subtitle)))

    def x(n: int) -> float:
        return left + SPAN * n / biggest

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" role="img">',
           f"<title>{escape(title)}</title>",
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="12" y="22" font-size="15" font-weight="bold">{escape(title)}</text>']
    if subtitle:
        out.append(f'<text x="12" y="40" fill="#555555">{escape(subtitle)}</text>')
    bottom = top + len(bars) * (BAR + GAP) - GAP + 6
    if budget:
        out += _budget(budget, x, top - 8, bottom)
    for i, bar in enumerate(bars):
        y = top + i * (BAR + GAP)
        out.append(f'<text x="{left - 8}" y="{y + BAR / 2 + 4:.1f}" text-anchor="end">'
                   f"{escape(_short(bar.name))}</text>")
        pos = 0
        for key, size in bar.segments:
            if size <= 0:
                continue
            x0, x1 = x(pos), x(pos + size)
            fill = _FILL.get(key, OTHER_FILL)
            out.append(f'<rect x="{x0:.2f}" y="{y}" width="{max(x1 - x0, 0.5):.2f}" height="{BAR}" fill="{fill}">'
                       f"<title>{escape(label_of(key))}: {human(size)} ({size:,d} B)</title></rect>")
            if x1 - x0 > 54:
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + BAR / 2 + 4:.1f}" text-anchor="middle" '
                           f'fill="#ffffff">{escape(human(size))}</text>')
            pos += size
        verdict = f" {bar.verdict}" if bar.verdict else ""
        out.append(f'<text x="{x(bar.total) + 6:.1f}" y="{y + BAR / 2 + 4:.1f}">{escape(human(bar.total) + verdict)}'
                   "</text>")
    out += _legend(bars, bottom + 20)
    out.append("</svg>")
    return "\n".join(out)


def _budget(b: BudgetMarks, x: Callable[[int], float], top: int, bottom: int) -> list[str]:
    """The usable budget as a line, the context and fragmentation margin as a shaded band up to the total."""
    xu, xt = x(b.usable_bytes), x(b.total_bytes)
    return [f'<rect x="{xu:.2f}" y="{top}" width="{max(xt - xu, 0.5):.2f}" height="{bottom - top}" fill="#f2dede">'
            f"<title>CUDA context {human(b.context_bytes)} + fragmentation margin {FRAGMENTATION:.0%} "
            f"{human(b.margin_bytes)}</title></rect>",
            f'<line x1="{xu:.2f}" y1="{top}" x2="{xu:.2f}" y2="{bottom}" stroke="#333333" stroke-dasharray="4 3"/>',
            f'<line x1="{xt:.2f}" y1="{top}" x2="{xt:.2f}" y2="{bottom}" stroke="#a94442"/>',
            f'<text x="{xu - 4:.1f}" y="{top - 4}" text-anchor="end">usable {escape(human(b.usable_bytes))}</text>',
            f'<text x="{xt + 4:.1f}" y="{top - 4}" fill="#a94442">{escape(b.name)} {escape(human(b.total_bytes))}'
            "</text>"]


def _legend(bars: tuple[Bar, ...], y: int) -> list[str]:
    keys: list[str] = []
    for bar in bars:
        keys += [k for k, size in bar.segments if size > 0 and k not in keys]
    out, xpos = [], 12
    for key in keys:
        text = label_of(key)
        out.append(f'<rect x="{xpos}" y="{y}" width="12" height="12" fill="{_FILL.get(key, OTHER_FILL)}"/>')
        out.append(f'<text x="{xpos + 16}" y="{y + 10}">{escape(text)}</text>')
        xpos += 28 + 7 * len(text)
    return out


def _short(name: str, most: int = 48) -> str:
    return name if len(name) <= most else name[: most - 1] + "…"


def prediction_bars(est: Estimate, fit: Fit | None, plans: tuple[Plan, ...] | None) -> tuple[Bar, ...]:
    """The estimate as asked, then one bar per rung of the ladder."""
    first = "fits" if fit and fit.fits else ("does NOT fit" if fit else "")
    bars = [estimate_bar("as asked", est, first)]
    for p in plans or ():
        bars.append(estimate_bar(f"rung {p.rung}: {p.title}", p.estimate, "FITS" if p.fit.fits else "still too big"))
    return tuple(bars)


def render_svg(est: Estimate, fit: Fit | None, plans: tuple[Plan, ...] | None = None) -> str:
    """The prediction (and the ladder) as one SVG."""
    title = f"{est.model.name}: memory per GPU ({est.mode})"
    return bars_svg(title, prediction_bars(est, fit, plans), BudgetMarks.of(fit) if fit else None,
                    "; ".join(describe(est)))


def render_html(est: Estimate, fit: Fit | None, plans: tuple[Plan, ...] | None = None) -> str:
    """A page: the picture, then the text report."""
    title = f"{est.model.name}: memory per GPU"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:24px;max-width:900px}pre{background:#f6f6f6;padding:12px;"
        "overflow-x:auto;font-size:12px}</style></head><body>",
        render_svg(est, fit, plans), f"<pre>{escape(render_text(est, fit, plans))}</pre>", "</body></html>", ""])
