"""Every collect_env fixture parses into the facts its case implies, with provenance on the right lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.intake import ParsedReport, load_report

DATA = Path(__file__).resolve().parents[1] / "data" / "collect_env"
FIXTURES = sorted(p.name for p in DATA.glob("*.txt"))

NO_DRIVER = "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver"

# fixture -> {dotted fact path: expected value}; a callable checks the value instead.
EXPECTED: dict[str, dict[str, Any]] = {
    "cpu-wheel_torch2.13.0.txt": {
        "torch.version": "2.13.0+cpu", "torch.importable": True, "torch.cuda": None, "torch.is_available": False,
        "torch.init_error": "Torch not compiled with CUDA enabled", "host.os": "Linux", "host.machine": "x86_64",
        "host.python": "3.11.7", "host.platform": "Linux-6.18.44-fc-v857-x86_64-with-glibc2.36",
        "driver.nvidia_smi.works": False, "driver.nvml.driver_version": None, "torch.cudart_version": None,
    },
    "no-driver_torch2.14.1-cu130.txt": {
        "torch.version": "2.14.1+cu130", "torch.cuda": "13.0", "torch.is_available": False,
        "torch.init_error": lambda v: v.startswith(NO_DRIVER), "torch.cudart_version": 13000,
        "torch.cuda_runtime_package": "nvidia-cuda-runtime 13.0.96", "driver.libcuda.loaded": None,
    },
    "no-driver_torch2.10.0-cu128.txt": {
        "torch.version": "2.10.0+cu128", "torch.cuda": "12.8", "torch.cudart_version": 12080,
        "torch.cuda_runtime_package": "nvidia-cuda-runtime-cu12 12.8.90",
        "torch.init_error": lambda v: v.startswith(NO_DRIVER), "torch.init_warning": None,
    },
    "cvd-empty_torch2.14.1-cu130.txt": {
        "visibility.cuda_visible_devices": "", "torch.is_available": False, "torch.device_count": 0,
        "torch.cuda": "13.0",
    },
    "format-1.8.1_torch2.10.0-cu128.txt": {
        "torch.version": "2.10.0+cu128", "torch.cuda": "12.8", "host.python": "3.11", "host.os": "Linux",
        "host.platform": None, "driver.nvml.driver_version": None, "driver.nvidia_smi.works": False,
    },
    "format-1.13.1_torch2.14.1-cu130.txt": {
        "torch.version": "2.14.1+cu130", "torch.cuda": "13.0", "torch.is_available": False,
        "torch.cudart_version": None,  # its pip list is filtered to torch and numpy
    },
    "format-2.0.1_torch2.13.0-cpu.txt": {"torch.version": "2.13.0+cpu", "torch.cuda": None, "torch.importable": True},
    "format-2.1.2_torch2.10.0-cu128.txt": {"torch.version": "2.10.0+cu128", "torch.cuda": "12.8"},
    "format-2.4.1_torch2.14.1-cu130.txt": {"torch.version": "2.14.1+cu130", "host.python": "3.11.7"},
    "format-2.7.1_torch2.10.0-cu128.txt": {"torch.cudart_version": 12080, "torch.cuda": "12.8"},
    "truncated_torch2.14.1-cu130.txt": {
        "torch.version": "2.14.1+cu130", "torch.cuda": "13.0", "torch.is_available": False,
        "driver.nvml.driver_version": None, "driver.nvml.devices": None, "driver.nvidia_smi.works": None,
        "torch.cuda_runtime_package": None,
    },
    "docker-without-gpus.txt": {
        "visibility.in_container": True, "visibility.container_evidence": "`docker run` without --gpus",
        "torch.init_error": lambda v: v.startswith(NO_DRIVER), "torch.cuda": "13.0",
    },
    "pascal-on-cu130.txt": {
        "torch.is_available": True, "driver.nvml.driver_version": "580.95.05",
        "driver.nvml.devices": [{"index": 0, "name": "NVIDIA GeForce GTX 1080", "compute_capability": "6.1"}],
        "torch.arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
    },
    "too-old-driver_cu121-on-r470.txt": {
        "torch.version": "2.1.0+cu121", "torch.cuda": "12.1", "torch.is_available": False,
        "torch.init_warning": lambda v: v.startswith("The NVIDIA driver on your system is too old (found version "
                                                     "11040).") and not v.endswith(")"),
        "driver.libcuda.driver_version": 11040, "driver.libcuda.loaded": True,
        "driver.nvml.driver_version": "470.86", "driver.nvml.loaded": True, "driver.nvidia_smi.works": True,
        "driver.nvml.devices": [{"index": 0, "name": "NVIDIA GeForce RTX 3050 Laptop GPU"}],
        "torch.cudart_version": 12010, "torch.cuda_runtime_package": "nvidia-cuda-runtime-cu12 12.1.105",
        "host.os": "Linux", "host.python": "3.10.13",
    },
    "too-old-driver_cu121-py38-r460.txt": {
        "torch.version": "2.1.0+cu121", "torch.cuda": "12.1", "torch.is_available": False,
        "torch.init_warning": lambda v: v.startswith("The NVIDIA driver on your system is too old (found version "
                                                     "11020)."),
        "driver.libcuda.driver_version": 11020, "driver.nvml.driver_version": "460.32.03",
        "driver.nvml.devices": [{"index": 0, "name": "Tesla T4"}], "host.os": "Linux", "host.python": "3.8.10",
    },
    "windows_cu121-driver-551.61.txt": {
        "host.os": "Windows", "host.machine": "AMD64", "host.platform": "Windows-10-10.0.22631-SP0",
        "driver.nvml.driver_version": "551.61", "torch.is_available": True, "torch.cuda": "12.1",
        "torch.cudart_version": None, "driver.nvml.devices": [{"index": 0, "name": "NVIDIA GeForce RTX 4070"}],
    },
    "driver-library-mismatch.txt": {
        "driver.nvml.init_error": "Driver/library version mismatch", "driver.nvml.init_error_code": 18,
        "driver.nvml.loaded": True, "driver.nvml.driver_version": None, "driver.nvidia_smi.works": False,
        "torch.init_warning": lambda v: "Error 803: system has unsupported display driver" in v,
        "driver.libcuda.cuinit": None,
    },
    "sm120-on-cu118.txt": {
        "torch.version": "2.0.1+cu118", "torch.cuda": "11.8", "torch.is_available": True,
        "driver.nvml.devices": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}],
        "torch.devices": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}],
        "torch.arch_list": ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
        "torch.warnings": lambda v: v[0].startswith("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not"),
        "torch.cudart_version": None,  # +cu118 wheels of 2.0 bundle their runtime: no package to read
    },
    "forward-compat-804.txt": {
        "torch.init_warning": lambda v: "Error 804: forward compatibility was attempted on non supported HW" in v,
        "visibility.in_container": True, "driver.nvml.driver_version": "535.183.01", "torch.cudart_version": 12040,
    },
    "rocm_mi210.txt": {
        "torch.hip": "6.2.41133-dd7f95766", "torch.cuda": None, "torch.is_available": True,
        "torch.devices": [{"index": None, "name": "AMD Instinct MI210 (gfx90a:sramecc+:xnack-)"}],
        "driver.nvml.devices": None, "driver.nvml.driver_version": None, "driver.nvidia_smi.works": None,
    },
    "format-1.5_windows-two-titan.txt": {
        "torch.version": "1.5.0+cu101", "torch.cuda": "10.1", "torch.is_available": True, "host.os": "Windows",
        "host.python": "3.7", "driver.nvml.driver_version": "442.92",
        "driver.nvml.devices": [{"index": 0, "name": "TITAN RTX"}, {"index": 1, "name": "TITAN RTX"}],
    },
}


def _get(facts: Any, path: str) -> Any:
    node = facts
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


@pytest.fixture(scope="module", params=FIXTURES)
def parsed(request: pytest.FixtureRequest) -> tuple[str, ParsedReport]:
    return request.param, load_report(DATA / request.param)


def test_every_fixture_has_expectations() -> None:
    assert sorted(EXPECTED) == FIXTURES


def test_fixture_gives_expected_facts(parsed: tuple[str, ParsedReport]) -> None:
    name, report = parsed
    assert report.kind == "collect_env"
    assert report.facts["source"] == "collect_env"
    for path, want in EXPECTED[name].items():
        got = _get(report.facts, path)
        if callable(want):
            assert got is not None and want(got), f"{name}: {path} = {got!r}"
        else:
            assert got == want, f"{name}: {path} = {got!r}, expected {want!r}"


def test_provenance_quotes_the_fixture_lines(parsed: tuple[str, ParsedReport]) -> None:
    name, report = parsed
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    assert report.provenance
    for path, (number, text) in report.provenance.items():
        assert lines[number - 1].rstrip() == text, f"{name}: {path} points at line {number}"


def test_provenance_of_a_value_shows_it(parsed: tuple[str, ParsedReport]) -> None:
    name, report = parsed
    for path in ("torch.version", "torch.cuda", "driver.nvml.driver_version", "driver.libcuda.driver_version",
                 "visibility.cuda_visible_devices", "host.python"):
        value = _get(report.facts, path)
        if isinstance(value, (str, int)) and value != "":
            assert str(value) in report.provenance[path][1], f"{name}: {path}"


def test_unknowns_name_what_collect_env_cannot_say(parsed: tuple[str, ParsedReport]) -> None:
    report = parsed[1]
    text = "\n".join(report.unknowns)
    assert "what cuInit(0) returns: collect_env does not say" in text
    if _get(report.facts, "driver.libcuda.loaded") is None:
        assert "whether libcuda.so.1 loads: collect_env does not say" in text
    else:
        assert "whether libcuda.so.1 loads" not in text
    if _get(report.facts, "visibility.cuda_visible_devices") is None:
        assert "CUDA_VISIBLE_DEVICES: collect_env does not say" in text
    else:
        assert "CUDA_VISIBLE_DEVICES:" not in text


def test_truncated_fixture_lists_missing_sections() -> None:
    report = load_report(DATA / "truncated_torch2.14.1-cu130.txt")
    first = report.unknowns[0]
    assert first.startswith("the dump is cut off after 'CUDA runtime version'")
    assert "'GPU models and configuration'" in first and "'Nvidia driver version'" in first
    assert "the NVIDIA driver version: the dump is cut off before 'Nvidia driver version'" in report.unknowns


def test_complete_fixture_is_not_called_truncated() -> None:
    report = load_report(DATA / "no-driver_torch2.14.1-cu130.txt")
    assert not any("cut off" in u for u in report.unknowns)
    assert "the NVIDIA driver version: the dump says 'Could not collect'" in report.unknowns


def test_notes_explain_conclusions() -> None:
    report = load_report(DATA / "too-old-driver_cu121-on-r470.txt")
    notes = "\n".join(report.notes)
    assert "torch 2.1.0+cu121: a CUDA 12.1 build (from 'PyTorch version' and 'CUDA used to build PyTorch')" in notes
    assert "system CUDA toolkit's nvcc" in notes and report.details["nvcc"] == "11.4.152"
    assert "estimated from the pip package nvidia-cuda-runtime-cu12==12.1.105" in notes
    windows = "\n".join(load_report(DATA / "windows_cu121-driver-551.61.txt").notes)
    assert "driver 551.61 is a Windows driver number" in windows
