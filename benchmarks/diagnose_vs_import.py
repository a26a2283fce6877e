"""Diagnosis wall time against the bare question it answers, in the same run.

Reference: `python -c "import torch; torch.cuda.is_available()"`, what a user types first.
Candidate: `python -m harness diagnose --json` (every layer: driver libraries, NVML, nvidia-smi, torch in a
fresh child process, the classification). Samples alternate so that load on the machine hits both alike.
Target: the median diagnosis costs at most 1.3x the median reference. Exit 1 when it does not.

    python benchmarks/diagnose_vs_import.py [--python PYTHON] [--samples N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.3


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the Python whose torch is measured")
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    reference = [args.python, "-c", "import torch; torch.cuda.is_available()"]
    candidate = [args.python, "-m", "harness", "diagnose", "--json"]
    timed(reference, env), timed(candidate, env)  # warm the page cache for both
    ref, cand = [], []
    for _ in range(args.samples):
        ref.append(timed(reference, env))
        cand.append(timed(candidate, env))
    r, c = statistics.median(ref), statistics.median(cand)
    ratio = c / r
    print(f"python: {args.python}")
    print(f"import torch; torch.cuda.is_available(): median {r:.3f} s  samples {[round(x, 3) for x in ref]}")
    print(f"python -m harness diagnose --json:       median {c:.3f} s  samples {[round(x, 3) for x in cand]}")
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {'PASS' if ratio <= TARGET else 'FAIL'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
