"""What `invoke reproduce` reads from a report: torch build, Python, driver, GPUs, faults, visibility (no Docker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.intake import load_report
from harness.schema import CPU_WHEEL, DRIVER_BROKEN, DRIVER_TOO_OLD, NO_DRIVER, NOT_VISIBLE, OK
from refenv.model.profiles import Faults
from refenv.reproduce import Inferred, ReproduceError, infer
from refenv.reproduce.infer import release_of

DATA = Path(__file__).resolve().parents[1] / "data"
OURS = DATA / "reproduce"
PASTED = DATA / "collect_env"
H100 = "NVIDIA H100 80GB HBM3"


def read(path: Path) -> Inferred:
    return infer(load_report(path))


@pytest.mark.parametrize(("name", "torch", "variant", "driver", "dcv", "faults", "verdict"), [
    ("cu130-on-r570", "2.14.1", "cu130", "570.172.08", 12080, Faults(), DRIVER_TOO_OLD),
    ("cu128-on-r470", "2.10.0", "cu128", "470.256.02", 11040, Faults(), DRIVER_TOO_OLD),
    ("cpu-wheel-on-r580", "2.13.0", "cpu", "580.95.05", None, Faults(), CPU_WHEEL),
    ("mismatch-r580", "2.14.1", "cu130", "580.95.05", None, Faults(18, 803), DRIVER_BROKEN),
    ("cuinit-999-r580", "2.10.0", "cu128", "580.95.05", None, Faults(cuinit_error=999), DRIVER_BROKEN),
    ("cvd-empty-r580", "2.14.1", "cu130", "580.95.05", None, Faults(), NOT_VISIBLE),
    ("no-gpu-access-r580", "2.14.1", "cu130", None, None, Faults(), NOT_VISIBLE),
])
def test_captured_dumps(name: str, torch: str, variant: str, driver: str | None, dcv: int | None, faults: Faults,
                        verdict: str) -> None:
    inf = read(OURS / f"{name}.txt")
    assert (inf.torch, inf.variant, inf.python, inf.os) == (torch, variant, "3.11", "Linux")
    assert (inf.driver, inf.driver_cuda, inf.faults) == (driver, dcv, faults)
    assert inf.reported is not None and inf.reported.verdict == verdict
    assert inf.reported.is_available is False and inf.reported.torch_message


def test_gpus_come_from_nvidia_smi_lines() -> None:
    inf = read(OURS / "cu128-on-r470.txt")
    assert [g.name for g in inf.gpus] == ["Tesla V100-SXM2-32GB"] * 2
    assert read(OURS / "mismatch-r580.txt").gpus == ()  # nvidia-smi failed: no GPU list


def test_visibility() -> None:
    cvd = read(OURS / "cvd-empty-r580.txt")
    assert cvd.env == (("CUDA_VISIBLE_DEVICES", ""),) and cvd.gpu_access
    no_gpus = read(OURS / "no-gpu-access-r580.txt")
    assert not no_gpus.gpu_access and not no_gpus.no_driver and no_gpus.env == ()
    assert any("without GPU access" in e for e in no_gpus.evidence)


def test_the_mismatch_driver_comes_from_nvmls_library_version() -> None:
    inf = read(OURS / "mismatch-r580.txt")
    assert any("NVML library version: 580.95" in e for e in inf.evidence)
    pasted = read(PASTED / "driver-library-mismatch.txt")  # '535.183', no shipped driver starts with it
    assert (pasted.driver, pasted.faults, pasted.torch, pasted.variant, pasted.python) == (
        "535.183", Faults(18, 803), "2.4.1", "cu121", "3.10")


def test_a_bare_machine_has_no_driver() -> None:
    inf = read(PASTED / "no-driver_torch2.10.0-cu128.txt")
    assert inf.no_driver and inf.driver is None and inf.gpu_access
    assert inf.reported is not None and inf.reported.verdict == NO_DRIVER


def test_too_old_without_a_driver_line_takes_a_driver_of_the_branch() -> None:
    inf = read(PASTED / "too-old-driver_cu121-on-r470.txt")
    assert (inf.torch, inf.variant, inf.driver_cuda) == ("2.1.0", "cu121", 11040)
    assert inf.driver is not None and inf.driver.startswith("470.")


def test_windows_and_forward_compat() -> None:
    win = read(PASTED / "windows_cu121-driver-551.61.txt")
    assert win.os == "Windows" and win.driver == "551.61"
    assert any("Windows driver number" in e for e in win.evidence)
    assert win.reported is not None and win.reported.verdict == OK
    fc = read(PASTED / "forward-compat-804.txt")
    assert fc.faults == Faults(cuinit_error=804)


def test_capability_from_torchs_warning() -> None:
    inf = read(PASTED / "pascal-on-cu130.txt")
    assert [(g.name, g.compute_capability) for g in inf.gpus] == [("NVIDIA GeForce GTX 1080", "6.1")]


def test_a_saved_diagnose_document(tmp_path: Path) -> None:
    doc = {"schema": "refenv.diagnosis", "version": 1, "facts": {
        "host": {"os": "Linux", "python": "3.11.9"},
        "torch": {"importable": True, "version": "2.10.0+cu128", "cuda": "12.8", "is_available": False,
                  "init_warning": "The NVIDIA driver on your system is too old (found version 11040)."},
        "driver": {"nvml": {"driver_version": "470.256.02", "devices": [{"index": 0, "name": H100}]},
                   "libcuda": {"driver_version": 11040}},
        "visibility": {"cuda_visible_devices": None}}}
    path = tmp_path / "diagnosis.json"
    path.write_text(json.dumps(doc))
    inf = read(path)
    assert (inf.torch, inf.variant, inf.driver, inf.driver_cuda, inf.python) == (
        "2.10.0", "cu128", "470.256.02", 11040, "3.11")
    assert inf.reported is not None and inf.reported.torch_message is not None
    assert inf.reported.torch_message.startswith("CUDA initialization: The NVIDIA driver")


@pytest.mark.parametrize(("name", "words"), [
    ("rocm_mi210.txt", "ROCm build"),
])
def test_stacks_it_cannot_reproduce(name: str, words: str) -> None:
    with pytest.raises(ReproduceError, match=words):
        read(PASTED / name)


def test_a_report_without_torch_says_so(tmp_path: Path) -> None:
    text = "Collecting environment information...\nPyTorch version: N/A\nIs debug build: N/A\nOS: Ubuntu 22.04\n"
    path = tmp_path / "r.txt"
    path.write_text(text)
    with pytest.raises(ReproduceError, match="does not say which torch"):
        read(path)


@pytest.mark.parametrize(("given", "release"), [
    ("2.14.1+cu130", "2.14.1"), ("2.1.0a0+git8ac9b20", "2.1.0"), ("2.1", "2.1.0"), ("1.13.1", "1.13.1")])
def test_release_of(given: str, release: str) -> None:
    assert release_of(given) == release


def test_release_of_rejects_nonsense() -> None:
    with pytest.raises(ReproduceError, match="not a release number"):
        release_of("nightly")
