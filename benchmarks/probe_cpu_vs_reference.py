"""Check the CPU probe against references in the same run: its triad against a STREAM triad in C, its
fp32 GEMM against numpy's, with the same array size, shape and thread count.

    python benchmarks/probe_cpu_vs_reference.py [--pairs 31] [--band 0.10] [--mode full]

The C triad (benchmarks/stream_triad.c) is built with `gcc -O3 -fopenmp` at run time, as a program
(run once, STREAM-style, for the record) and as a library called on the probe's own arrays, with the
probe's thread count. Reference and probe samples alternate, one each, timed by the probe's own timer,
so a neighbour's load on a shared machine hits both alike; the verdict rests on the median of the
per-pair ratios. The probe passes when it reaches at least (1 - band) of the reference: a probe faster
than its reference (torch's BLAS beating numpy's) is no failure. Prints the figures and ratios; exits 1
when either ratio falls below 1 - band, 2 when the C reference cannot be built.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SOURCE = ROOT / "benchmarks" / "stream_triad.c"
SETTLE_S = 0.05  # lets the other library's spinning worker threads go idle before a block starts


def build(workdir: Path, library: bool) -> Path:
    """Compile stream_triad.c with gcc -O3 -fopenmp, as a program or a shared library."""
    gcc = shutil.which("gcc")
    if gcc is None:
        print("error: gcc is not on PATH; the C reference triad needs it (apt-get install gcc)", file=sys.stderr)
        raise SystemExit(2)
    out = workdir / ("libstream_triad.so" if library else "stream_triad")
    cmd = [gcc, "-O3", "-fopenmp", str(SOURCE), "-o", str(out)]
    if library:
        cmd[3:3] = ["-shared", "-fPIC", "-DSTREAM_TRIAD_LIB"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"error: {' '.join(cmd)} failed:\n{done.stderr}", file=sys.stderr)
        raise SystemExit(2)
    return out


def alternate(reference: Callable[[], object], probe: Callable[[], object], pairs: int) -> list[tuple[float, float]]:
    """(reference, probe) seconds of `pairs` alternating samples, each taken by the probe's own timer."""
    from harness.probe.timing import TimingPlan, time_samples

    one = TimingPlan(samples=1, warmup_s=0.0, min_sample_s=0.0)
    out = []
    for _ in range(pairs):
        ref = time_samples(reference, one, False)[0]
        out.append((ref, time_samples(probe, one, False)[0]))
    return out


def report(name: str, unit: str, work: float, pairs: list[tuple[float, float]], band: float) -> bool:
    """Print one comparison of rates (`work` per second); whether the median ratio reaches 1 - band."""
    ratios = sorted(ref / probe for ref, probe in pairs)  # rate ratio = inverse time ratio
    mid = statistics.median(ratios)
    ok = mid >= 1.0 - band
    ref_rate = work / statistics.median(r for r, _ in pairs)
    probe_rate = work / statistics.median(p for _, p in pairs)
    print(f"{name}: reference {ref_rate:.4g} {unit}, probe {probe_rate:.4g} {unit} (medians of {len(pairs)})")
    print(f"  per-pair ratios: min {ratios[0]:.3f}, quartiles {ratios[len(ratios) // 4]:.3f} / "
          f"{ratios[3 * len(ratios) // 4]:.3f}, max {ratios[-1]:.3f}")
    print(f"  probe / reference = {mid:.3f} (median of per-pair ratios) -> "
          f"{'PASS' if ok else 'FAIL'}: needs >= {1.0 - band:.2f}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=31, help="alternating sample pairs (default 31)")
    parser.add_argument("--band", type=float, default=0.10,
                        help="how far below the reference the probe may fall (default 0.10)")
    parser.add_argument("--mode", choices=("quick", "full"), default="full", help="whose sizes to use")
    args = parser.parse_args()

    import torch

    threads = torch.get_num_threads()
    # The references use the probe's thread count (OpenMP and numpy's BLAS read it at start-up), and
    # OpenBLAS's workers go idle at once instead of spinning ~0.1 s into the probe's next sample.
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"
    import numpy as np

    from harness.probe import accounting, buffers, devices, gemm, memory_bw
    from harness.probe.sizes import make_plan

    target = devices.cpu_target()
    plan = make_plan(args.mode, "cpu")
    numel, nbytes = memory_bw.plan_numel(target, plan, 8)
    print(f"CPU {target.info.get('model')}: {threads} threads, LLC {target.cache_bytes} B, torch BLAS "
          f"{devices.environment()['blas']}; triad on {numel} fp64 ({nbytes / 2**20:.0f} MiB per array); "
          f"GEMM {plan.gemm_n}^3 fp32; {args.pairs} alternating pairs each")

    with tempfile.TemporaryDirectory() as tmp:
        program = build(Path(tmp), library=False)
        done = subprocess.run([str(program), str(numel), str(plan.memory.samples)], capture_output=True,
                              text=True, check=True)
        alone = json.loads(done.stdout)
        print(f"C triad run alone (STREAM-style, its own arrays): median {alone['gbps_median']:.2f} GB/s, "
              f"best {alone['gbps_best']:.2f} GB/s")
        lib = ctypes.CDLL(str(build(Path(tmp), library=True)))
    lib.stream_triad.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_double, ctypes.c_long]
    lib.stream_triad.restype = None
    a, b, c = (buffers.stream_array(torch, numel, torch.float64, "cpu") for _ in range(3))
    _, triad, work, _ = memory_bw.stream_kernels(torch, a, b, c)[1]

    def c_triad() -> None:
        lib.stream_triad(a.data_ptr(), b.data_ptr(), c.data_ptr(), memory_bw.TRIAD_SCALAR, numel)

    triad_ok = report("triad (probe: torch.add into out=; reference: C loop, same arrays)", "GB/s", work / 1e9,
                      alternate(c_triad, triad, args.pairs), args.band)

    n = plan.gemm_n
    x, w = gemm.operands(torch, "fp32", n, "cpu")
    xn, wn = x.numpy().copy(), w.numpy().copy()
    out_np = np.empty((n, n), dtype=np.float32)
    flops = accounting.gemm_flops(n, n, n)
    gemm_ok = report("GEMM fp32 (probe: torch.mm; reference: numpy.matmul)", "TFLOP/s", flops / 1e12,
                     alternate(lambda: np.matmul(xn, wn, out=out_np), gemm.kernel(torch, "fp32", x, w),
                               max(5, args.pairs // 2)), args.band)
    onednn: dict[str, Any] = gemm.probe_onednn(target, plan)
    if onednn.get("tflops_median"):
        print(f"  for context: torch's bundled oneDNN matmul on the same shape, "
              f"{onednn['tflops_median']:.4g} TFLOP/s")
    return 0 if triad_ok and gemm_ok else 1


if __name__ == "__main__":
    sys.exit(main())
