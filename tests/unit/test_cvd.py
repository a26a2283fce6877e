"""harness.cvd parses CUDA_VISIBLE_DEVICES as the simulated driver (C) does: the same shared vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import cvd

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parents[1] / "data" / "cvd_cases.json").read_text())


def uuids(gpus: int | list[str]) -> list[str]:
    if isinstance(gpus, list):
        return gpus
    return [f"GPU-{i:08x}-0000-4000-8000-{i:012x}" for i in range(gpus)]


@pytest.mark.parametrize("case", CASES, ids=[c["note"] for c in CASES])
def test_python_parser_agrees_with_the_shared_vectors(case: dict[str, Any]) -> None:
    result = cvd.parse(case["value"], uuids(case["gpus"]))
    assert list(result.visible) == case["visible"], result.reason


@pytest.mark.parametrize("case", [c for c in CASES if c["visible"] == []], ids=lambda c: c["note"])
def test_what_hides_everything_without_a_device_list_is_never_contradicted(case: dict[str, Any]) -> None:
    # Without NVML the harness can still say "hides every device" for some values; it must never say so wrongly.
    for c in CASES:
        if cvd.hides_all_devices(c["value"]) is not None:
            assert c["visible"] == [], c["note"]
    assert case["visible"] == []
