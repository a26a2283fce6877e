"""The paste page's time from load to first answer in headless Chromium, cold and warm, against the command
line answering the same report in the same run; optionally a screenshot of the page with its answer.

The page (`invoke web`, built into a temporary folder) is served on loopback by a static server. Cold: a
fresh Chromium profile (no HTTP cache, no compiled WebAssembly) navigates to the page and pastes the report
at once; the page answers as soon as its Python is ready. Warm: the same browser opens the page again (its
cache holds Pyodide). The figure is the page's own `performance.now()` when the first answer is on screen
(milliseconds since the navigation started); Pyodide's own start is most of it, and is printed apart.
Reference: `python -m harness diagnose --from FILE` as a fresh process (interpreter start included), the
median of as many runs. Targets on a 2-core machine shared with other work (its load average is printed):
cold <= 30 s, warm <= 15 s.

    python benchmarks/page_timing.py [--rounds N] [--report FILE] [--screenshot docs/images/paste-page.png]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refenv.ship import chromium, page  # noqa: E402

COLD_TARGET_S, WARM_TARGET_S = 30.0, 15.0


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def first_answer(tab: chromium.Page, url: str, text: str) -> tuple[float, float, float, str]:
    """(ms to Pyodide started, ms to the harness imported, ms to the first answer, verdict) for one load."""
    tab.evaluate("window.refenvLeft = true")  # the page being left still answers until the new one commits
    tab.navigate(url)
    # The page's module has run (its listeners are set) once it has put up window.refenvTimings.
    tab.wait_for("!window.refenvLeft && !!window.refenvTimings", timeout=60, every=0.01)
    tab.evaluate(f"document.getElementById('report').value = {json.dumps(text)}; "
                 "document.getElementById('diagnose').click(); true")
    timings = tab.wait_for("window.refenvTimings && window.refenvTimings.first_answer_ms && window.refenvTimings",
                           timeout=300)
    verdict = tab.evaluate("document.getElementById('verdict').textContent")
    return (float(timings["pyodide_ms"]), float(timings["ready_ms"]), float(timings["first_answer_ms"]),
            str(verdict))


def cli_seconds(report: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", "diagnose", "--from", str(report)], cwd=ROOT,
                   capture_output=True, timeout=300, check=False)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--report", default=str(ROOT / "tests/data/reports/smi-table-pip.txt"))
    parser.add_argument("--screenshot", default=None, help="write a PNG of the page with its answer here")
    args = parser.parse_args()
    report = Path(args.report)
    load_before = f"{os.getloadavg()[0]:.1f}"
    text = report.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="refenv-page-bench-") as tmp:
        site = page.build(ROOT, Path(tmp) / "web")
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site.folder)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        cold: list[list[float]] = []
        warm: list[list[float]] = []
        cli: list[float] = []
        verdicts: set[str] = set()
        try:
            for _ in range(args.rounds):
                with chromium.browser(width=1280, height=1500) as tab:
                    *stages, verdict = first_answer(tab, url, text)
                    cold.append(stages)
                    verdicts.add(verdict)
                    *stages, verdict = first_answer(tab, url, text)
                    warm.append(stages)
                    verdicts.add(verdict)
                    if args.screenshot:
                        tab.evaluate("window.scrollTo(0, 0); true")
                        tab.screenshot(Path(args.screenshot))
                cli.append(cli_seconds(report))
        finally:
            server.shutdown()
            server.server_close()
    def median_s(rounds: list[list[float]], stage: int) -> float:
        return statistics.median(r[stage] for r in rounds) / 1000

    cold_s, warm_s, cli_s = median_s(cold, 2), median_s(warm, 2), statistics.median(cli)
    print(f"load average before: {load_before}; after: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    print(f"page: {site.bytes / 1e6:.1f} MB in {len(site.files)} files; report {report.name}: "
          f"verdict {sorted(verdicts)}")
    for name, rounds, figure in (("cold (fresh profile)", cold, cold_s), ("warm (same browser, cached)", warm, warm_s)):
        print(f"{name}: load to first answer median {figure:.2f} s (Pyodide started {median_s(rounds, 0):.2f} s, "
              f"harness imported {median_s(rounds, 1):.2f} s; rounds {[round(r[2] / 1000, 2) for r in rounds]})")
    print(f"command line, a fresh process: median {cli_s:.2f} s; page / command line: cold {cold_s / cli_s:.1f}x, "
          f"warm {warm_s / cli_s:.1f}x")
    ok = cold_s <= COLD_TARGET_S and warm_s <= WARM_TARGET_S and len(verdicts) == 1
    print(f"targets cold <= {COLD_TARGET_S:.0f} s, warm <= {WARM_TARGET_S:.0f} s: {'PASS' if ok else 'FAIL'}")
    if args.screenshot:
        print(f"screenshot: {args.screenshot}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
