"""From an inferred stack to a cell, and from its verdict to the fix that the rules predict OK (no Docker)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness import compat
from harness.classify import classify
from harness.intake import load_report
from harness.schema import ARCH_UNSUPPORTED, CPU_WHEEL, DRIVER_BROKEN, DRIVER_TOO_OLD, NOT_VISIBLE, OK, Finding, Remedy
from refenv.model import matrix_yaml
from refenv.model.matrix import Base, Bootstrap
from refenv.model.profiles import Faults
from refenv.reproduce import Inferred, ReproduceError, Reproduction, from_flags, infer
from refenv.reproduce.builds import Offer
from refenv.reproduce.choose import assumed_gpus, plan
from refenv.reproduce.fix import chosen_remedy, plan_fix, predicted
from refenv.reproduce.gpus import GpuGuess, simulated_gpu

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
MATRIX = matrix_yaml.load(ROOT / "matrix.yaml")
KNOWN, BASE = MATRIX.environments, MATRIX.environments[0].base
OFFLINE = Offer(False, frozenset({("2.13.0", "cpu", "3.11")}), ("3.9", "3.11", "3.13"),
                frozenset({("2.14.1", "cu130", "3.11"), ("2.10.0", "cu128", "3.11")}))


def planned(inferred: Inferred) -> Reproduction:
    return plan(inferred, OFFLINE, KNOWN, BASE)


def from_dump(name: str, folder: str = "reproduce") -> Reproduction:
    return planned(infer(load_report(DATA / folder / name)))


def test_a_known_environment_is_reused_with_its_name_lock_and_image() -> None:
    r = from_dump("cu130-on-r570.txt")
    assert r.environment == MATRIX.environment("torch-2.14.1-cu130")
    assert r.substitutions == () and r.notes == ()
    assert r.host.kind == "simulated" and r.host.inline is r.profile and r.profile is not None
    assert (r.profile.driver_version, r.profile.cuda_version, r.profile.faults) == ("570.172.08", "12.8", Faults())
    assert [g.name for g in r.profile.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert r.scenario.gpus == "all" and r.scenario.env == ()
    assert predicted(r) == DRIVER_TOO_OLD


def test_a_new_environment_is_named_after_its_build_and_gets_a_base_with_its_python() -> None:
    r = planned(from_flags("2.5.1", driver="550.144.03", python="3.9"))
    assert (r.environment.name, r.environment.python, r.environment.packages) == (
        "torch-2.5.1-cu124-py3.9", "3.9", ("numpy",))
    assert r.environment.base == Base(None, Bootstrap(suite="bullseye"))
    assert plan(from_flags("2.5.1", python="3.9"), OFFLINE, KNOWN, Base("python:3.9-slim")).environment.base == \
        Base("python:3.9-slim")  # a named base image is kept as it is


def test_no_driver_and_no_gpu_access() -> None:
    bare = planned(from_flags("2.10.0"))
    assert bare.host.kind == "none" and bare.profile is None and predicted(bare) == NOT_VISIBLE
    r = from_dump("no-gpu-access-r580.txt")
    assert r.host.kind == "simulated" and r.scenario.gpus == "none" and predicted(r) == NOT_VISIBLE
    assert any("names no driver" in n for n in r.notes) and any("lists no GPUs" in n for n in r.notes)


def test_faults_and_visibility_reach_the_cell() -> None:
    mismatch = from_dump("mismatch-r580.txt")
    assert mismatch.profile is not None and mismatch.profile.faults == Faults(18, 803)
    assert predicted(mismatch) == DRIVER_BROKEN
    cvd = from_dump("cvd-empty-r580.txt")
    assert cvd.scenario.env == (("CUDA_VISIBLE_DEVICES", ""),) and predicted(cvd) == NOT_VISIBLE


def test_gpus() -> None:
    h100, note = simulated_gpu(GpuGuess("NVIDIA H100 80GB HBM3"), 0)
    assert (h100.compute_capability, h100.sm_count, h100.memory_bytes >> 20, note) == ("9.0", 132, 81559, None)
    exact, note = simulated_gpu(GpuGuess("NVIDIA GeForce RTX 3090"), 1)   # the name NVML reports: no guess
    assert (exact.compute_capability, exact.memory_bytes >> 20, note) == ("8.6", 24576, None)
    rtx, note = simulated_gpu(GpuGuess("GeForce RTX 3090"), 1)   # older drivers' spelling: the spec row it fits
    assert (rtx.compute_capability, rtx.memory_bytes >> 30, rtx.minor) == ("8.6", 24, 1)
    assert note is not None and "spec sheets" in note
    a100, _ = simulated_gpu(GpuGuess("NVIDIA A100-SXM4-40GB"), 0)  # two spec rows, one capability
    assert (a100.compute_capability, a100.memory_bytes >> 30) == ("8.0", 40)
    hinted, _ = simulated_gpu(GpuGuess("NVIDIA GeForce GTX 1080", "6.1"), 0)
    assert hinted.compute_capability == "6.1"
    unknown, note = simulated_gpu(GpuGuess("Mystery Accelerator 9000"), 0)
    assert unknown.compute_capability == "8.0" and note is not None and "assumed" in note
    given = "GPU-12345678-1234-1234-1234-123456789abc"
    assert simulated_gpu(GpuGuess("Tesla T4", uuid=given), 0)[0].uuid == given
    assert simulated_gpu(GpuGuess("Tesla T4"), 0)[0].uuid == simulated_gpu(GpuGuess("Tesla T4"), 0)[0].uuid


def test_fix_for_a_too_old_driver_is_a_shipped_driver_of_the_recommended_branch() -> None:
    r = from_dump("cu130-on-r570.txt")
    fix = plan_fix(r, DRIVER_TOO_OLD, OFFLINE, KNOWN, BASE)
    assert fix is not None and fix.kind == "driver" and fix.predicted == OK
    assert fix.reproduction.profile is not None and r.profile is not None
    assert fix.reproduction.profile.driver_version == "580.95.05"
    assert fix.reproduction.profile.gpus == r.profile.gpus and fix.reproduction.environment == r.environment


def test_fix_by_wheel_takes_the_nearest_build_that_runs_here() -> None:
    r = from_dump("cu130-on-r570.txt")
    fix = plan_fix(r, DRIVER_TOO_OLD, OFFLINE, KNOWN, BASE, prefer="wheel")
    assert fix is not None and fix.kind == "wheel" and fix.predicted == OK
    assert fix.reproduction.environment.name == "torch-2.10.0-cu128"
    assert fix.summary.startswith("install torch 2.14.1+cu126; here: torch 2.10.0+cu128")
    online = plan_fix(r, DRIVER_TOO_OLD, Offer(True, frozenset(), ("3.11",)), KNOWN, BASE, prefer="wheel")
    assert online is not None and online.reproduction.environment.variant == "cu126"


def test_fix_for_a_cpu_wheel_is_the_cuda_build_the_driver_runs() -> None:
    r = from_dump("cpu-wheel-on-r580.txt")
    fix = plan_fix(r, CPU_WHEEL, OFFLINE, KNOWN, BASE)
    assert fix is not None and fix.kind == "wheel"
    assert (fix.reproduction.environment.torch, fix.reproduction.environment.variant) == ("2.13.0", "cu130")


@pytest.mark.parametrize(("name", "verdict", "kind"), [
    ("mismatch-r580.txt", DRIVER_BROKEN, "driver"),
    ("cuinit-999-r580.txt", DRIVER_BROKEN, "driver"),
    ("cvd-empty-r580.txt", NOT_VISIBLE, "scenario"),
    ("no-gpu-access-r580.txt", NOT_VISIBLE, "scenario"),
])
def test_fixes_that_keep_the_wheel(name: str, verdict: str, kind: str) -> None:
    r = from_dump(name)
    fix = plan_fix(r, verdict, OFFLINE, KNOWN, BASE)
    assert fix is not None and (fix.kind, fix.predicted) == (kind, OK)
    assert fix.reproduction.environment == r.environment
    if kind == "driver":
        assert fix.reproduction.profile is not None and fix.reproduction.profile.faults == Faults()
        assert r.profile is not None and fix.reproduction.profile.driver_version == r.profile.driver_version
    else:
        assert fix.reproduction.scenario.gpus == "all" and fix.reproduction.scenario.env == ()


def test_fix_for_a_missing_architecture_covers_the_gpu() -> None:
    r = from_dump("pascal-on-cu130.txt", "collect_env")
    assert predicted(r) == ARCH_UNSUPPORTED
    fix = plan_fix(r, ARCH_UNSUPPORTED, OFFLINE, KNOWN, BASE)
    assert fix is not None and fix.predicted == OK
    assert (fix.reproduction.environment.torch, fix.reproduction.environment.variant) == ("2.7.0", "cu126")


def test_installing_a_driver_on_a_bare_machine() -> None:
    r = planned(from_flags("2.10.0"))
    fix = plan_fix(r, NOT_VISIBLE, OFFLINE, KNOWN, BASE)
    assert fix is not None and fix.kind == "driver" and fix.summary.startswith("install the driver")
    assert fix.reproduction.profile is not None and fix.reproduction.profile.driver_version.startswith("570.")


def test_nothing_to_fix() -> None:
    r = from_dump("cu130-on-r570.txt")
    assert plan_fix(r, OK, OFFLINE, KNOWN, BASE) is None
    # A CPU wheel on a machine without a driver needs two fixes; no single one is predicted OK.
    bare = replace(r, host=replace(r.host, inline=None, kind="none"), profile=None,
                   environment=MATRIX.environment("torch-2.13.0-cpu"))
    assert predicted(bare) == CPU_WHEEL
    assert plan_fix(bare, CPU_WHEEL, OFFLINE, KNOWN, BASE) is None


def _remedy_of(name: str) -> tuple[str, Remedy | None]:
    """The classifier's verdict and primary remedy over a report, as the cell's diagnosis carries it."""
    diagnosis = classify(load_report(DATA / "reproduce" / name).facts)
    return diagnosis.verdict, chosen_remedy(diagnosis.verdict, diagnosis.findings)


@pytest.mark.parametrize(("name", "kind", "fix_kind"), [
    ("mismatch-r580.txt", "reboot", "driver"),
    ("cu130-on-r570.txt", "install_driver", "driver"),
    ("cpu-wheel-on-r580.txt", "install_wheel", "wheel"),
    ("cvd-empty-r580.txt", "unset_variable", "scenario"),
])
def test_the_fix_applied_is_the_remedy_the_classifier_chose(name: str, kind: str, fix_kind: str) -> None:
    verdict, remedy = _remedy_of(name)
    assert remedy is not None and remedy.kind == kind
    fix = plan_fix(from_dump(name), verdict, OFFLINE, KNOWN, BASE, remedy=remedy)
    assert fix is not None and (fix.kind, fix.predicted) == (fix_kind, OK)


def test_a_remedy_overrides_the_verdicts_default_fix() -> None:
    r = from_dump("cu130-on-r570.txt")
    by_wheel = plan_fix(r, DRIVER_TOO_OLD, OFFLINE, KNOWN, BASE, remedy=Remedy("install_wheel"))
    assert by_wheel is not None and by_wheel.kind == "wheel"
    assert chosen_remedy(DRIVER_TOO_OLD, [Finding(DRIVER_TOO_OLD, "error", "too old")]) is None


def test_gpus_and_a_fault_named_without_a_driver_are_said_to_be_unused() -> None:
    # A host without a driver shows no GPU and has no driver to break: the flags must not vanish unsaid.
    r = planned(from_flags("2.14.1+cu130", gpus=["Tesla T4"], fault="stub"))
    assert r.host.kind == "none"
    assert any("Tesla T4" in n and "--driver" in n for n in r.notes)
    assert any("stub" in n for n in r.notes)
    assert not any("Tesla T4" in n for n in planned(from_flags("2.14.1+cu130", driver="580.95.05",
                                                                gpus=["Tesla T4"])).notes)


def test_a_report_quoting_only_the_found_version_chooses_a_torch_that_reproduces_it() -> None:
    # torch's too-old message alone ('found version 11040'): the driver branch it names (R470, CUDA 11.4) and
    # the newest release's default build, whose CUDA 13 runtime that driver cannot start; its patch that lies
    # here (2.14.1) stands for it, and the wheel fix is a build the driver runs.
    inferred = infer(load_report(DATA / "reports" / "found-version-only.txt"))
    assert inferred.torch_assumed and inferred.variant == "cu130" and inferred.driver_cuda == 11040
    assert inferred.driver is not None and inferred.driver.startswith("470.")
    assert any("the report names no torch" in e for e in inferred.evidence)
    r = planned(inferred)
    assert r.environment == MATRIX.environment("torch-2.14.1-cu130") and r.substitutions == ()
    assert predicted(r) == DRIVER_TOO_OLD
    assert r.profile is not None and r.profile.cuda_version == "11.4"


def test_a_report_quoting_only_the_found_version_verifies_either_fix_as_preferred() -> None:
    # The report lists no GPUs: the R470 profile's V100s (sm_70) have no kernel in the CUDA 13 build chosen for
    # it, so the nearest shipped profile's GPUs that build runs on stand for them (R525's A10), and the driver
    # update is a fix that turns the cell OK, as the keep-the-driver wheel is.
    inferred = infer(load_report(DATA / "reports" / "found-version-only.txt"))
    r = planned(inferred)
    assert r.profile is not None and [g.name for g in r.profile.gpus] == ["NVIDIA A10"]
    assert any("lists no GPUs" in n and "A10" in n and "V100" in n and "no kernel" in n for n in r.notes), r.notes
    remedy = chosen_remedy(DRIVER_TOO_OLD, classify(load_report(DATA / "reports" / "found-version-only.txt")
                                                    .facts).findings)
    for prefer in ("auto", "driver"):
        fix = plan_fix(r, DRIVER_TOO_OLD, OFFLINE, KNOWN, BASE, prefer, remedy)
        assert fix is not None and (fix.kind, fix.predicted) == ("driver", OK), (prefer, fix)
        assert fix.reproduction.environment == r.environment  # the same torch, on the branch its CUDA needs
        assert fix.reproduction.profile is not None and fix.reproduction.profile.branch == 580
        assert fix.reproduction.profile.gpus == r.profile.gpus
    wheel = plan_fix(r, DRIVER_TOO_OLD, OFFLINE, KNOWN, BASE, "wheel", remedy)
    assert wheel is not None and (wheel.kind, wheel.predicted) == ("wheel", OK) and "cu11" in wheel.summary
    assert wheel.reproduction.profile == r.profile  # the driver kept


def test_gpus_that_a_build_runs_stand_for_unreported_ones_unless_the_architecture_is_the_question() -> None:
    cu130 = compat.arch_list("2.14.1", "13.0")
    shipped, own = assumed_gpus(470, cu130, keep_any=False)
    assert own.name == "r470" and shipped.name == "r525"
    assert assumed_gpus(470, cu130, keep_any=True) == (own, own)
    assert assumed_gpus(470, compat.arch_list("2.7.0", "11.8"), keep_any=False) == (own, own)  # sm_70 is in it
    shipped, own = assumed_gpus(580, cu130, keep_any=False)
    assert shipped is own and own.name == "r580"


def test_a_report_without_torch_or_its_message_still_asks_for_it() -> None:
    with pytest.raises(ReproduceError, match="pass --torch"):
        infer(load_report(DATA / "reports" / "os-only.txt"))
