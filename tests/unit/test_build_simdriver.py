"""The simulated libcuda.so.1, built in the oldest base's build root and exercised through ctypes in child processes.

Each scenario runs in a fresh process: the driver reads its configuration and CUDA_VISIBLE_DEVICES once
per process, as the real one does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from refenv.builder import simdriver
from refenv.builder.driverfiles import SimDriver
from refenv.model import profiles

CASES = json.loads((Path(__file__).parents[1] / "data" / "cvd_cases.json").read_text(encoding="utf-8"))

# Loads the driver by soname (as the CUDA runtime does) and returns what a scenario asks for as JSON.
PRELUDE = """
import ctypes, json, sys
cu = ctypes.CDLL("libcuda.so.1")
cu.refenvSimulatedDriverInfo.restype = ctypes.c_char_p
def info():
    return json.loads(cu.refenvSimulatedDriverInfo())
def version():
    v = ctypes.c_int(-1)
    return cu.cuDriverGetVersion(ctypes.byref(v)), v.value
def count():
    n = ctypes.c_int(-1)
    return cu.cuDeviceGetCount(ctypes.byref(n)), n.value
out = {}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> SimDriver:
    return simdriver.build(tmp_path_factory.getbasetemp() / "simdriver-cache")


def run(driver: SimDriver, tmp_path: Path, config: str | None, code: str,
        env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """Run PRELUDE + code in a child with the driver on LD_LIBRARY_PATH; (its `out`, its stderr)."""
    conf = tmp_path / "simdriver.conf"
    if config is not None:
        conf.write_text(config, encoding="utf-8")
    child_env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    child_env.update(driver.env(conf if config is not None else tmp_path / "absent.conf"))
    child_env.update(env or {})
    script = PRELUDE + code + "\nprint(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", script], env=child_env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def config_for(gpus: int | list[str]) -> str:
    """A profile whose GPUs carry the given UUIDs (or N made-up ones)."""
    base = profiles.get("r580")
    uuids = gpus if isinstance(gpus, list) else [f"GPU-{i:08x}-0000-4000-8000-000000000000" for i in range(gpus)]
    chosen = [profiles.Gpu(base.gpus[0].name, base.gpus[0].memory_bytes, "9.0", 132, u, f"00000000:{i + 16:02X}:00.0", i)
              for i, u in enumerate(uuids)]
    return profiles.render_config(base, chosen)


# ---- build and cache ---------------------------------------------------------------------------------


def test_second_build_is_a_no_op(tmp_path: Path) -> None:
    first = simdriver.build(tmp_path)
    stamp = (first.root / "BUILD.json").stat().st_mtime_ns
    second = simdriver.build(tmp_path)
    assert second == first
    assert (second.root / "BUILD.json").stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.digest]


def test_changed_source_builds_elsewhere(tmp_path: Path) -> None:
    sources = tmp_path / "src"
    shutil.copytree(simdriver.SOURCE_DIR, sources)
    before = simdriver.build(tmp_path / "cache", sources)
    with (sources / "libcuda.c").open("a", encoding="utf-8") as f:
        f.write("\n/* changed */\n")
    after = simdriver.build(tmp_path / "cache", sources)
    assert after.digest != before.digest
    assert after.libcuda.is_file() and before.libcuda.is_file()


def test_concurrent_builds_agree(tmp_path: Path) -> None:
    results: list[SimDriver] = []
    threads = [threading.Thread(target=lambda: results.append(simdriver.build(tmp_path))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and len(set(results)) == 1
    assert [p.name for p in tmp_path.iterdir()] == [results[0].digest]


def test_missing_host_compiler_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-here")
    with pytest.raises(simdriver.SimDriverBuildError, match="apt-get install gcc"):
        simdriver.host_toolchain()


def test_sonames(driver: SimDriver) -> None:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    for lib in (driver.libcuda, driver.libnvidia_ml):
        dynamic = subprocess.run([readelf, "-d", str(lib)], capture_output=True, text=True, check=True).stdout
        assert f"Library soname: [{lib.name}]" in dynamic


# ---- versions, initialisation, devices ---------------------------------------------------------------


def test_r580_devices_and_properties(driver: SimDriver, tmp_path: Path) -> None:
    code = """
out["version"] = version()
out["init"] = cu.cuInit(0)
out["count"] = count()
name = ctypes.create_string_buffer(96)
out["name"] = [cu.cuDeviceGetName(name, 96, 1), name.value.decode()]
mem = ctypes.c_size_t()
out["mem"] = [cu.cuDeviceTotalMem_v2(ctypes.byref(mem), 1), mem.value]
attr = ctypes.c_int()
out["attrs"] = [[cu.cuDeviceGetAttribute(ctypes.byref(attr), a, 0), attr.value] for a in (75, 76, 16, 10)]
out["unknown_attr"] = cu.cuDeviceGetAttribute(ctypes.byref(attr), 39, 0)
uuid = (ctypes.c_ubyte * 16)()
out["uuid"] = [cu.cuDeviceGetUuid_v2(uuid, 1), bytes(uuid).hex()]
bus = ctypes.create_string_buffer(32)
out["bus"] = [cu.cuDeviceGetPCIBusId(bus, 32, 1), bus.value.decode()]
major, minor = ctypes.c_int(), ctypes.c_int()
out["cc"] = [cu.cuDeviceComputeCapability(ctypes.byref(major), ctypes.byref(minor), 0), major.value, minor.value]
out["bad_device"] = cu.cuDeviceGetName(name, 96, 2)
out["info"] = info()
"""
    r580 = profiles.get("r580")
    out, _ = run(driver, tmp_path, profiles.render_config(r580), code)
    assert out["version"] == [0, 13000]
    assert out["init"] == 0 and out["count"] == [0, 2]
    assert out["name"] == [0, "NVIDIA H100 80GB HBM3"]
    assert out["mem"] == [0, 81559 << 20]
    assert out["attrs"] == [[0, 9], [0, 0], [0, 132], [0, 32]]
    assert out["unknown_attr"] == 801
    assert out["uuid"] == [0, r580.gpus[1].uuid[4:].replace("-", "")]
    assert out["bus"] == [0, "0000:2A:00.0"]
    assert out["cc"] == [0, 9, 0]
    assert out["bad_device"] == 101
    info = out["info"]
    assert (info["profile"], info["driver_version"], info["cuda_driver_version"]) == ("r580", "580.95.05", 13000)
    assert info["visible_devices"] == [0, 1]
    assert info["stage"]["runtime_accepted"] is True
    assert info["stage"]["device_count"] == 2


@pytest.mark.parametrize("profile", profiles.all(), ids=lambda p: p.name)
def test_every_profile_reports_its_version_and_fault(driver: SimDriver, tmp_path: Path,
                                                      profile: profiles.Profile) -> None:
    if profile.faults.cuinit_hang:  # its cuInit never returns: test_a_hung_driver_blocks_in_cuinit
        out, _ = run(driver, tmp_path, profiles.render_config(profile), 'out["version"] = version()')
        assert out["version"] == [0, profile.cuda_driver_version]
        return
    out, _ = run(driver, tmp_path, profiles.render_config(profile),
                 'out["version"] = version()\nout["init"] = cu.cuInit(0)\nout["count"] = count()')
    if profile.faults.stub:
        assert out["version"][0] == 34 and out["init"] == 34
    else:
        assert out["version"] == [0, profile.cuda_driver_version]
        assert out["init"] == profile.faults.cuinit_error
    expected_count = [0, len(profile.gpus)] if out["init"] == 0 else [34 if profile.faults.stub else 3, -1]
    assert out["count"] == expected_count


# cuInit runs in a thread; the main thread waits for the driver's own record to say cuInit was called, then looks:
# a cuInit that returned (as every other profile's does, at once) would have set its result by then.
HUNG = """
import threading, time
caller = threading.Thread(target=lambda: out.setdefault("init", cu.cuInit(0)), daemon=True)
caller.start()
while not info()["stage"]["cuinit_called"]:
    time.sleep(0.01)
out["stage"] = info()["stage"]
caller.join(0.2)
out["returned"] = not caller.is_alive() or "init" in out
out["version"] = version()
"""


def test_a_hung_driver_blocks_in_cuinit_and_still_answers_for_itself(driver: SimDriver,
                                                                       tmp_path: Path) -> None:
    hung = profiles.get("r580-cuinit-hang")
    out, _ = run(driver, tmp_path, profiles.render_config(hung), HUNG)
    assert out["returned"] is False and "init" not in out
    assert out["stage"]["cuinit_called"] is True and out["stage"]["cuinit_result"] is None
    assert out["version"] == [0, hung.cuda_driver_version], "the library still answers what needs no GPU"
    # Without a GPU to bring up it has nothing to wait for, and answers as a working driver does.
    out, _ = run(driver, tmp_path, profiles.render_config(hung), 'out["init"] = cu.cuInit(0)',
                 {"CUDA_VISIBLE_DEVICES": ""})
    assert out["init"] == 100


def test_known_versions(driver: SimDriver, tmp_path: Path) -> None:
    found = {}
    for name in ("r470", "r535", "r570", "r590"):
        out, _ = run(driver, tmp_path, profiles.render_config(profiles.get(name)), 'out["v"] = version()')
        found[name] = out["v"][1]
    assert found == {"r470": 11040, "r535": 12020, "r570": 12080, "r590": 13010}


def test_no_configuration_is_a_driver_without_its_kernel_module(driver: SimDriver, tmp_path: Path) -> None:
    out, _ = run(driver, tmp_path, None, 'out["init"] = cu.cuInit(0)\nout["v"] = version()\nout["info"] = info()')
    assert out["init"] == 100
    assert out["v"] == [0, 13000]
    assert out["info"]["config_found"] is False


def test_malformed_configuration_is_named(driver: SimDriver, tmp_path: Path) -> None:
    text = profiles.render_config(profiles.get("r580")).replace("sm_count=132", "sm_count=lots", 1)
    out, err = run(driver, tmp_path, text, 'out["init"] = cu.cuInit(0)\nout["info"] = info()')
    assert out["init"] == 999
    assert "sm_count" in out["info"]["config_error"] and "line" in out["info"]["config_error"]
    assert "refenv simulated driver:" in err


def test_device_nodes_required_but_absent(driver: SimDriver, tmp_path: Path) -> None:
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has a real /dev/nvidiactl")
    text = profiles.render_config(profiles.get("r580"), require_device_nodes=True)
    out, _ = run(driver, tmp_path, text, 'out["init"] = cu.cuInit(0)\nout["info"] = info()')
    assert out["init"] == 100
    assert out["info"]["gpu_count"] == 0


def test_runtime_accepted_needs_the_version_query_first(driver: SimDriver, tmp_path: Path) -> None:
    text = profiles.render_config(profiles.get("r580"))
    out, _ = run(driver, tmp_path, text, 'cu.cuInit(0)\nout["before"] = info()["stage"]\nversion()\n'
                 'count()\nout["after"] = info()["stage"]')
    assert out["before"]["cuinit_called"] is True and out["before"]["runtime_accepted"] is False
    assert out["after"]["runtime_accepted"] is True


def test_error_texts_and_export_table(driver: SimDriver, tmp_path: Path) -> None:
    code = """
s = ctypes.c_char_p()
out["texts"] = [[cu.cuGetErrorString(e, ctypes.byref(s)), s.value.decode()] for e in (34, 803, 804)]
out["names"] = [[cu.cuGetErrorName(e, ctypes.byref(s)), s.value.decode()] for e in (100, 999)]
out["unknown"] = cu.cuGetErrorString(12345, ctypes.byref(s))
table = ctypes.c_void_p(1)
out["export"] = [cu.cuGetExportTable(ctypes.byref(table), ctypes.c_char_p(b"0" * 16)), table.value]
out["info"] = info()["stage"]
"""
    out, _ = run(driver, tmp_path, profiles.render_config(profiles.get("r580")), code)
    assert out["texts"] == [[0, "CUDA driver is a stub library"],
                            [0, "system has unsupported display driver / cuda driver combination"],
                            [0, "forward compatibility was attempted on non supported HW"]]
    assert out["names"] == [[0, "CUDA_ERROR_NO_DEVICE"], [0, "CUDA_ERROR_UNKNOWN"]]
    assert out["unknown"] == 1
    assert out["export"] == [801, None]
    assert out["info"]["export_table_requested"] is True


def test_get_proc_address_picks_the_variant_the_version_asks_for(driver: SimDriver, tmp_path: Path) -> None:
    code = """
def addr(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value
def lookup(name, version, v2=True):
    p, status = ctypes.c_void_p(), ctypes.c_int(-1)
    if v2:
        rc = cu.cuGetProcAddress_v2(name.encode(), ctypes.byref(p), version, ctypes.c_ulonglong(0), ctypes.byref(status))
    else:
        rc = cu.cuGetProcAddress(name.encode(), ctypes.byref(p), version, ctypes.c_ulonglong(0))
    return rc, p.value, status.value
out["mem_v1"] = lookup("cuDeviceTotalMem", 3010)[1] == addr(cu.cuDeviceTotalMem)
out["mem_v2"] = lookup("cuDeviceTotalMem", 13000)[1] == addr(cu.cuDeviceTotalMem_v2)
out["uuid_v2"] = lookup("cuDeviceGetUuid", 11040)[1] == addr(cu.cuDeviceGetUuid_v2)
out["gpa_v2"] = lookup("cuGetProcAddress", 12000, v2=False)[1] == addr(cu.cuGetProcAddress_v2)
out["too_old"] = lookup("cuGetProcAddress", 11000)
out["unknown"] = lookup("cuNoSuchFunction", 13000)
rc, p, status = lookup("cuCtxCreate", 13000)
cu.cuInit(0)
ctx = ctypes.CFUNCTYPE(ctypes.c_int)(p)
out["placeholder"] = [rc, status, ctx()]
out["stage"] = info()["stage"]
"""
    out, _ = run(driver, tmp_path, profiles.render_config(profiles.get("r580")), code)
    assert out["mem_v1"] and out["mem_v2"] and out["uuid_v2"] and out["gpa_v2"]
    assert out["too_old"] == [500, None, 2]
    assert out["unknown"] == [500, None, 1]
    assert out["placeholder"] == [0, 0, 801]
    assert out["stage"]["first_unsupported_call"] == "cuCtxCreate"
    assert out["stage"]["unsupported_calls"] == 1


# ---- CUDA_VISIBLE_DEVICES --------------------------------------------------------------------------


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['value']!r}/{case['gpus'] if isinstance(case['gpus'], int) else len(case['gpus'])}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_visible_devices_vectors(driver: SimDriver, tmp_path: Path, case: dict[str, Any]) -> None:
    code = f"""
arr = (ctypes.c_int * 64)()
value = {case["value"]!r}
n = cu.refenvSimulatedVisibleDevices(None if value is None else value.encode(), arr, 64)
out["visible"] = list(arr[:n])
"""
    out, _ = run(driver, tmp_path, config_for(case["gpus"]), code)
    assert out["visible"] == case["visible"], case["note"]


def test_vectors_agree_with_torchs_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch reconstructs the driver's rules in Python (torch/cuda/__init__.py); the vectors must match it."""
    tc = pytest.importorskip("torch.cuda")
    for case in CASES:
        if case["value"] is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", case["value"])
        gpus = case["gpus"]
        count = gpus if isinstance(gpus, int) else len(gpus)
        parsed = tc._parse_visible_devices()
        if parsed and isinstance(parsed[0], str):
            seen = [] if parsed[0].startswith("MIG-") else tc._transform_uuid_to_ordinals(parsed, gpus)
        else:
            seen = list(parsed)
            cut = next((i for i, x in enumerate(seen) if x >= count), len(seen))
            seen = seen[:cut]
        assert seen == case["visible"], case


@pytest.mark.parametrize(("value", "init", "visible"), [("1", 0, [1]), ("", 100, None), ("-1", 100, None),
                                                         ("1,0", 0, [1, 0])])
def test_visible_devices_applied_at_cuinit(driver: SimDriver, tmp_path: Path, value: str, init: int,
                                           visible: list[int] | None) -> None:
    code = """
out["init"] = cu.cuInit(0)
out["count"] = count()
uuid = (ctypes.c_ubyte * 16)()
out["uuid0"] = bytes(uuid).hex() if cu.cuDeviceGetUuid(uuid, 0) == 0 else None
out["visible"] = info()["visible_devices"]
"""
    r580 = profiles.get("r580")
    out, _ = run(driver, tmp_path, profiles.render_config(r580), code, {"CUDA_VISIBLE_DEVICES": value})
    assert out["init"] == init and out["visible"] == visible
    if visible:
        assert out["count"] == [0, len(visible)]
        assert out["uuid0"] == r580.gpus[visible[0]].uuid[4:].replace("-", "")
