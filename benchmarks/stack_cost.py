"""The stack inventory's cost against a bare diagnose of the same image, in the same container, in one run.

Reference: `python -m harness diagnose --json` (driver libraries, NVML, torch imported in a fresh child, the
classification). Candidate: `python -m harness stack --json` (every installed distribution's metadata, the ELF
section tables of their shared objects, the fatbins of the stack's own libraries, and every extension imported
in a child). Both run with this checkout's harness, mounted read-only into one container of the environment's
image (no network, as a cell runs), alternating so that load on the machine hits both alike, after one warm-up
each. Printed: the medians, their ratio (target <= 1.5x; exit 1 above it), and what the inventory read
(distributions, shared objects, fatbin containers, modules imported).

    python benchmarks/stack_cost.py [--matrix matrix.yaml] [--env ENV] [--samples N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refenv.builder.environment import build_environment  # noqa: E402
from refenv.engines.docker.sdk import Engine  # noqa: E402
from refenv.model.labels import KIND, MANAGED  # noqa: E402
from refenv.model.matrix_yaml import load  # noqa: E402
from refenv.run.containers import ContainerSpec  # noqa: E402

TARGET = 1.5
MARK = "STACK-COST "
INSIDE = """
import json, statistics, subprocess, sys, time
def timed(args):
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, check=False)
    return time.perf_counter() - t0, done.stdout
timed(["diagnose", "--json"]); _, out = timed(["stack", "--json"])
ref, cand = [], []
for _ in range(SAMPLES):
    ref.append(timed(["diagnose", "--json"])[0])
    cand.append(timed(["stack", "--json"])[0])
stack = json.loads(out)["stack"]["inventory"]
tried = [d["module"] for d in stack["distributions"] if d.get("import")]
print(MARK + json.dumps({"ref": ref, "cand": cand, "read": stack["read"], "imported": tried}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default=str(ROOT / "matrix.yaml"))
    parser.add_argument("--env", help="the environment whose image is measured (default: the first with the most "
                        "packages)")
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    matrix = load(args.matrix)
    env = (matrix.environment(args.env) if args.env else
           max(matrix.environments, key=lambda e: len(e.packages)))
    engine = Engine.connect()
    build = build_environment(engine, matrix, env, lambda name, line: None)
    if build.status == "FAILED":
        print(f"{env.name} did not build: {build.error}", file=sys.stderr)
        return 2
    script = INSIDE.replace("SAMPLES", str(args.samples)).replace("MARK", repr(MARK))
    spec = ContainerSpec(image=str(build.tag), command=(script,), entrypoint=("python", "-c"),
                         environment=(("PYTHONPATH", "/bench"),), labels=((MANAGED, "true"), (KIND, "benchmark")),
                         binds=((str(ROOT / "harness"), "/bench/harness", True),))
    outcome = engine.run(spec, timeout=3600)
    lines = [ln for ln in outcome.logs.splitlines() if ln.startswith(MARK)]
    if outcome.exit_code != 0 or not lines:
        print(f"the measuring container failed (exit {outcome.exit_code}): {outcome.logs[-2000:]}", file=sys.stderr)
        return 3
    data = json.loads(lines[-1][len(MARK):])
    ref, cand = sorted(data["ref"]), sorted(data["cand"])
    r, c = ref[len(ref) // 2], cand[len(cand) // 2]
    ratio = c / r
    read = data["read"]
    print(f"image: {build.tag} ({env.name}: torch {env.torch}, packages {', '.join(env.packages) or 'none'})")
    print(f"python -m harness diagnose --json: median {r:.3f} s  samples {[round(x, 3) for x in data['ref']]}")
    print(f"python -m harness stack --json:    median {c:.3f} s  samples {[round(x, 3) for x in data['cand']]}")
    print(f"the inventory read {read['distributions']} distributions, {read['shared_objects']} shared objects "
          f"({read['fatbin_containers']} fatbin containers) and imported {len(data['imported'])} modules "
          f"({', '.join(data['imported'])})")
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {'PASS' if ratio <= TARGET else 'FAIL'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
