"""Render a sample cells.json to report.html and photograph it with headless Chromium; print the PNG paths.

The repeatable way to look at the HTML report: a reviewer opens the PNGs. Debian's `chromium` package
(`apt-get install -y chromium`) is enough; nothing is fetched, the page is a local file.

    python benchmarks/report_screenshot.py [tests/data/cells/failures.json] [--out DIR] [--cell ID] [--height PX]

Besides the page, `--cell` (default: the first cell that did not pass) is opened in the side panel through
the page's own `#cell-N` link, so the evidence view is photographed too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refenv.model.rundoc import load_run  # noqa: E402
from refenv.report import view, write_reports  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    """The first Chromium on PATH, or exit saying how to get one."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    sys.exit("no Chromium found: install Debian's `chromium` (apt-get install -y chromium)")


def screenshot(exe: str, url: str, png: Path, width: int, height: int) -> float:
    """One headless screenshot of `url`; seconds it took."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={png}", url]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0 or not png.exists():
            sys.exit(f"chromium failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")
        return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sample", nargs="?", default=str(ROOT / "tests/data/cells/failures.json"))
    parser.add_argument("--out", default=None, help="folder for the report and PNGs (default: a temp folder)")
    parser.add_argument("--cell", default=None, help="cell id to open in the side panel")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1800)
    args = parser.parse_args()

    doc = load_run(Path(args.sample))
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="refenv-report-"))
    t0 = time.perf_counter()
    paths = write_reports(doc, out)
    render_s = time.perf_counter() - t0
    html = paths["html"].resolve()
    cells = doc.cells
    wanted = args.cell or next((c.id for c in view.attention(doc)), None) or (cells[0].id if cells else None)
    index = next((i for i, c in enumerate(cells) if c.id == wanted), None)

    exe = browser()
    page_png = out / f"{Path(args.sample).stem}.png"
    shots = [(page_png, html.as_uri())]
    if index is not None:
        shots.append((out / f"{Path(args.sample).stem}-cell.png", f"{html.as_uri()}#cell-{index}"))
    print(f"rendered {html} ({html.stat().st_size / 1024:.0f} KiB) in {render_s:.2f} s")
    for png, url in shots:
        seconds = screenshot(exe, url, png, args.width, args.height)
        print(f"{png}  ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
