"""Accuracy and calibration of the report reader on a corpus of real bug reports kept outside the project.

Each case file holds a header (`root_cause: VERDICT`, `shape: a, b, c`, ...), a line `---`, then the text
the reporter posted. The folder's indexes (`INDEX*.md`, markdown tables whose rows start `| id | class |
shape |`) fill what a header lacks. The reader and the classifier run in-process on the text; a case is
right when the answer's verdict is its root cause. OTHER cases (outside the seven verdicts) are not scored
for accuracy, but a verdict given there at high or medium confidence is a confident wrong answer.

The calibration table counts, for each confidence, how many answers were given and how many were right
(OTHER cases included: OTHER is right there). Targets: >= 95% of the scoreable cases right, high right
>= 98% of the time, no wrong answer at high or medium confidence, no traceback; exit 1 if not.

    python benchmarks/report_corpus.py [DIR]        # default: ../shared/reports from the repository root
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.classify import classify  # noqa: E402
from harness.intake import ReportError, load_report  # noqa: E402
from harness.intake.assess import assess_report  # noqa: E402
from harness.schema import HIGH, LOW, MEDIUM, OTHER  # noqa: E402

TARGET = 0.95
HIGH_TARGET = 0.98
# An index row: '| 101 | NO_DRIVER | warning, prose, code | ...'.
_ROW_RE = re.compile(r"^\|\s*(?P<id>\d{3})\s*\|\s*(?P<cls>[A-Z_]+)\s*\|\s*(?P<shape>[^|]*)\|")


@dataclass(frozen=True)
class Case:
    name: str
    expected: str
    shapes: tuple[str, ...]
    body: str


def read_index(folder: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """id -> (class, shapes) from every INDEX*.md table in the folder."""
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for index in sorted(folder.glob("INDEX*.md")):
        for line in index.read_text(encoding="utf-8").splitlines():
            m = _ROW_RE.match(line)
            if m:
                shapes = tuple(s.strip() for s in m.group("shape").split(",") if s.strip())
                found.setdefault(m.group("id"), (m.group("cls"), shapes))
    return found


def read_case(path: Path, index: dict[str, tuple[str, tuple[str, ...]]]) -> Case:
    head, _, body = path.read_text(encoding="utf-8").partition("\n---\n")
    header = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            header[key.strip()] = value.strip()
    listed_class, listed_shapes = index.get(path.stem, ("?", ()))
    expected = header.get("root_cause") or header.get("class") or listed_class
    shapes = tuple(s.strip() for s in header.get("shape", "").split(",") if s.strip()) or listed_shapes
    return Case(path.stem, expected, shapes, body)


def read_corpus(folder: Path) -> list[Case]:
    """Every case file (*.txt) in the folder, with what its header or the indexes say of it."""
    index = read_index(folder)
    return [read_case(path, index) for path in sorted(folder.glob("*.txt"))]


def judge(body: str) -> tuple[str, str]:
    """(verdict, confidence) for one report text; ('REFUSED', '-') when the reader refuses it."""
    try:
        report = load_report(body.encode("utf-8"))
    except ReportError:
        return "REFUSED", "-"
    a = assess_report(report.facts, classify(report.facts), report.provenance, report.inferred, report.clues)
    return a.verdict, a.confidence


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared" / "reports"))
    args = p.parse_args(argv)
    cases = read_corpus(Path(args.dir))
    if not cases:
        print(f"no case files (*.txt) in {args.dir}", file=sys.stderr)
        return 2
    per_verdict: dict[str, list[bool]] = defaultdict(list)
    per_shape: dict[str, list[bool]] = defaultdict(list)
    calibration: dict[str, list[bool]] = defaultdict(list)
    misses, confident_wrong, tracebacks = [], [], 0
    started = time.perf_counter()
    for case in cases:
        try:
            got, confidence = judge(case.body)
        except Exception:  # the benchmark reports a crash instead of stopping on it
            tracebacks += 1
            print(f"TRACEBACK {case.name}:\n{traceback.format_exc()}")
            got, confidence = "TRACEBACK", "-"
        right = got == case.expected
        calibration[confidence].append(right)
        if case.expected != OTHER:
            per_verdict[case.expected].append(right)
            for shape in case.shapes:
                per_shape[shape].append(right)
        if not right:
            misses.append((case.name, case.expected, got, confidence))
            if confidence in (HIGH, MEDIUM):
                confident_wrong.append(case.name)
    elapsed = time.perf_counter() - started
    print("per verdict:")
    for verdict, results in sorted(per_verdict.items()):
        print(f"  {verdict:18} {sum(results):3}/{len(results):<3}")
    print("per shape:")
    for shape, results in sorted(per_shape.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {shape:18} {sum(results):3}/{len(results):<3}")
    print("misses (id, expected, got, confidence):")
    for miss in misses:
        print("  " + "  ".join(miss))
    print("calibration (every case, OTHER included):")
    print(f"  {'confidence':12} {'answers':>7} {'right':>6} {'share':>7}")
    for level in (HIGH, MEDIUM, LOW, "-"):
        results = calibration.get(level, [])
        share = f"{sum(results) / len(results):.1%}" if results else "-"
        label = "refused" if level == "-" else level
        print(f"  {label:12} {len(results):7} {sum(results):6} {share:>7}")
    scored = [r for results in per_verdict.values() for r in results]
    n_right = sum(scored)
    share = n_right / len(scored) if scored else 0.0
    high = calibration.get(HIGH, [])
    high_share = sum(high) / len(high) if high else 1.0
    print(f"{len(cases)} cases in {elapsed:.2f} s")
    print(f"scoreable: {n_right}/{len(scored)} right ({share:.1%}); wrong at high or medium confidence: "
          f"{len(confident_wrong)} ({', '.join(confident_wrong) or 'none'}); high right: {high_share:.1%}; "
          f"tracebacks: {tracebacks}")
    good = share >= TARGET and high_share >= HIGH_TARGET and not confident_wrong and not tracebacks
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
