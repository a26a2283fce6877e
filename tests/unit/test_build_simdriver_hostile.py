"""The simulated driver's configuration under hostile values: the Python writer refuses them, and the C
parser defends itself too (long values, injected lines, unknown sections, too many GPUs, oversized files)."""

from __future__ import annotations

import dataclasses
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
from refenv.model.profiles import ProfileError

SCRIPT = """
import ctypes, json
cu = ctypes.CDLL("libcuda.so.1")
cu.refenvSimulatedDriverInfo.restype = ctypes.c_char_p
n = ctypes.c_int(-1)
init = cu.cuInit(0)
cu.cuDeviceGetCount(ctypes.byref(n))
print(json.dumps({"init": init, "count": n.value, "info": json.loads(cu.refenvSimulatedDriverInfo())}))
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> SimDriver:
    return simdriver.build(tmp_path_factory.getbasetemp() / "simdriver-cache")


def read_config(driver: SimDriver, tmp_path: Path, text: str | bytes) -> dict[str, Any]:
    """What the driver makes of a configuration file, read in a fresh process."""
    conf = tmp_path / "simdriver.conf"
    conf.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(driver.env(conf))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def good() -> str:
    return profiles.render_config(profiles.get("r580"))


def refused(out: dict[str, Any], phrase: str) -> None:
    assert out["init"] == 999 and out["count"] in (0, -1), out
    assert phrase in out["info"]["config_error"], out["info"]["config_error"]


def test_the_good_configuration_reads(driver: SimDriver, tmp_path: Path) -> None:
    out = read_config(driver, tmp_path, good())
    assert out["init"] == 0 and out["count"] == len(profiles.get("r580").gpus)


def test_a_500_character_name_is_refused_not_cut(driver: SimDriver, tmp_path: Path) -> None:
    name = profiles.get("r580").gpus[0].name
    refused(read_config(driver, tmp_path, good().replace(f"name={name}", "name=" + "A" * 500, 1)), "name")


def test_a_line_longer_than_the_buffer_is_refused(driver: SimDriver, tmp_path: Path) -> None:
    refused(read_config(driver, tmp_path, good().replace("format=1", "format=1\n#" + "x" * 600, 1)), "line too long")


def test_an_injected_line_repeating_a_key_is_refused(driver: SimDriver, tmp_path: Path) -> None:
    name = profiles.get("r580").gpus[0].name
    text = good().replace(f"name={name}", f"name={name}\nname=Evil GPU", 1)
    refused(read_config(driver, tmp_path, text), "appears twice")


def test_an_unknown_section_is_refused(driver: SimDriver, tmp_path: Path) -> None:
    refused(read_config(driver, tmp_path, good() + "[evil]\n"), "unknown section")


def test_more_gpus_than_the_limit_are_refused(driver: SimDriver, tmp_path: Path) -> None:
    block = good()[good().index("[gpu]"):].split("\n\n")[0]
    refused(read_config(driver, tmp_path, good() + ("\n" + block + "\n") * 65), "too many GPUs")


def test_a_file_beyond_64_kib_is_refused_not_half_read(driver: SimDriver, tmp_path: Path) -> None:
    refused(read_config(driver, tmp_path, good() + ("# padding\n" * 7000)), "longer than 64 KiB")


@pytest.mark.parametrize("cc", ["-8.0", "8.-1", " 8.0x", "99999999999.0", "8"])
def test_a_malformed_compute_capability_is_refused(driver: SimDriver, tmp_path: Path, cc: str) -> None:
    gpu = profiles.get("r580").gpus[0]
    text = good().replace(f"compute_capability={gpu.compute_capability}", f"compute_capability={cc}", 1)
    refused(read_config(driver, tmp_path, text), "compute_capability")


@pytest.mark.parametrize("name", ["Tesla T4\n[gpu]\nname=Injected", "Tesla T4\r", "T\x00", "A" * 96, "Ä" * 48, " "])
def test_the_writer_refuses_names_the_parser_cannot_hold(name: str) -> None:
    base = profiles.get("r580")
    gpu = dataclasses.replace(base.gpus[0], name=name)
    with pytest.raises(ProfileError, match="name"):
        profiles.render_config(base, [gpu])


def test_the_writer_refuses_more_gpus_than_the_driver_holds() -> None:
    base = profiles.get("r580")
    gpus = [dataclasses.replace(base.gpus[0], uuid=f"GPU-{i:08x}-0000-4000-8000-000000000000",
                                pci_bus_id=f"0000{i // 256:04X}:{i % 256:02X}:00.0", minor=i) for i in range(65)]
    with pytest.raises(ProfileError, match="at most 64 GPUs"):
        profiles.render_config(base, gpus)
    assert profiles.render_config(base, gpus[:64]).count("[gpu]") == 64


@pytest.mark.parametrize("value", ["٠", "０", "9" * 5000])
def test_the_toolkit_reads_only_ascii_device_indexes(value: str) -> None:
    from refenv.run.toolkit import ToolkitError, select_gpus

    with pytest.raises(ToolkitError, match="unknown device"):
        select_gpus(profiles.get("r580"), value)
