"""Reports answered per second by the issue bot's entry point, over a corpus of real bug reports, against
`diagnose --from` on the same reports in the same run.

Each case's text (after its `---` header) becomes an `issues` `opened` payload. As GitHub runs the action,
one process per event: `python -m harness bot` posts to a loopback stub of GitHub's API
(tests/unit/github_stub.py); the reference is `python -m harness diagnose --from FILE --json` on the same
text, one process per report, the two alternating so that load on the machine hits both alike. Target:
the bot's median per event at most 1.5x the command line's per report (reading the payload, rendering,
redacting and two requests to GitHub cost at most half as much again as answering on the command line).
Also printed: the rates in one process over every report (the reader alone, the bot's own work with
--dry-run, and the bot posting to the loopback GitHub), where the interpreter's start is paid once.

    python benchmarks/bot_throughput.py [DIR] [--processes N]      # default DIR: ../shared/reports
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.__main__ import main as harness_main  # noqa: E402
from harness.diagnosis.report import diagnose_report  # noqa: E402
from harness.intake import ReportError  # noqa: E402
from tests.unit.github_stub import TOKEN, State, github_stub  # noqa: E402

TARGET = 1.5


def body(path: Path) -> str:
    head, sep, rest = path.read_text(encoding="utf-8").partition("\n---\n")
    return rest if sep else head


def payload(number: int, text: str) -> dict[str, object]:
    return {"action": "opened", "issue": {"number": number, "title": "", "body": text, "labels": [],
                                          "user": {"login": "reporter", "type": "User"}},
            "repository": {"full_name": "o/r"}, "sender": {"login": "reporter", "type": "User"}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared" / "reports"))
    parser.add_argument("--processes", type=int, default=20, help="payloads run one process each (default 20)")
    args = parser.parse_args()
    cases = sorted(Path(args.dir).glob("*.txt"))
    if not cases:
        print(f"no case files (*.txt) in {args.dir}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="refenv-bot-bench-") as tmp:
        events, texts = [], []
        for i, case in enumerate(cases, start=1):
            text = body(case)
            texts.append(Path(tmp) / f"{i}.txt")
            texts[-1].write_text(text, encoding="utf-8")
            events.append(Path(tmp) / f"{i}.json")
            events[-1].write_text(json.dumps(payload(i, text)), encoding="utf-8")

        t0 = time.perf_counter()
        for path in texts:
            with suppress(ReportError):
                diagnose_report(str(path))
        reader_s = time.perf_counter() - t0

        state = State()
        actions: collections.Counter[str] = collections.Counter()
        with github_stub(state) as api:
            os.environ.update(GITHUB_API_URL=api, GITHUB_TOKEN=TOKEN, GITHUB_EVENT_NAME="issues")
            timed = {}
            for mode in ("--dry-run", ""):
                t0 = time.perf_counter()
                for path in events:
                    out, err = io.StringIO(), io.StringIO()
                    with redirect_stdout(out), redirect_stderr(err):
                        code = harness_main(["bot", "--event", str(path), *([mode] if mode else [])])
                    if code != 0:
                        print(f"bot exited {code} on {path.name}: {err.getvalue().strip()}", file=sys.stderr)
                        return 1
                    if not mode:
                        actions[out.getvalue().splitlines()[0].split(": ")[2]] += 1
                timed[mode] = time.perf_counter() - t0
            dry_s, bot_s = timed["--dry-run"], timed[""]

            env = dict(os.environ, PYTHONPATH=str(ROOT))
            per_event, per_report = [], []
            for event_path, text_path in list(zip(events, texts, strict=True))[: max(1, args.processes)]:
                t0 = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "harness", "bot", "--event", str(event_path)], env=env,
                                      capture_output=True, text=True, timeout=300, check=False)
                per_event.append(time.perf_counter() - t0)
                if done.returncode != 0:
                    print(f"bot process exited {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
                    return 1
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "harness", "diagnose", "--from", str(text_path), "--json"],
                               env=env, capture_output=True, timeout=300, check=False)
                per_report.append(time.perf_counter() - t0)

    n = len(cases)
    bot_rate, dry_rate, reader_rate = n / bot_s, n / dry_s, n / reader_s
    posted = sum(1 for r in state.requests if r.method == "POST")
    print(f"{n} reports from {args.dir}")
    print(f"reader alone (diagnose_report):             {reader_s:6.2f} s = {reader_rate:6.1f} reports/s")
    print(f"bot entry point, --dry-run (its own work):  {dry_s:6.2f} s = {dry_rate:6.1f} reports/s")
    print(f"bot entry point, posting to loopback GitHub: {bot_s:6.2f} s = {bot_rate:6.1f} reports/s "
          f"({dict(sorted(actions.items()))}; {posted} comments posted, {len(state.requests)} requests)")
    bot_med, cli_med = statistics.median(per_event), statistics.median(per_report)
    ratio = bot_med / cli_med
    print(f"one process per event ({len(per_event)} events, alternating):")
    print(f"  python -m harness bot --event FILE:          median {bot_med:.2f} s = {1 / bot_med:5.1f} reports/s "
          f"(min {min(per_event):.2f}, max {max(per_event):.2f} s)")
    print(f"  python -m harness diagnose --from FILE --json: median {cli_med:.2f} s = {1 / cli_med:5.1f} reports/s "
          f"(min {min(per_report):.2f}, max {max(per_report):.2f} s)")
    print(f"bot / command line = {ratio:.2f}x (target <= {TARGET}x): {'PASS' if ratio <= TARGET else 'FAIL'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
