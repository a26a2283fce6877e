"""Two speed targets of `invoke matrix`, measured against references in the same run.

1. Building an environment costs at most 1.3x `pip install` of the same locked wheels into a fresh venv.
   For each environment: remove its images, time refenv's build (the hermetic install layer and the
   harness layer; the base image and the wheelhouse stay), and time `python -m venv` + `pip install
   --no-index --require-hashes` of the same wheels (pip's defaults, bytecode included) on this host.
2. A second `invoke matrix` with nothing changed takes at most 15% of the first. The first run starts with
   no environment image and no cached cell; the second changes nothing. A third run with --rerun (every
   cell executed again, images reused) is printed for context, not judged.

    python benchmarks/matrix_rerun.py [--matrix matrix.yaml] [--skip-build] [--skip-rerun]

It removes refenv's environment images and cached cells: run it where that is fine.
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

from refenv import paths  # noqa: E402
from refenv.builder import wheelhouse  # noqa: E402
from refenv.builder.environment import build_environment  # noqa: E402
from refenv.engines.docker.sdk import Engine  # noqa: E402
from refenv.model.labels import MANAGED  # noqa: E402
from refenv.model.matrix_yaml import load  # noqa: E402

BUILD_TARGET, RERUN_TARGET = 1.3, 0.15


def remove_env_images(engine: Engine, env: str | None = None) -> None:
    labels = {MANAGED: "true"}
    if env:
        labels["refenv.environment"] = env
    for kind in ("environment", "deps"):
        for image in engine.images_labelled({**labels, "refenv.kind": kind}):
            engine.remove_image(image)


def pip_reference(lock: wheelhouse.Lock) -> float:
    with tempfile.TemporaryDirectory(prefix="refenv-bench-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(wheelhouse.requirements_text(lock))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", f"{tmp}/venv"], check=True)
        subprocess.run([f"{tmp}/venv/bin/python", "-m", "pip", "install", "-q", "--no-index", "--find-links",
                        str(paths.wheelhouse()), "--require-hashes", "--no-deps", "-r", str(req)], check=True)
        return time.perf_counter() - t0


def bench_builds(matrix_path: str) -> bool:
    m = load(matrix_path)
    engine = Engine.connect()
    ok = True
    for env in m.environments:
        lock = wheelhouse.read_lock(wheelhouse.lock_path(m.path, env.name))
        if lock is None:
            print(f"{env.name}: no lock yet; run invoke lock first")
            return False
        wheelhouse.ensure_wheels(lock, paths.wheelhouse())
        ref = pip_reference(lock)
        remove_env_images(engine, env.name)
        t0 = time.perf_counter()
        built = build_environment(engine, m, env, lambda _e, _l: None)
        cost = time.perf_counter() - t0
        ratio = cost / ref
        ok &= built.status == "BUILT" and ratio <= BUILD_TARGET
        print(f"{env.name}: refenv build {cost:.1f} s ({built.status}) vs pip install into a fresh venv {ref:.1f} s"
              f" -> {ratio:.2f}x (target <= {BUILD_TARGET}x): {'PASS' if ratio <= BUILD_TARGET else 'FAIL'}")
    return ok


def invoke_matrix(matrix_path: str, *extra: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "invoke", "matrix", "--matrix", matrix_path, *extra], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("refenv matrix")]
    print(f"  invoke matrix {' '.join(extra)}: {wall:.1f} s, exit {proc.returncode}; {last[-1] if last else ''}")
    return wall


def bench_rerun(matrix_path: str) -> bool:
    engine = Engine.connect()
    remove_env_images(engine)
    shutil.rmtree(paths.cell_cache(), ignore_errors=True)
    print("first run (no environment image, no cached cell):")
    first = invoke_matrix(matrix_path)
    print("second run (nothing changed):")
    second = invoke_matrix(matrix_path)
    print("third run (--rerun: every cell again, images reused; for context):")
    invoke_matrix(matrix_path, "--rerun")
    ratio = second / first
    print(f"second / first = {second:.1f} / {first:.1f} s = {ratio:.3f} (target <= {RERUN_TARGET}): "
          f"{'PASS' if ratio <= RERUN_TARGET else 'FAIL'}")
    return ratio <= RERUN_TARGET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", default=str(ROOT / "matrix.yaml"))
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--skip-rerun", action="store_true")
    args = parser.parse_args()
    ok = True
    if not args.skip_build:
        ok &= bench_builds(args.matrix)
    if not args.skip_rerun:
        ok &= bench_rerun(args.matrix)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
