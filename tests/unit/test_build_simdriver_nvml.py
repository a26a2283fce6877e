"""The simulated libnvidia-ml.so.1 through nvidia-ml-py (pynvml) and torch's own ctypes calls, and nvidia-smi."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from refenv.builder import simdriver
from refenv.builder.driverfiles import SimDriver
from refenv.model import profiles

pytest.importorskip("pynvml")


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> SimDriver:
    return simdriver.build(tmp_path_factory.getbasetemp() / "simdriver-cache")


def child_env(driver: SimDriver, tmp_path: Path, config: str | None) -> dict[str, str]:
    conf = tmp_path / "simdriver.conf"
    if config is not None:
        conf.write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(driver.env(conf if config is not None else tmp_path / "absent.conf"))
    return env


def run(driver: SimDriver, tmp_path: Path, config: str | None, code: str,
        extra: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `code` (which fills `out`) in a child with pynvml imported; return `out`."""
    script = "import ctypes, json, pynvml\nout = {}\n" + code + "\nprint(json.dumps(out))\n"
    env = {**child_env(driver, tmp_path, config), **(extra or {})}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def smi(driver: SimDriver, tmp_path: Path, config: str | None, *args: str,
        env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run([str(driver.nvidia_smi), *args], env=env or child_env(driver, tmp_path, config),
                          capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout


def test_pynvml_queries(driver: SimDriver, tmp_path: Path) -> None:
    code = """
pynvml.nvmlInit()
out["driver"] = pynvml.nvmlSystemGetDriverVersion()
out["nvml"] = pynvml.nvmlSystemGetNVMLVersion()
out["cuda"] = [pynvml.nvmlSystemGetCudaDriverVersion(), pynvml.nvmlSystemGetCudaDriverVersion_v2()]
out["count"] = pynvml.nvmlDeviceGetCount()
h = pynvml.nvmlDeviceGetHandleByIndex(1)
out["name"] = pynvml.nvmlDeviceGetName(h)
out["uuid"] = pynvml.nvmlDeviceGetUUID(h)
out["index"] = pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(out["uuid"]))
mem = pynvml.nvmlDeviceGetMemoryInfo(h)
mem2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
out["mem"] = [mem.total, mem.free, mem.used, mem2.total, mem2.used]
out["bus"] = pynvml.nvmlDeviceGetPciInfo(h).busId
out["cc"] = list(pynvml.nvmlDeviceGetCudaComputeCapability(h))
out["minor"] = pynvml.nvmlDeviceGetMinorNumber(h)
try:
    pynvml.nvmlDeviceGetTemperature(h, 0)
except pynvml.NVMLError as e:
    out["temperature"] = e.value
pynvml.nvmlShutdown()
lib = ctypes.CDLL("libnvidia-ml.so.1")
lib.refenvSimulatedNvmlInfo.restype = ctypes.c_char_p
out["info"] = json.loads(lib.refenvSimulatedNvmlInfo())
"""
    r580 = profiles.get("r580")
    out = run(driver, tmp_path, profiles.render_config(r580), code, {"CUDA_VISIBLE_DEVICES": "1"})
    assert out["driver"] == "580.95.05"
    assert out["nvml"] == "13.580.95.05"
    assert out["cuda"] == [13000, 13000]
    assert out["count"] == 2  # NVML ignores CUDA_VISIBLE_DEVICES
    assert out["name"] == "NVIDIA H100 80GB HBM3"
    assert out["uuid"] == r580.gpus[1].uuid and out["index"] == 1
    assert out["mem"] == [81559 << 20, 81559 << 20, 0, 81559 << 20, 0]
    assert out["bus"] == "00000000:2A:00.0"
    assert out["cc"] == [9, 0] and out["minor"] == 1
    assert out["temperature"] == pynvml_not_supported()
    assert out["info"]["profile"] == "r580" and out["info"]["init_result"] == 0


def pynvml_not_supported() -> int:
    import pynvml

    return int(pynvml.NVML_ERROR_NOT_SUPPORTED)


def test_torch_style_ctypes_calls(driver: SimDriver, tmp_path: Path) -> None:
    """torch.cuda.device_count() calls nvmlInit, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUUID."""
    code = """
lib = ctypes.CDLL("libnvidia-ml.so.1")
out["init"] = lib.nvmlInit()
n = ctypes.c_int(-1)
out["count"] = [lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), n.value]
h = ctypes.c_void_p()
out["handle"] = lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
buf = ctypes.create_string_buffer(96)
out["uuid"] = [lib.nvmlDeviceGetUUID(h, buf, 96), buf.value.decode()]
out["short"] = lib.nvmlDeviceGetUUID(h, buf, 10)
out["bad_handle"] = lib.nvmlDeviceGetUUID(ctypes.c_void_p(8), buf, 96)
"""
    r535 = profiles.get("r535")
    out = run(driver, tmp_path, profiles.render_config(r535), code)
    assert out["init"] == 0 and out["count"] == [0, 2] and out["handle"] == 0
    assert out["uuid"] == [0, r535.gpus[0].uuid]
    assert out["short"] == 7  # NVML_ERROR_INSUFFICIENT_SIZE
    assert out["bad_handle"] == 2


@pytest.mark.parametrize(("name", "code", "text"), [("r580-mismatch", 18, "Driver/library version mismatch"),
                                                     ("r580-not-loaded", 9, "Driver Not Loaded")])
def test_init_faults(driver: SimDriver, tmp_path: Path, name: str, code: int, text: str) -> None:
    script = """
try:
    pynvml.nvmlInit()
except pynvml.NVMLError as e:
    out["error"] = e.value
lib = ctypes.CDLL("libnvidia-ml.so.1")
lib.nvmlErrorString.restype = ctypes.c_char_p
out["text"] = lib.nvmlErrorString(out["error"]).decode()
n = ctypes.c_uint()
out["count_after"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(n))
"""
    out = run(driver, tmp_path, profiles.render_config(profiles.get(name)), script)
    assert out == {"error": code, "text": text, "count_after": 1}


def test_no_configuration_means_driver_not_loaded(driver: SimDriver, tmp_path: Path) -> None:
    out = run(driver, tmp_path, None, "try:\n    pynvml.nvmlInit()\nexcept pynvml.NVMLError as e:\n"
                                      "    out['error'] = e.value")
    assert out == {"error": 9}


# ---- nvidia-smi ---------------------------------------------------------------------------------------


def test_smi_table(driver: SimDriver, tmp_path: Path) -> None:
    rc, text = smi(driver, tmp_path, profiles.render_config(profiles.get("r570")))
    assert rc == 0
    assert "| NVIDIA-SMI 570.172.08             Driver Version: 570.172.08     CUDA Version: 12.8     |" in text
    rows = [line for line in text.splitlines() if "NVIDIA H100 80GB HBM3" in line]
    assert len(rows) == 2 and "00000000:18:00.0" in rows[0] and "00000000:2A:00.0" in rows[1]
    assert text.count("0MiB / 81559MiB") == 2
    widths = {len(line) for line in text.splitlines() if line.startswith(("|", "+"))}
    assert widths == {91}


def test_smi_list_and_query(driver: SimDriver, tmp_path: Path) -> None:
    r580 = profiles.get("r580")
    conf = profiles.render_config(r580)
    rc, listing = smi(driver, tmp_path, conf, "-L")
    assert rc == 0
    assert listing.splitlines() == [f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: {g.uuid})" for i, g in enumerate(r580.gpus)]
    rc, csv = smi(driver, tmp_path, conf, "--query-gpu=name,driver_version,memory.total,uuid,compute_cap",
                  "--format=csv")
    assert rc == 0
    assert csv.splitlines() == ["name, driver_version, memory.total [MiB], uuid, compute_cap"] + [
        f"NVIDIA H100 80GB HBM3, 580.95.05, 81559 MiB, {g.uuid}, 9.0" for g in r580.gpus]
    rc, bare = smi(driver, tmp_path, conf, "--query-gpu=index,memory.total", "--format=csv,noheader,nounits")
    assert (rc, bare) == (0, "0, 81559\n1, 81559\n")


@pytest.mark.parametrize(("args", "rc", "first"), [
    (("--query-gpu=bogus", "--format=csv"), 2, 'Field "bogus" is not a valid field to query.'),
    (("--frobnicate",), 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."),
])
def test_smi_bad_arguments(driver: SimDriver, tmp_path: Path, args: tuple[str, ...], rc: int,
                           first: str) -> None:
    code, text = smi(driver, tmp_path, profiles.render_config(profiles.get("r580")), *args)
    assert (code, text.splitlines()[0]) == (rc, first)


def test_smi_failures(driver: SimDriver, tmp_path: Path) -> None:
    rc, text = smi(driver, tmp_path, profiles.render_config(profiles.get("r580-mismatch")))
    assert (rc, text) == (18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n")
    rc, text = smi(driver, tmp_path, None)
    assert rc == 9
    assert text.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                           "that the latest NVIDIA driver is installed and running.\n")
    rc, text = smi(driver, tmp_path, profiles.render_config(profiles.get("r580"), []))
    assert (rc, text) == (6, "No devices were found\n")


def test_smi_without_nvml(driver: SimDriver, tmp_path: Path) -> None:
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has a real libnvidia-ml")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    rc, text = smi(driver, tmp_path, None, env=env)
    assert rc == 12
    assert text.startswith("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.")
