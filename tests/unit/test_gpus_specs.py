"""The one GPU table: validated at load, matched by name confirmed by SM count and memory, and looked up by
the name NVML reports or by product line."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.gpus import names, specs

GIB = 2**30


def _raw() -> dict[str, Any]:
    return dict(json.loads(specs.DATA_FILE.read_text(encoding="utf-8")))


def test_table_loads_and_covers_the_required_parts() -> None:
    ids = {s.id for s in specs.load()}
    assert {"V100-SXM2", "T4", "A10", "A100-40GB-SXM", "A100-80GB-SXM", "A100-40GB-PCIe", "A100-80GB-PCIe",
            "L4", "L40S", "H100-SXM", "H100-PCIe", "H200-SXM", "B200", "RTX-3090", "RTX-4090", "RTX-5090"} <= ids
    for spec in specs.load():
        assert spec.source.strip()


def test_h200_row_carries_the_sheet_figures() -> None:
    h200 = specs.find_spec("h200")
    assert h200 is not None
    assert (h200.bandwidth_gbps, h200.peak_tflops("bf16"), h200.sm_count, h200.l2_mb) == (4800, 989.4, 132, 60)
    assert h200.host_link_gbps == 63.0
    assert specs.find_spec("nonesuch") is None


@pytest.mark.parametrize(("path", "value", "field"), [
    (("gpus", 0, "bandwidth_gbps"), -1, "gpus[0].bandwidth_gbps"),
    (("gpus", 1, "tflops", "bf16"), "fast", "gpus[1].tflops.bf16"),
    (("gpus", 2, "host_link"), "nvlink", "gpus[2].host_link"),
    (("gpus", 3, "family"), "(", "gpus[3].family"),
    (("gpus", 4, "memory_gb"), [], "gpus[4].memory_gb"),
    (("gpus", 5, "source"), "", "gpus[5].source"),
    (("gpus", 6, "compute_capability"), "8", "gpus[6].compute_capability"),
    (("gpus", 0, "nvml_names"), ["Tesla V100-SXM2-32GB"], "gpus[0].nvml_names"),   # one name for two sizes
    (("gpus", 7, "nvml_names"), "NVIDIA L4", "gpus[7].nvml_names"),
    (("product_lines", "lines", 0, "pattern"), "(", "product_lines.lines[0].pattern"),
    (("product_lines", "lines", 1, "compute_capability"), "eight", "product_lines.lines[1].compute_capability"),
    (("product_lines", "source"), "", "product_lines.source"),
    (("host_links", "pcie4"), None, "host_links.pcie4"),
])
def test_a_malformed_row_names_its_field(path: tuple[Any, ...], value: Any, field: str) -> None:
    raw = copy.deepcopy(_raw())
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(specs.SpecDataError, match=field.replace("[", r"\[").replace("]", r"\]")):
        specs.validate(raw)
        specs.validate_lines(raw)


def test_duplicate_ids_are_refused() -> None:
    raw = _raw()
    raw["gpus"][1]["aliases"] = ["V100"]
    with pytest.raises(specs.SpecDataError, match="unique"):
        specs.validate(raw)


@pytest.mark.parametrize(("name", "sms", "mem_gib", "want", "basis"), [
    ("NVIDIA H200", 132, 140.4, "H200-SXM", "name+hardware"),
    ("NVIDIA H100 80GB HBM3", 132, 79.6, "H100-SXM", "name+hardware"),
    ("NVIDIA H100 PCIe", 114, 79.6, "H100-PCIe", "name+hardware"),
    # The SXM-looking name on a part with the PCIe card's SM count: the hardware decides.
    ("NVIDIA H100 80GB HBM3", 114, 79.6, "H100-PCIe", "hardware"),
    ("NVIDIA A100-SXM4-80GB", 108, 79.2, "A100-80GB-SXM", "name+hardware"),
    ("NVIDIA A100-SXM4-40GB", 108, 39.4, "A100-40GB-SXM", "name+hardware"),
    ("NVIDIA A100 80GB PCIe", 108, 79.2, "A100-80GB-PCIe", "name+hardware"),
    ("NVIDIA A100-PCIE-40GB", 108, 39.4, "A100-40GB-PCIe", "name+hardware"),
    ("Tesla V100-SXM2-32GB", 80, 31.7, "V100-SXM2", "name+hardware"),
    ("Tesla T4", 40, 14.6, "T4", "name+hardware"),
    ("NVIDIA L4", 58, 22.5, "L4", "name+hardware"),
    ("NVIDIA L40S", 142, 45.0, "L40S", "name+hardware"),
    ("NVIDIA A10", 72, 22.5, "A10", "name+hardware"),
    ("NVIDIA GeForce RTX 4090", 128, 23.6, "RTX-4090", "name+hardware"),
    ("NVIDIA GeForce RTX 3090", 82, 23.7, "RTX-3090", "name+hardware"),
    ("NVIDIA GeForce RTX 5090", 170, 31.4, "RTX-5090", "name+hardware"),
    ("NVIDIA B200", 148, 178.4, "B200", "name+hardware"),
])
def test_match_by_name_confirmed_by_hardware(name: str, sms: int, mem_gib: float, want: str, basis: str) -> None:
    match = specs.match_spec(name, sms, int(mem_gib * GIB))
    assert match.spec is not None, match.reason
    assert (match.spec.id, match.basis) == (want, basis)


@pytest.mark.parametrize(("name", "sms", "mem_gib"), [
    ("NVIDIA H200 NVL", 132, 140.4),            # a variant the H200 SXM row excludes
    ("NVIDIA H100 NVL", 132, 93.6),             # excluded by both H100 rows
    ("NVIDIA GeForce RTX 3090 Ti", 84, 23.6),   # a different part of the same family
    ("NVIDIA H100 80GB HBM3", 120, 79.6),       # agrees with no H100 row
    ("NVIDIA A100-SXM4-80GB", 108, 120.0),      # memory of no A100
    ("NVIDIA Quadro RTX 8000", 72, 47.5),       # not in the table
])
def test_no_match_is_not_judged(name: str, sms: int, mem_gib: float) -> None:
    match = specs.match_spec(name, sms, int(mem_gib * GIB))
    assert match.spec is None
    assert match.basis is None
    assert match.reason


def test_name_only_when_hardware_is_unknown() -> None:
    match = specs.match_spec("NVIDIA H200", None, None)
    assert match.spec is not None and match.spec.id == "H200-SXM"
    assert match.basis == "name-only"
    assert "not confirmed" in match.reason


def test_ambiguous_name_without_hardware_lists_candidates() -> None:
    match = specs.match_spec("NVIDIA A100 PCIe", None, None)
    assert match.spec is None
    assert set(match.candidates) == {"A100-40GB-PCIe", "A100-80GB-PCIe"}


def test_normalize_name() -> None:
    assert specs.normalize_name("NVIDIA GeForce RTX 4090") == "rtx 4090"
    assert specs.normalize_name("Tesla V100-SXM2-16GB") == "v100 sxm2 16gb"


def test_nvml_names_are_unique() -> None:
    raw = _raw()
    raw["gpus"][2]["nvml_names"] = ["Tesla T4"]
    with pytest.raises(specs.SpecDataError, match="NVML names must be unique"):
        specs.validate(raw)


@pytest.mark.parametrize(("name", "mib", "cc", "sms"), [
    ("NVIDIA H100 80GB HBM3", 81559, "9.0", 132),
    ("tesla v100-sxm2-32gb", 32510, "7.0", 80),      # any case
    ("NVIDIA A100-SXM4-80GB", 81920, "8.0", 108),
    ("Tesla P40", 24576, "6.1", 30),
])
def test_a_gpu_by_the_name_nvml_reports(name: str, mib: int, cc: str, sms: int) -> None:
    model = names.nvml_model(name)
    assert model is not None and (model.memory_mib, model.compute_capability, model.sm_count) == (mib, cc, sms)
    assert names.nvml_model("NVIDIA H100") is None   # a name NVML never prints is not guessed here


@pytest.mark.parametrize(("name", "cc"), [
    ("NVIDIA GeForce RTX 5090", "12.0"),   # a spec row
    ("NVIDIA GeForce RTX 2080 Ti", "7.5"), # no row: its product line
    ("Quadro P4000", "6.1"),
    ("Tesla K80", "3.7"),
    ("Some Other Accelerator", None),
])
def test_capability_by_row_then_product_line(name: str, cc: str | None) -> None:
    assert names.capability_of(name) == cc
