"""Every collect_env fixture of the project gets its verdict, and a dump's lines about the build are no clue.

`Is XPU available`, `ROCM used to build PyTorch`, `HIP runtime version` and `MIOpen runtime version` are
printed by every recent collect_env whatever the machine: they say what the torch build supports, not
which GPU the machine has (torch/utils/collect_env.py). Read as a clue, `Is XPU available: False` made a
CUDA wheel with no visible device answer OTHER ("AMD's need a ROCm build ...").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.diagnosis.report import diagnose_report
from harness.intake import load_report
from harness.intake.normal import normalise
from harness.intake.sections import BUILD_FIELDS, match_key, read_dump

DATA = Path(__file__).resolve().parents[1] / "data" / "collect_env"
FIXTURES = sorted(p.name for p in DATA.glob("*.txt"))

# fixture -> (verdict, confidence). A low confidence is a lead the answer does not state as a verdict
# (the format-* dumps of a machine without a driver print 'No CUDA' or 'Could not collect' and no torch error).
VERDICTS: dict[str, tuple[str, str]] = {
    "cpu-wheel_torch2.13.0.txt": ("CPU_WHEEL", "high"),
    "cvd-empty_torch2.14.1-cu130.txt": ("NOT_VISIBLE", "high"),
    "docker-without-gpus.txt": ("NOT_VISIBLE", "high"),
    "driver-library-mismatch.txt": ("DRIVER_BROKEN", "high"),
    "format-1.13.1_torch2.14.1-cu130.txt": ("NO_DRIVER", "low"),
    "format-1.5_windows-two-titan.txt": ("OK", "high"),
    "format-1.8.1_torch2.10.0-cu128.txt": ("DRIVER_BROKEN", "low"),
    "format-2.0.1_torch2.13.0-cpu.txt": ("CPU_WHEEL", "high"),
    "format-2.1.2_torch2.10.0-cu128.txt": ("DRIVER_BROKEN", "low"),
    "format-2.4.1_torch2.14.1-cu130.txt": ("NO_DRIVER", "low"),
    "format-2.7.1_torch2.10.0-cu128.txt": ("DRIVER_BROKEN", "low"),
    "forward-compat-804.txt": ("DRIVER_BROKEN", "high"),
    "no-driver_torch2.10.0-cu128.txt": ("NO_DRIVER", "high"),
    "no-driver_torch2.14.1-cu130.txt": ("NO_DRIVER", "high"),
    "pascal-on-cu130.txt": ("ARCH_UNSUPPORTED", "high"),
    "rocm_mi210.txt": ("OK", "high"),
    "sm120-on-cu118.txt": ("ARCH_UNSUPPORTED", "high"),
    "too-old-driver_cu121-on-r470.txt": ("DRIVER_TOO_OLD", "high"),
    "too-old-driver_cu121-py38-r460.txt": ("DRIVER_TOO_OLD", "high"),
    "truncated_torch2.14.1-cu130.txt": ("NO_DRIVER", "high"),
    "windows_cu121-driver-551.61.txt": ("OK", "high"),
}


def test_every_fixture_has_a_verdict() -> None:
    assert sorted(VERDICTS) == FIXTURES


@pytest.mark.parametrize("name", FIXTURES)
def test_a_fixture_gets_its_verdict(name: str) -> None:
    doc = diagnose_report(str(DATA / name))
    assert doc.diagnosis is not None
    confidence = doc.diagnosis.assessment.confidence if doc.diagnosis.assessment else None
    assert (doc.diagnosis.verdict, confidence) == VERDICTS[name]


@pytest.mark.parametrize("name", FIXTURES)
def test_no_clue_is_read_from_a_line_about_the_build(name: str) -> None:
    text = (DATA / name).read_text(encoding="utf-8")
    build = read_dump(normalise(text)).build_lines
    clues = {clue: number for clue, (number, _) in load_report(DATA / name).clues.items()}
    assert not {c: n for c, n in clues.items() if n in build}


@pytest.mark.parametrize("line", ["Is XPU available: False", "ROCM used to build PyTorch: N/A",
                                  "HIP runtime version: N/A", "MIOpen runtime version: N/A",
                                  "Is XNNPACK available: True", "CUDA used to build PyTorch: 13.0"])
def test_each_build_line_of_a_cuda_dump_leaves_the_verdict_alone(line: str) -> None:
    """The family rule: any build field, added to or removed from a dump, changes nothing the machine is judged by."""
    base = (DATA / "cvd-empty_torch2.14.1-cu130.txt").read_text(encoding="utf-8")
    kept = [x for x in base.splitlines() if match_key(x.strip()) is None or
            match_key(x.strip())[0] not in (*BUILD_FIELDS, "xpu_available")]  # type: ignore[index]
    where = next(i for i, x in enumerate(kept) if x.startswith("Is CUDA available"))
    for text in ("\n".join(kept), "\n".join([*kept[:where], line, *kept[where:]])):
        report = load_report(text.encode("utf-8"))
        assert "other_gpu" not in report.clues and "rocm" not in report.clues


def test_an_xpu_that_answers_is_a_clue_to_the_machine() -> None:
    text = (DATA / "cpu-wheel_torch2.13.0.txt").read_text(encoding="utf-8").replace(
        "Is XPU available: False", "Is XPU available: True")
    assert "other_gpu" in load_report(text.encode("utf-8")).clues
