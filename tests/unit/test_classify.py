"""The classifier over plain facts: every verdict, and the combinations that decide the primary one."""

from __future__ import annotations

from typing import Any, cast

import pytest

from harness.classify import classify as classify_facts
from harness.facts import Facts
from harness.schema import (
    ARCH_UNSUPPORTED,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    NO_DRIVER,
    NOT_VISIBLE,
    OK,
    Diagnosis,
    Finding,
)
from tests.unit.facts_builder import A100, H100, NO_LIBCUDA, NO_NVML, P40, UNAVAILABLE, healthy, merge, no_driver


def classify(facts: dict[str, Any]) -> Diagnosis:
    """The classifier over a record of facts_builder's (plain dicts, as a saved document holds them)."""
    return classify_facts(cast(Facts, facts))


def verdicts(diag: Diagnosis) -> list[str]:
    return [f.verdict for f in diag.findings if f.severity == "error"]


def finding(diag: Diagnosis, verdict: str) -> Finding:
    return next(f for f in diag.findings if f.verdict == verdict)


def text(f: Finding) -> str:
    return "\n".join((f.title, *f.evidence, *f.remediation))


def test_healthy_machine_is_ok() -> None:
    diag = classify(healthy())
    assert diag.verdict == OK
    assert verdicts(diag) == []
    assert not diag.simulated


def test_bare_host_without_driver_is_no_driver_with_the_wheels_driver_floor() -> None:
    diag = classify(no_driver())
    assert diag.verdict == NO_DRIVER
    f = finding(diag, NO_DRIVER)
    assert "libcuda.so.1 does not load" in text(f)
    assert "580.65.06" in text(f)  # the floor for torch's CUDA 13.0 runtime


def test_no_driver_and_cpu_wheel_reports_both_driver_first() -> None:
    diag = classify(no_driver(torch={"version": "2.13.0+cpu", "cuda": None, "arch_list": None,
                                     "init_error": "Torch not compiled with CUDA enabled"}))
    assert diag.verdict == NO_DRIVER
    assert verdicts(diag) == [NO_DRIVER, CPU_WHEEL]
    # No driver to match: the fix is the default CUDA build and the driver it needs.
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130" in text(finding(diag, CPU_WHEEL))


def test_container_without_gpu_access_is_not_visible_with_gpus_all() -> None:
    diag = classify(no_driver(visibility={"in_container": True, "nvidia_visible_devices": "void"}))
    assert diag.verdict == NOT_VISIBLE
    f = finding(diag, NOT_VISIBLE)
    assert "--gpus all" in text(f)
    assert "NVIDIA_VISIBLE_DEVICES='void'" in text(f)


def test_cpu_wheel_in_container_without_gpu_is_cpu_wheel_first() -> None:
    facts = no_driver(visibility={"in_container": True},
                      torch={"version": "2.13.0+cpu", "cuda": None, "init_error": "Torch not compiled with CUDA enabled"})
    diag = classify(facts)
    assert verdicts(diag) == [CPU_WHEEL, NOT_VISIBLE]
    assert diag.verdict == CPU_WHEEL


def test_capabilities_utility_gives_nvml_but_no_libcuda() -> None:
    facts = healthy(in_container=True, driver={"libcuda": NO_LIBCUDA, "dev_nodes": []},
                    visibility={"nvidia_driver_capabilities": "utility"}, torch=UNAVAILABLE)
    diag = classify(facts)
    assert diag.verdict == NOT_VISIBLE
    f = finding(diag, NOT_VISIBLE)
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in text(f)
    assert "nvidia-smi works" in text(f)


@pytest.mark.parametrize(("rc", "name", "phrase"), [
    (3, "CUDA_ERROR_NOT_INITIALIZED", "nvidia_uvm"),
    (34, "CUDA_ERROR_STUB_LIBRARY", "stubs"),
    (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "reboot"),
    (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "/usr/local/cuda/compat"),
    (999, "CUDA_ERROR_UNKNOWN", "rmmod nvidia_uvm"),
])
def test_cuinit_errors_are_driver_broken_with_their_fix(rc: int, name: str, phrase: str) -> None:
    facts = healthy(driver={"libcuda": {"cuinit": rc, "cuinit_name": name, "cuinit_message": "msg",
                                        "device_count": None}}, torch=UNAVAILABLE)
    diag = classify(facts)
    assert diag.verdict == DRIVER_BROKEN
    f = finding(diag, DRIVER_BROKEN)
    assert f"cuInit(0) = {rc} ({name}" in text(f)
    assert phrase in text(f)


def test_version_mismatch_is_driver_broken() -> None:
    facts = healthy(driver={"nvml": {"init_error": "Driver/library version mismatch", "init_error_code": 18,
                                     "driver_version": None, "devices": None, "cuda_driver_version": None}},
                    torch=UNAVAILABLE)
    diag = classify(facts)
    assert diag.verdict == DRIVER_BROKEN
    assert "reboot" in text(finding(diag, DRIVER_BROKEN))


def test_cpu_wheel_on_a_healthy_r570_gets_the_variant_the_driver_runs() -> None:
    facts = healthy("570.172.08", torch_version="2.14.1+cpu", cuda=None, torch=UNAVAILABLE)
    diag = classify(facts)
    assert diag.verdict == CPU_WHEEL
    # CUDA 12.8 driver: the newest 2.14 variant at or below 12.8 is cu126.
    assert "pip install torch==2.14.1 --index-url https://download.pytorch.org/whl/cu126" in text(finding(diag, CPU_WHEEL))


def test_cu130_wheel_on_r570_is_driver_too_old_with_both_ways_out() -> None:
    warning = ("The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver by "
               "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx")
    facts = healthy("570.172.08", torch={**UNAVAILABLE, "init_warning": warning})
    diag = classify(facts)
    assert diag.verdict == DRIVER_TOO_OLD
    t = text(finding(diag, DRIVER_TOO_OLD))
    assert "580.65.06" in t
    assert "found version 12080" in t
    assert "--index-url https://download.pytorch.org/whl/cu126" in t


def test_cu128_wheel_on_r470_points_at_the_last_cuda11_torch() -> None:
    facts = healthy("470.256.02", torch_version="2.10.0+cu128", cuda="12.8", torch=UNAVAILABLE)
    diag = classify(facts)
    assert diag.verdict == DRIVER_TOO_OLD
    assert 'pip install "torch==2.7.*" --index-url https://download.pytorch.org/whl/cu118' in text(
        finding(diag, DRIVER_TOO_OLD))


def test_cu128_wheel_on_r535_runs_by_minor_version_compatibility() -> None:
    assert classify(healthy("535.247.01", torch_version="2.10.0+cu128", cuda="12.8")).verdict == OK


@pytest.mark.parametrize(("value", "phrase"), [
    ("", "set and empty"),
    ("-1", "negative ordinal"),
    ("7", "there is no device 7"),
    ("GPU-deadbeef", "no device has this UUID"),
    ("all", "'all' is a keyword of NVIDIA_VISIBLE_DEVICES"),
])
def test_cuda_visible_devices_that_hide_everything(value: str, phrase: str) -> None:
    facts = healthy(gpus=[A100, H100], visibility={"cuda_visible_devices": value}, torch=UNAVAILABLE)
    diag = classify(facts)
    assert diag.verdict == NOT_VISIBLE
    assert phrase in text(finding(diag, NOT_VISIBLE))


def test_cuda_visible_devices_selecting_one_of_two_is_context_only() -> None:
    facts = healthy(gpus=[A100, H100], visibility={"cuda_visible_devices": "1"})
    diag = classify(facts)
    assert diag.verdict == OK
    assert any("shows 1 of 2 devices" in f.title for f in diag.findings)


def test_driver_too_old_comes_before_hidden_devices() -> None:
    facts = healthy("470.256.02", visibility={"cuda_visible_devices": ""}, torch=UNAVAILABLE)
    diag = classify(facts)
    assert verdicts(diag) == [DRIVER_TOO_OLD, NOT_VISIBLE]


def test_pascal_gpu_on_cu130_wheel_is_arch_unsupported_with_a_wheel_that_has_it() -> None:
    diag = classify(healthy(gpus=[P40]))
    assert diag.verdict == ARCH_UNSUPPORTED
    t = text(finding(diag, ARCH_UNSUPPORTED))
    assert "sm_61" in t
    assert "--index-url https://download.pytorch.org/whl/cu126" in t  # cu126 still carries sm_60


def test_arch_warning_from_a_report_is_arch_unsupported() -> None:
    facts = healthy(driver={"nvml": {"devices": None}},
                    torch={"arch_list": None, "warnings": [
                        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                        "PyTorch installation."]}, torch_version="2.5.1+cu124", cuda="12.4")
    diag = classify(facts)
    assert ARCH_UNSUPPORTED in verdicts(diag)
    assert "sm_120" in text(finding(diag, ARCH_UNSUPPORTED))


def test_simulated_driver_that_the_runtime_accepted_is_ok_and_marked_simulated() -> None:
    stage = {"visible_devices": [0], "stage": {"driver_version_queried": True, "cuinit_called": True,
                                               "cuinit_result": 0, "device_count_queried": False, "device_count": None,
                                               "export_table_requested": True, "runtime_accepted": True}}
    facts = healthy(driver={"simulated": {"libcuda": {"profile": "r580"}}},
                    torch={**UNAVAILABLE, "init_warning": "Unexpected error from cudaGetDeviceCount(). Did you run "
                           "some cuda functions before calling NumCudaDevices() that might have already set an error? "
                           "Error 801: operation not supported", "simulated_stage": stage})
    diag = classify(facts)
    assert diag.verdict == OK
    assert diag.simulated
    assert any("simulated" in f.title for f in diag.findings if f.verdict == OK)


def test_unexplained_torch_error_is_driver_broken_and_silence_is_not_visible() -> None:
    said = healthy(torch={**UNAVAILABLE, "init_warning": "Unexpected error from cudaGetDeviceCount(). Error 801: x"})
    assert classify(said).verdict == DRIVER_BROKEN
    silent = healthy(torch={**UNAVAILABLE, "init_error": "No CUDA GPUs are available"})
    assert classify(silent).verdict == NOT_VISIBLE


def test_a_check_that_raises_is_recorded_and_the_rest_still_run() -> None:
    facts = healthy(gpus=[merge(A100, {"compute_capability": "x.y"})])
    diag = classify(facts)
    assert any("check_arch failed" in u for u in diag.unknowns)
    assert diag.verdict == OK


def test_unknown_facts_are_listed_not_guessed() -> None:
    diag = classify({"source": "probed", "torch": {"importable": True, "version": "2.1.0+cu121", "cuda": "12.1"},
                     "driver": {"libcuda": {}, "nvml": {}, "nvidia_smi": {}}, "visibility": {}, "host": {}})
    assert diag.verdict == OK
    assert "whether libcuda.so.1 loads and what cuInit returns" in diag.unknowns
    assert "whether it runs in a container" in diag.unknowns


def test_nvml_without_libcuda_on_a_bare_host_is_a_partial_install() -> None:
    facts = healthy(driver={"libcuda": NO_LIBCUDA}, torch=UNAVAILABLE)
    assert classify(facts).verdict == DRIVER_BROKEN
    assert classify(healthy(driver={"libcuda": NO_LIBCUDA, "nvml": NO_NVML, "dev_nodes": []},
                            torch=UNAVAILABLE)).verdict == NO_DRIVER
