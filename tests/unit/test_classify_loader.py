"""A driver library that is there but that the loader refuses is its own finding, with the loader's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from harness import catalogue
from harness.catalogue.remedies import render
from harness.classify import classify
from harness.facts import Facts
from harness.schema import DRIVER_BROKEN, NOT_VISIBLE
from tests.unit.facts_builder import NO_NVML, UNAVAILABLE, healthy, merge

GLIBC = ("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by "
         "/usr/lib/x86_64-linux-gnu/libcuda.so.1)")
TORCH_NO_DRIVER = ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
                   "driver from http://www.nvidia.com/Download/index.aspx")


def refused(error: str, file: str | None, nodes: list[str] | None = None) -> dict[str, Any]:
    """A container given the GPU (device nodes, the libraries mounted) whose libcuda.so.1 does not load."""
    libcuda = {"loaded": False, "path": None, "error": error, "file": file, "driver_version": None, "cuinit": None,
               "cuinit_name": None, "cuinit_message": None, "device_count": None}
    base = healthy(in_container=True, driver={
        "dev_nodes": ["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"] if nodes is None else nodes,
        "proc_version": None, "kernel_module_version": None, "libcuda": libcuda, "nvml": NO_NVML,
        "nvidia_smi": {"path": "/usr/bin/nvidia-smi", "rc": 127, "output": GLIBC, "works": False}},
        torch={**UNAVAILABLE, "init_error": TORCH_NO_DRIVER})
    return merge(base, {"host": {"libc": "glibc 2.31"}})


def test_glibc_too_old_for_the_library_is_driver_broken_with_the_loaders_words() -> None:
    diag = classify(cast(Facts, refused(f"{GLIBC}", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")))
    assert diag.verdict == DRIVER_BROKEN
    first = diag.findings[0]
    assert "is there but does not load" in first.title and "GLIBC_2.34" in first.title
    assert any("/dev/nvidia0" in e for e in first.evidence), first.evidence
    assert any("needs GLIBC_2.34; this system's C library: glibc 2.31" in e for e in first.evidence)
    assert "started without GPU access" not in " ".join(f.title for f in diag.findings)
    assert not [f for f in diag.findings if f.verdict == NOT_VISIBLE]
    assert first.remedy is not None and first.remedy.get("needs") == "GLIBC_2.34"
    assert "newer base image" in " ".join(first.remediation)


@pytest.mark.parametrize("reason", ["wrong ELF class: ELFCLASS32", "invalid ELF header", "file too short"])
def test_a_foreign_or_broken_file_is_the_same_finding(reason: str) -> None:
    error = f"/usr/lib/x86_64-linux-gnu/libcuda.so.1: {reason}"
    diag = classify(cast(Facts, refused(error, None, nodes=[])))
    assert diag.verdict == DRIVER_BROKEN
    assert reason in diag.findings[0].title
    assert "reinstall the driver's user-mode libraries" in " ".join(diag.findings[0].remediation)


def test_a_library_on_the_loader_path_is_there_whatever_the_loader_said() -> None:
    diag = classify(cast(Facts, refused("libcuda.so.1: cannot open shared object file: Permission denied",
                                        "/usr/local/nvidia/lib64/libcuda.so.1")))
    assert diag.verdict == DRIVER_BROKEN
    assert any("/usr/local/nvidia/lib64/libcuda.so.1 is there" in e for e in diag.findings[0].evidence)


def test_an_absent_library_in_a_container_is_still_no_gpu_access() -> None:
    facts = refused("libcuda.so.1: cannot open shared object file: No such file or directory", None, nodes=[])
    diag = classify(cast(Facts, facts))
    assert diag.verdict == NOT_VISIBLE
    assert "started without GPU access" in diag.findings[0].title


def test_the_catalogue_reads_the_loaders_words_and_renders_their_fix() -> None:
    hit = catalogue.find(f"OSError: {GLIBC}", ("loader.version_not_found",))
    assert hit is not None and hit.params == {"version": "GLIBC_2.34",
                                              "library": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}
    assert hit.entry.verdict == DRIVER_BROKEN and hit.entry.remedy is not None
    absent = "libcuda.so.1: cannot open shared object file: No such file or directory"
    assert catalogue.find(absent, ("loader.version_not_found", "loader.bad_library")) is None
    lines = render(hit.entry.remedy.with_params(library="libcuda.so.1", needs="GLIBC_2.34", libc="glibc 2.31"))
    assert lines[0].startswith("libcuda.so.1 needs GLIBC_2.34, newer than this system's C library (glibc 2.31)")


def test_a_pasted_loader_error_is_read_as_the_same_finding() -> None:
    from harness.intake import parse_text

    report = parse_text(f"Traceback (most recent call last):\nOSError: {GLIBC}\nPyTorch version: 2.1.0+cu121\n")
    libcuda = report.facts["driver"]["libcuda"]
    assert libcuda.get("loaded") is False and libcuda.get("file") == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    diag = classify(report.facts)
    assert diag.verdict == DRIVER_BROKEN and "is there but does not load" in diag.findings[0].title


def test_the_gatherer_finds_a_library_that_did_not_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.gather import libcuda, system

    monkeypatch.setenv("LD_LIBRARY_PATH", f"/nonexistent:{tmp_path}")
    assert libcuda.on_loader_path("libcuda.so.1") is None or not str(
        libcuda.on_loader_path("libcuda.so.1")).startswith(str(tmp_path))
    (tmp_path / "libcuda.so.1").write_bytes(b"\x7fELF\x01")  # a 32-bit ELF header, cut short
    assert libcuda.on_loader_path("libcuda.so.1") == str(tmp_path / "libcuda.so.1")
    fact, _ = libcuda.probe()
    assert fact["loaded"] is False and fact["file"] == str(tmp_path / "libcuda.so.1"), fact
    assert (system.libc() or "").startswith("glibc ")
