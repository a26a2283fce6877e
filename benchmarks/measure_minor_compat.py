"""Measure which driver versions the real CUDA runtimes accept, against the simulated driver.

Each runtime (the cudart of the nvidia-cuda-runtime wheels, downloaded on the host) is loaded in a fresh
process against a simulated host reporting each CUDA driver version; the process calls
cudaRuntimeGetVersion, cudaDriverGetVersion and cudaGetDeviceCount and reads the driver's stage record.
The reference in the same run is `harness.compat.runtime_accepts`; the script prints how many cells agree
and writes benchmarks/results/compat-measured.md and benchmarks/results/compat-measured.json.

    .venv/bin/python benchmarks/measure_minor_compat.py [--wheel-dir DIR] [--out-dir benchmarks/results]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import compat  # noqa: E402
from refenv.builder import simdriver  # noqa: E402
from refenv.model import profiles  # noqa: E402

RUNTIMES = ("nvidia-cuda-runtime-cu12==12.0.*", "nvidia-cuda-runtime-cu12==12.4.*", "nvidia-cuda-runtime-cu12==12.8.*",
            "nvidia-cuda-runtime-cu12==12.9.*", "nvidia-cuda-runtime==13.0.*")
DRIVER_CUDA = ("11.4", "11.8", "12.0", "12.2", "12.8", "12.9", "13.0", "13.1")

CHILD = """
import ctypes, json, sys
rt = ctypes.CDLL(sys.argv[1])
rt.cudaGetErrorName.restype = ctypes.c_char_p
rt.cudaGetErrorString.restype = ctypes.c_char_p
rv, dv, n = ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_int(-1)
out = {"runtime_rc": rt.cudaRuntimeGetVersion(ctypes.byref(rv)), "runtime_version": rv.value,
       "driver_rc": rt.cudaDriverGetVersion(ctypes.byref(dv)), "driver_version": dv.value}
err = rt.cudaGetDeviceCount(ctypes.byref(n))
out.update(error=err, error_name=rt.cudaGetErrorName(err).decode(), error_string=rt.cudaGetErrorString(err).decode(),
           device_count=n.value if err == 0 else None)
cu = ctypes.CDLL("libcuda.so.1")
cu.refenvSimulatedDriverInfo.restype = ctypes.c_char_p
out["stage"] = json.loads(cu.refenvSimulatedDriverInfo())["stage"]
print(json.dumps(out))
"""


def host_for(cuda: str) -> profiles.Profile:
    """A shipped profile reporting `cuda`, else r580's GPUs under the first driver of that toolkit release."""
    for p in profiles.all():
        if p.cuda_version == cuda and p.faults == profiles.Faults() and p.name.count("-") == 0:
            return p
    driver = compat.min_driver_for_cuda(cuda)
    if driver is None or compat.cuda_for_driver(driver) != cuda:
        raise SystemExit(f"no driver known for CUDA {cuda}")
    return replace(profiles.get("r580"), name=f"r{compat.branch_of(driver)}", description=f"CUDA {cuda}",
                   driver_version=driver, cuda_version=cuda)


def fetch(spec: str, wheel_dir: Path) -> tuple[str, Path]:
    """(wheel file name, path of its libcudart) for a requirement, downloading the wheel when missing."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    name, _, pattern = spec.partition("==")
    prefix = name.replace("-", "_") + "-" + pattern.rstrip("*")
    wheels = sorted(wheel_dir.glob(f"{prefix}*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheel_dir), spec],
                       check=True)
        wheels = sorted(wheel_dir.glob(f"{prefix}*.whl"))
    wheel = wheels[-1]
    target = wheel_dir / wheel.stem
    if not target.exists():
        with zipfile.ZipFile(wheel) as z:
            z.extractall(target)
    lib = next(iter(sorted(target.glob("nvidia/*/lib/libcudart.so.*"))), None)
    if lib is None:
        raise SystemExit(f"{wheel.name}: no libcudart.so inside")
    return wheel.name, lib


def measure(driver: simdriver.SimDriver, lib: Path, host: profiles.Profile, work: Path) -> dict[str, Any]:
    conf = work / f"{host.name}.conf"
    conf.write_text(profiles.render_config(host), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"} | driver.env(conf)
    done = subprocess.run([sys.executable, "-c", CHILD, str(lib)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    if done.returncode != 0:
        return {"crash": done.stderr.strip()[-500:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cell_text(cell: dict[str, Any]) -> str:
    if "crash" in cell:
        return "crashed"
    return "accepted" if cell["accepted"] else f"rejected ({cell['error']})"


def package(wheel: str) -> str:
    """'nvidia_cuda_runtime_cu12-12.8.90-py3-...whl' -> 'nvidia-cuda-runtime-cu12 12.8.90'."""
    name, version = wheel.split("-")[:2]
    return f"{name.replace('_', '-')} {version}"


def errors(record: dict[str, Any], *, accepted: bool) -> str:
    """The distinct errors cudaGetDeviceCount gave in the accepted (or rejected) cells."""
    seen = sorted({(c["error"], c["error_name"]) for r in record["runtimes"] for c in r["cells"].values()
                   if "crash" not in c and c["accepted"] == accepted})
    return ", ".join(f"{e} (`{n}`)" for e, n in seen) or "none"


def write_doc(out_dir: Path, record: dict[str, Any]) -> None:
    cols = record["driver_cuda_versions"]
    first = record["runtimes"][0]["cells"]
    lines = [
        "# CUDA minor-version compatibility, measured",
        "",
        f"Measured {record['date']} by `benchmarks/measure_minor_compat.py`: each real CUDA runtime (libcudart from "
        "the wheels below) was loaded in a fresh process against refenv's simulated driver reporting each CUDA "
        "driver version, and asked `cudaRuntimeGetVersion`, `cudaDriverGetVersion` and `cudaGetDeviceCount`.",
        "*accepted* means the runtime went on to call `cuInit` after reading the driver's version (the driver's "
        "stage record). An accepted runtime then stops at `cuGetExportTable`, which the simulated driver never "
        "implements, so `cudaGetDeviceCount` fails there with an error of its own; on a real driver it would go on "
        "to count the devices.",
        "",
        "Errors from `cudaGetDeviceCount`: accepted cells "
        + errors(record, accepted=True) + "; rejected cells " + errors(record, accepted=False) + ".",
        "",
        f"Runtimes: {', '.join(package(r['wheel']) for r in record['runtimes'])}. Simulated driver build "
        f"`{record['simdriver_digest'][:16]}`.",
        "",
        "| runtime \\ driver | " + " | ".join(f"{c} ({first[c]['host']['driver_version']})" for c in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for runtime in record["runtimes"]:
        cells = [cell_text(runtime["cells"][c]) for c in cols]
        lines.append(f"| cudart {package(runtime['wheel']).split()[1]} | " + " | ".join(cells) + " |")
    agree, total = record["agreement"]
    lines += [
        "",
        f"Agreement with `harness.compat.runtime_accepts`: {agree} of {total} cells."
        + (" The table and the rule agree everywhere." if agree == total else " **They disagree: see the JSON.**"),
        "",
        "Error 35 is `cudaErrorInsufficientDriver` (\"CUDA driver version is insufficient for CUDA runtime "
        "version\"), which torch reports as \"The NVIDIA driver on your system is too old (found version N)\".",
        "The raw results, with each cell's error text and stage record, are in `compat-measured.json`.",
        "",
    ]
    (out_dir / "compat-measured.md").write_text("\n".join(lines), encoding="utf-8")
    (out_dir / "compat-measured.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel-dir", type=Path, default=simdriver.default_cache_root().parent / "cudart-wheels")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    driver = simdriver.build()
    work = args.wheel_dir / "configs"
    work.mkdir(parents=True, exist_ok=True)
    hosts = {cuda: host_for(cuda) for cuda in DRIVER_CUDA}
    runtimes, agree, total = [], 0, 0
    for spec in RUNTIMES:
        wheel, lib = fetch(spec, args.wheel_dir)
        cells: dict[str, Any] = {}
        for cuda, host in hosts.items():
            cell = measure(driver, lib, host, work)
            runtime_cuda = compat.int_to_cuda(cell.get("runtime_version", 0))
            cell["accepted"] = bool(cell.get("stage", {}).get("runtime_accepted")) and cell.get("error") != 35
            cell["expected"] = compat.runtime_accepts(runtime_cuda, host.cuda_driver_version)
            cell["host"] = {"profile": host.name, "driver_version": host.driver_version,
                            "cuda_driver_version": host.cuda_driver_version}
            agree += cell["accepted"] == cell["expected"]
            total += 1
            cells[cuda] = cell
            print(f"{wheel:70.70s} driver {cuda:>4}: {cell_text(cell)}; rule says "
                  f"{'accept' if cell['expected'] else 'reject'}")
        runtimes.append({"wheel": wheel, "cuda": runtime_cuda, "cells": cells})
    record = {"schema": "refenv.compat-measured", "version": 1, "date": datetime.date.today().isoformat(),
              "driver_cuda_versions": list(DRIVER_CUDA), "simdriver_digest": driver.digest, "runtimes": runtimes,
              "agreement": [agree, total]}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_doc(args.out_dir, record)
    print(f"agreement with harness.compat.runtime_accepts: {agree}/{total} = {agree / total:.2f}")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
