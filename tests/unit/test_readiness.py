"""Readiness over plain data: where torch gets a GPU, the refused hosts with the smallest fix."""

from __future__ import annotations

from refenv import readiness
from refenv.readiness import CellFacts, plain_gpu_access

DRIVERS = {"none": None, "r470": "470.256.02", "r535": "535.247.01", "r570": "570.172.08", "r580": "580.95.05"}
SCENARIOS = {"gpu": True, "no-gpu": False, "cvd-empty": False}


def cell(env: str, host: str, scenario: str, observed: str | None, expected: str | None = None,
         status: str = "PASS", torch: str = "2.14.1", cuda: str | None = "13.0", simulated: bool = True,
         capability: str | None = None) -> CellFacts:
    return CellFacts(env, host, scenario, status, expected or observed, observed, simulated and host != "none",
                     SCENARIOS[scenario], DRIVERS[host], torch, cuda, capability=capability)


def cu130_cells() -> list[CellFacts]:
    out = []
    for host in ("none", "r470", "r535", "r570", "r580"):
        gpu = "OK" if host == "r580" else "NO_DRIVER" if host == "none" else "DRIVER_TOO_OLD"
        out += [cell("cu130", host, "gpu", gpu), cell("cu130", host, "no-gpu", "NOT_VISIBLE"),
                cell("cu130", host, "cvd-empty", "NOT_VISIBLE")]
    return out


def test_plain_gpu_access_excludes_scenarios_that_hide_devices() -> None:
    assert plain_gpu_access("all", {})
    assert plain_gpu_access("device=0", {"OTHER": "1"})
    assert not plain_gpu_access("none", {})
    assert not plain_gpu_access("all", {"CUDA_VISIBLE_DEVICES": "-1"})
    assert not plain_gpu_access("all", {"NVIDIA_VISIBLE_DEVICES": "void"})


def test_ready_hosts_are_where_torch_got_a_gpu_and_hiding_scenarios_refuse_nothing() -> None:
    (r,) = readiness.judge(cu130_cells())
    assert [h.label for h in r.ready] == ["r580 (simulated)"]
    assert r.ready[0].scenario == "gpu"
    assert [h.host for h in r.refused] == ["none", "r470", "r535", "r570"]
    assert r.is_ready and r.agreed and r.cells == 15


def test_driver_too_old_names_the_branch_and_minimum_version() -> None:
    (r,) = readiness.judge(cu130_cells())
    by_host = {h.host: h for h in r.refused}
    assert by_host["r470"].label == "r470: DRIVER_TOO_OLD (needs >= 580.65.06)"
    assert by_host["r470"].fix.branch == "R580"
    assert by_host["none"].verdict == "NO_DRIVER"
    assert by_host["none"].fix.min_driver == "580.65.06"


def test_a_12x_driver_is_offered_another_build_of_the_same_release() -> None:
    (r,) = readiness.judge(cu130_cells())
    by_host = {h.host: h for h in r.refused}
    # torch 2.14's cu129 build runs on any 12.x driver through minor-version compatibility
    assert by_host["r535"].fix.text == "install R580 (>= 580.65.06) or use the cu129 build (torch 2.14.1+cu129)"
    assert by_host["r470"].fix.build is None  # no 2.14 build runs on an 11.4 driver


def test_grouped_lines_share_a_verdict_and_a_fix() -> None:
    (r,) = readiness.judge(cu130_cells())
    assert readiness.grouped(r) == (
        "none: no driver; install R580 (>= 580.65.06)",
        "r470: driver too old for CUDA 13.0; install R580 (>= 580.65.06)",
        "r535: driver too old for CUDA 13.0; install R580 (>= 580.65.06) or use the cu129 build "
        "(torch 2.14.1+cu129)",
        # a 12.8 driver fully supports the cu126 build, which compat prefers over minor-version compatibility
        "r570: driver too old for CUDA 13.0; install R580 (>= 580.65.06) or use the cu126 build "
        "(torch 2.14.1+cu126)",
    )


def test_hosts_with_the_same_verdict_and_fix_share_a_line() -> None:
    cells = [cell("cu130", h, "gpu", "DRIVER_TOO_OLD") for h in ("r470", "none")] + [
        cell("cu130", "none", "gpu", "DRIVER_TOO_OLD")]
    (r,) = readiness.judge(cells)
    assert readiness.grouped(r) == ("r470, none: driver too old for CUDA 13.0; install R580 (>= 580.65.06)",)


def test_another_matrix_environment_ready_there_is_named_when_the_release_has_no_build() -> None:
    cells = [cell("cu130", "r470", "gpu", "DRIVER_TOO_OLD"),
             cell("old", "r470", "gpu", "OK", torch="1.13.1", cuda="11.7")]
    cu130, old = readiness.judge(cells)
    assert cu130.refused[0].fix.text == "install R580 (>= 580.65.06) or use old, ready there"
    assert [h.host for h in old.ready] == ["r470"]


def test_an_environment_ready_nowhere() -> None:
    cells = [cell("cpu", h, s, "CPU_WHEEL" if s == "gpu" else "NOT_VISIBLE", cuda=None, torch="2.13.0")
             for h in ("r535", "r580") for s in ("gpu", "no-gpu")]
    (r,) = readiness.judge(cells)
    assert not r.is_ready
    assert [h.label for h in r.refused] == ["r535: CPU_WHEEL (use a CUDA build)", "r580: CPU_WHEEL (use a CUDA build)"]
    assert readiness.summary(r) == "cpu: torch gets a GPU on no host; observations agreed with predictions"


def test_disagreement_is_reported_and_readiness_follows_the_observation() -> None:
    cells = [cell("cu130", "r570", "gpu", "OK", expected="DRIVER_TOO_OLD", status="FAIL"),
             cell("cu130", "r580", "gpu", None, expected="OK", status="TIMEOUT")]
    (r,) = readiness.judge(cells)
    assert [h.host for h in r.ready] == ["r570"]
    assert r.disagreed == ("cu130/r570/gpu",)
    assert r.untested == (("r580", "TIMEOUT: no answer with GPU access"),)
    assert "1 of 2 cells disagreed" in readiness.summary(r)


def test_a_host_seen_only_through_hiding_scenarios_is_untested_not_refused() -> None:
    (r,) = readiness.judge([cell("cu130", "r580", "no-gpu", "NOT_VISIBLE")])
    assert r.refused == () and r.untested == (("r580", "no scenario with plain GPU access ran"),)


def test_arch_unsupported_names_the_architecture() -> None:
    (r,) = readiness.judge([cell("cu130", "r580", "gpu", "ARCH_UNSUPPORTED", capability="6.0")])
    assert r.refused[0].label == "r580: ARCH_UNSUPPORTED (use a build compiled for sm_60)"


def test_real_gpu_is_labelled_real() -> None:
    (r,) = readiness.judge([cell("cu130", "r580", "gpu", "OK", simulated=False)])
    assert r.ready[0].label == "r580 (real GPU)"


def test_a_host_without_a_driver_that_hides_the_gpu_needs_a_driver_and_the_toolkit() -> None:
    # The matrix's `none` host: no driver injected, so `--gpus` gives the container nothing to see.
    (r,) = readiness.judge([cell("cu130", "none", "gpu", "NOT_VISIBLE")])
    assert r.refused[0].label == "none: NOT_VISIBLE (needs >= 580.65.06)"
    assert r.refused[0].fix.text == "install R580 (>= 580.65.06) and the NVIDIA container toolkit"
    real = CellFacts("cu130", "real", "gpu", "PASS", "NOT_VISIBLE", "NOT_VISIBLE", False, True, "580.95.05", "2.14.1",
                     "13.0")
    (r,) = readiness.judge([real])
    assert r.refused[0].fix.min_driver is None and "--gpus" in r.refused[0].fix.text


def test_a_broken_driver_gets_the_fix_its_diagnosis_gave() -> None:
    from dataclasses import replace

    reboot = "reboot, or reload the modules"
    (r,) = readiness.judge([replace(cell("cu130", "r580", "gpu", "DRIVER_BROKEN"), remedy=reboot)])
    assert r.refused[0].fix.text == reboot
    # A CPU build on that host needs the driver repaired and a CUDA build.
    (r,) = readiness.judge([replace(cell("cpu", "r580", "gpu", "DRIVER_BROKEN", cuda=None), remedy=reboot)])
    assert r.refused[0].fix.text == f"{reboot}; then use a CUDA build"
    # Without the diagnosis's words the fix still says where to look.
    (r,) = readiness.judge([cell("cu130", "r580", "gpu", "DRIVER_BROKEN")])
    assert "findings" in r.refused[0].fix.text
