"""Accuracy of the report reader and its verdict on a corpus of real bug reports kept outside the project.

Each case file holds a header (`root_cause: VERDICT`, `shape: a, b, c`, ...), a line `---`, then the text
the reporter posted. The reader and the classifier run in-process on the text; a case is right when the
answer's verdict is its root cause. OTHER cases (outside the seven verdicts) are not scored for
accuracy: what counts there is that no confident wrong verdict is given (only low confidence, or OTHER).
Target: >= 90% of the scoreable cases right, no traceback, no confident wrong verdict on OTHER; exit 1 if not.

    python benchmarks/report_corpus.py [DIR]        # default: ../shared/reports from the repository root
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.classify import classify  # noqa: E402
from harness.intake import ReportError, load_report  # noqa: E402
from harness.intake.assess import LOW, OTHER, assess_report  # noqa: E402

TARGET = 0.90


def read_case(path: Path) -> tuple[dict[str, str], str]:
    head, _, body = path.read_text(encoding="utf-8").partition("\n---\n")
    header = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            header[key.strip()] = value.strip()
    return header, body


def judge(body: str) -> tuple[str, str]:
    """(verdict, confidence) for one report text; ('REFUSED', reason) when the reader refuses it."""
    try:
        report = load_report(body.encode("utf-8"))
    except ReportError as exc:
        return "REFUSED", str(exc)[:60]
    a = assess_report(report.facts, classify(report.facts), report.provenance, report.inferred, report.clues)
    return a.verdict, a.confidence


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared" / "reports"))
    args = p.parse_args(argv)
    cases = sorted(Path(args.dir).glob("*.txt"))
    if not cases:
        print(f"no case files (*.txt) in {args.dir}", file=sys.stderr)
        return 2
    per_verdict: dict[str, list[bool]] = defaultdict(list)
    per_shape: dict[str, list[bool]] = defaultdict(list)
    misses, tracebacks, other_wrong = [], 0, 0
    started = time.perf_counter()
    for path in cases:
        header, body = read_case(path)
        expected = header.get("root_cause") or header.get("class") or "?"
        try:
            got, confidence = judge(body)
        except Exception:  # the benchmark reports a crash instead of stopping on it
            tracebacks += 1
            print(f"TRACEBACK {path.stem}:\n{traceback.format_exc()}")
            got, confidence = "TRACEBACK", "-"
        right = got == expected
        shapes = [s.strip() for s in header.get("shape", "").split(",") if s.strip()]
        if expected == OTHER:
            if got != OTHER and confidence != LOW:
                other_wrong += 1
        else:
            per_verdict[expected].append(right)
            for shape in shapes:
                per_shape[shape].append(right)
        if not right:
            misses.append((path.stem, expected, got, confidence))
    print("per verdict:")
    for verdict, results in sorted(per_verdict.items()):
        print(f"  {verdict:18} {sum(results):3}/{len(results):<3}")
    print("per shape:")
    for shape, results in sorted(per_shape.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {shape:18} {sum(results):3}/{len(results):<3}")
    print("misses (id, expected, got, confidence):")
    for miss in misses:
        print("  " + "  ".join(miss))
    scored = [r for results in per_verdict.values() for r in results]
    n_right = sum(scored)
    share = n_right / len(scored) if scored else 0.0
    print(f"{len(cases)} cases in {time.perf_counter() - started:.2f} s")
    print(f"scoreable: {n_right}/{len(scored)} right ({share:.1%}); OTHER: {other_wrong} confident wrong; "
          f"tracebacks: {tracebacks}")
    return 0 if share >= TARGET and not tracebacks and not other_wrong else 1


if __name__ == "__main__":
    sys.exit(main())
