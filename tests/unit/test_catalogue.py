"""The failure catalogue: validated at load, found by scan in linear time, rendered per torch release."""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from harness import catalogue
from harness.catalogue.load import DATA_FILE, CatalogueError, validate
from harness.schema import VERDICTS

RAW: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))

# torch's and NVIDIA's words as facts/torch-failures.md quotes them (measured with torch 2.14.1).
TOO_OLD_2_14 = ("CUDA initialization: The NVIDIA driver on your system is too old (found version 12080). Please "
                "update your GPU driver by downloading and installing a new version from the URL: "
                "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
                "PyTorch version that has been compiled with your version of the CUDA driver.")
FACT_LINES = {
    TOO_OLD_2_14: "torch.driver_too_old",
    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed "
    "a driver from http://www.nvidia.com/Download/index.aspx": "torch.no_driver",
    "RuntimeError: No CUDA GPUs are available": "torch.no_gpus",
    "UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu.":
        "torch.init_failed",
    "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
    "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be "
    "zero.": "torch.unknown_error",
    "AssertionError: Torch not compiled with CUDA enabled": "torch.not_compiled",
    "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.":
        "torch.arch_not_compatible",
    "RuntimeError: CUDA error: no kernel image is available for execution on the device": "cuda.no_kernel_image",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
    "NVIDIA driver is installed and running.": "smi.no_driver",
    "Failed to initialize NVML: Driver/library version mismatch": "nvml.version_mismatch",
    'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].':
        "docker.no_gpu_runtime",
    "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a "
    "newer version, or use an earlier cuda container": "toolkit.requirement",
    "docker: Error response from daemon: unknown or invalid runtime name: nvidia.": "docker.unknown_runtime",
    "[ 12.3] NVRM: API mismatch: the client has the version 535.183.01, but": "kernel.api_mismatch",
    "[ 99.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.": "kernel.xid",
    "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x26:0xffff:1290)": "kernel.rm_init_adapter",
}


@pytest.mark.parametrize("line", FACT_LINES, ids=list(FACT_LINES.values()))
def test_each_documented_message_is_found(line: str) -> None:
    assert FACT_LINES[line] in [h.entry.id for h in catalogue.scan(line)]


def test_scan_captures_the_numbers() -> None:
    (hit,) = [h for h in catalogue.scan(TOO_OLD_2_14) if h.entry.id == "torch.driver_too_old"]
    assert hit.params == {"found": "12080"}
    assert TOO_OLD_2_14[hit.start:].startswith("The NVIDIA driver on your system is too old")
    line = ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
            "functions before calling NumCudaDevices() that might have already set an error? Error 804: forward "
            "compatibility was attempted on non supported HW")
    hits = {h.entry.id: h.params for h in catalogue.scan(line)}
    assert hits["torch.unexpected_error"]["code"] == "804"
    assert "cuda.compat_not_supported" in hits
    arch = catalogue.scan("/t/cuda/__init__.py:287: UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 "
                          "is not compatible with the current PyTorch installation.")
    assert arch[0].params == {"name": "NVIDIA GeForce RTX 5090", "sm": "120"}


def test_a_source_line_quoting_a_message_is_still_a_hit_but_names_where() -> None:
    hits = catalogue.scan('    raise AssertionError("Torch not compiled with CUDA enabled")')
    assert [h.start for h in hits] == [26]


def test_unrelated_text_has_no_hits() -> None:
    assert catalogue.scan("Collecting environment information...") == []
    assert catalogue.scan("") == []


def test_every_wording_is_recognised_by_its_own_row() -> None:
    for e in catalogue.entries():
        for t in e.texts:
            text = catalogue.render(e, None if t.since == "*" else t.since, **dict(e.example))
            found = {h.entry.id for h in catalogue.scan_text(text)}
            assert e.id in found or (e.code and e.code.name), (e.id, t.since, found)


def _scan_seconds(line: str) -> float:
    began = time.process_time()  # the scan's own time: other work on a shared machine does not count
    catalogue.scan(line)
    return time.process_time() - began


@pytest.mark.parametrize("line", [
    lambda n: "x" * n,
    lambda n: "with CUDA capability sm_" * (n // 24),
    lambda n: "Found GPU0 " + "a" * n + " which is of cuda capability 3.7",
    lambda n: "Unexpected error from cudaGetDeviceCount()" + " " * n + "Error 3: x",
    lambda n: ("Failed to initialize NVML: " + "é" * 200) * (n // 250),
], ids=["plain", "repeated-anchor", "long-name", "far-apart", "repeated-nvml"])
def test_a_megabyte_line_scans_in_linear_time(line: Callable[[int], str]) -> None:
    # Four times the line costs about four times as much (a scan that backtracked: sixteen or more); a ratio of two
    # readings in the same run holds on any machine, where a bound in seconds holds only where it was measured.
    whole, quarter = _scan_seconds(line(1_000_000)), _scan_seconds(line(250_000))
    assert whole < 8 * quarter + 0.05, (whole, quarter)


def test_torch_text_per_release() -> None:
    assert catalogue.torch_text("torch.driver_too_old", "2.14.1", found=12080) == TOO_OLD_2_14.removeprefix(
        "CUDA initialization: ")
    old = catalogue.torch_text("torch.gpu_too_old", "1.13", index=0, name="Tesla K80", major=3, minor=7,
                               min_major=5, min_minor=0)
    new = catalogue.torch_text("torch.gpu_too_old", "2.13.0", index=0, name="Tesla K80", major=3, minor=7)
    assert old.startswith("Found GPU0 Tesla K80 which is of cuda capability 3.7.")
    assert new.startswith("Found GPU0 Tesla K80 which is of compute capability (CC) 3.7.")
    with pytest.raises(ValueError, match="found"):
        catalogue.torch_text("torch.driver_too_old", "2.14")


def test_lookups_by_code() -> None:
    assert catalogue.by_cuda_error(804) is catalogue.entry("cuda.compat_not_supported")
    assert catalogue.by_cuda_error(35) is catalogue.entry("cuda.insufficient_driver")
    assert catalogue.by_cuda_error(12345) is None
    assert catalogue.by_nvml_return(18) is catalogue.entry("nvml.version_mismatch")
    assert catalogue.nvml_code_of("driver not loaded") == 9
    assert catalogue.cuda_error_names()[34] == "CUDA_ERROR_STUB_LIBRARY"
    with pytest.raises(KeyError, match="nope"):
        catalogue.entry("torch.nope")


def test_every_row_has_a_verdict_source_and_failing_rows_a_remedy() -> None:
    for e in catalogue.entries():
        assert e.verdict in ("", *VERDICTS) and e.source in RAW["sources"]
        if e.verdict:
            assert e.remedy is not None, e.id


def _broken(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(RAW)
    target: Any = data
    *head, last = path.split(".")
    for key in head:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[last] = value
    return data


@pytest.mark.parametrize(("path", "value", "message"), [
    ("entries.0.verdict", "BROKEN", "unknown verdict"),
    ("entries.0.source", "blog", "named sources"),
    ("entries.0.layer", "gpu", "layer"),
    ("entries.0.patterns", [{"anchor": "too old", "regex": "(too old )+"}], "quantified group"),
    ("entries.0.patterns", [{"anchor": "too old", "regex": "too old.*"}], "bounded"),
    ("entries.0.patterns", [{"anchor": "too old", "regex": "too old.{1,}"}], "bounded"),
    ("entries.0.patterns", [{"anchor": "no match", "regex": "no match here"}], "its own wording"),
    ("entries.0.patterns", [{"anchor": "not in the text", "regex": "too old"}], "its own wording"),
    ("entries.1.id", "torch.driver_too_old", "duplicate"),
    ("entries.0.example", {}, "example value for found"),
])
def test_a_malformed_row_is_refused_naming_it(path: str, value: Any, message: str) -> None:
    with pytest.raises(CatalogueError, match=message):
        validate(_broken(path, value))


def test_each_wording_is_found_inside_noise_and_noise_alone_is_nothing() -> None:
    rng = random.Random(10)
    alphabet = "abc XYZ:;()[]\"'é中\t/_-0123456789"
    for e in catalogue.entries():
        for t in e.texts:
            first = catalogue.render(e, None if t.since == "*" else t.since, **dict(e.example)).splitlines()[0]
            if not any(p.regex.search(first) for p in e.patterns):
                continue  # a bare CUDA error text ('unknown error') is found by its code's name only
            noise = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
            line = f"{noise} UserWarning: {first}" if e.id != "torch.cc_list_item" else first
            assert e.id in [h.id for h in catalogue.scan(line)], (e.id, line)
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        assert catalogue.scan(text) == []


def test_the_shipped_catalogue_passes_the_full_validation_the_run_time_load_skips() -> None:
    from harness.catalogue.load import _data

    full = validate(_data())
    assert full == catalogue.entries()
    assert all(p.regex.pattern == p.source for e in full for p in e.patterns)
