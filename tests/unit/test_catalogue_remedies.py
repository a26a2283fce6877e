"""Structured remedies: one renderer writes every fix's words from its kind and parameters."""

from __future__ import annotations

import re

import pytest

from harness import catalogue
from harness.catalogue.entries import REMEDY_KINDS
from harness.catalogue.remedies import render
from harness.schema import SEVERITY_ERROR, Finding, Remedy


@pytest.mark.parametrize("kind", REMEDY_KINDS)
def test_every_kind_renders_words(kind: str) -> None:
    lines = render(Remedy(kind))
    assert lines and all(isinstance(line, str) and len(line) > 20 for line in lines)


def test_every_row_of_the_catalogue_renders_its_remedy() -> None:
    for e in catalogue.entries():
        if e.remedy is not None:
            assert render(e.remedy), e.id


def test_parameters_reach_the_words() -> None:
    # facts/cuda-compat.md: CUDA 13.0 needs 580.65.06 (R580); R570 reports 12080.
    upgrade = render(Remedy("install_driver").with_params(action="upgrade", cuda="13.0", torch="2.14.1",
                                                          driver_cuda=12080))
    assert upgrade[0].startswith("upgrade the driver: a driver >= 580.65.06 (R580)")
    assert any(line.startswith("or keep the driver and install a torch it runs: pip install") for line in upgrade)
    stubs = render(catalogue.entry("cuda.stub_library").remedy or Remedy("check_logs"))
    assert "stubs" in stubs[0] and "LD_LIBRARY_PATH" in stubs[0]
    compat = render(catalogue.entry("cuda.compat_not_supported").remedy or Remedy("check_logs"))
    assert "/usr/local/cuda/compat" in compat[0]
    hidden = render(Remedy("unset_variable").with_params(name="CUDA_VISIBLE_DEVICES", value="all"))
    assert hidden[0].startswith("'all' is a keyword of NVIDIA_VISIBLE_DEVICES")
    assert render(Remedy("check_logs").with_params(code=802, name="CUDA_ERROR_SYSTEM_NOT_READY"))[0].startswith(
        "the driver fails with error 802 (CUDA_ERROR_SYSTEM_NOT_READY)")


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown remedy kind 'pray'"):
        render(Remedy("pray"))


def test_a_finding_carries_its_remedy_through_the_document() -> None:
    remedy = Remedy("reboot", (("why", "driver_upgrade"),))
    finding = Finding("DRIVER_BROKEN", SEVERITY_ERROR, "mismatch", ("NVML: 18",), render(remedy), "driver", remedy)
    d = finding.to_dict()
    assert d["remedy"] == {"kind": "reboot", "why": "driver_upgrade"}
    assert Finding.from_dict(d) == finding
    older = {k: v for k, v in d.items() if k != "remedy"}  # a document written before remedies were structured
    assert Finding.from_dict(older).remedy is None


@pytest.mark.parametrize("remedy", [
    Remedy("install_wheel"),
    Remedy("install_wheel").with_params(torch="2.9.0"),
    Remedy("install_wheel").with_params(capability="6.1"),
    Remedy("install_wheel").with_params(torch="2.9.0", capability="8.6"),
    Remedy("install_driver"),
    Remedy("install_driver", (("detail", "short"),)),
    Remedy("install_driver").with_params(cuda="12.8"),
])
def test_where_the_driver_is_unknown_the_fix_names_the_driver_it_needs(remedy: Remedy) -> None:
    # A fix that installs a build, or a driver, without knowing the machine's driver says which driver
    # (branch and version) that build needs.
    lines = render(remedy)
    assert any(re.search(r"a driver >= \d{3}\.\d{2,3}(?:\.\d{1,3})? \(R\d{3}\)", line) for line in lines), lines


def test_a_too_old_driver_named_only_by_its_cuda_gets_the_update_first_then_a_build_it_runs() -> None:
    # torch's message 'found version 11040' names the driver's CUDA (11.4), not torch's own.
    lines = render(Remedy("install_driver").with_params(action="upgrade", driver_cuda=11040))
    assert lines[0].startswith("upgrade the driver: the newest torch (") and "(R580)" in lines[0]
    assert lines[1].startswith("or keep the driver and install a torch it runs: pip install")
    assert "whl/cu118" in lines[1]  # CUDA 11.8 starts on a CUDA 11.4 driver (minor-version compatibility)
    assert not any("CUDA None" in line or "CUDA ?" in line for line in lines)
