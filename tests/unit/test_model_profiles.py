"""Host profiles: the shipped data validates, versions come from the compatibility tables, errors name the field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness import compat
from refenv.model import profiles

REQUIRED = ("r470", "r525", "r535", "r550", "r560", "r570", "r575", "r580", "r590", "r580-mismatch",
            "r580-cuinit-999", "r580-cuinit-3", "r580-stub", "r580-forward-compat", "r580-cuinit-803", "r580-pascal")


def raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(profiles.DATA_FILE.read_text(encoding="utf-8"))
    return copy.deepcopy(data)


def test_required_profiles_ship() -> None:
    assert set(REQUIRED) <= set(profiles.names())
    assert [p.name for p in profiles.all()] == list(profiles.names())


def test_cuda_version_comes_from_the_branch() -> None:
    for p in profiles.all():
        assert p.cuda_version == compat.cuda_for_driver(p.driver_version)
    r535 = profiles.get("r535")
    assert (r535.driver_version, r535.cuda_version, r535.cuda_driver_version, r535.branch) == (
        "535.247.01", "12.2", 12020, 535)
    assert profiles.get("r570").cuda_driver_version == 12080


def test_fault_profiles() -> None:
    assert profiles.get("r580-mismatch").faults == profiles.Faults(nvml_init_error=18, cuinit_error=803)
    assert profiles.get("r580-stub").faults.stub is True
    assert profiles.get("r580-forward-compat").faults.cuinit_error == 804
    for name, code in (("r580-cuinit-999", 999), ("r580-cuinit-3", 3), ("r580-cuinit-803", 803)):
        assert profiles.get(name).faults == profiles.Faults(cuinit_error=code)
    assert profiles.get("r580-cuinit-hang").faults == profiles.Faults(cuinit_hang=True)
    assert all(not p.faults.stub and p.faults.cuinit_error == 0 and not p.faults.cuinit_hang
               for p in profiles.all() if "-" not in p.name)


def test_pascal_profile_is_below_what_cu130_runs() -> None:
    (gpu,) = profiles.get("r580-pascal").gpus
    assert gpu.compute_capability.startswith("6.")
    arches = compat.arch_list("2.14.1", "13.0")
    assert arches is not None and not compat.arch_supports(gpu.compute_capability, arches)


def test_derived_profiles_inherit_their_base() -> None:
    base, derived = profiles.get("r580"), profiles.get("r580-cuinit-999")
    assert (derived.driver_version, derived.gpus) == (base.driver_version, base.gpus)
    assert profiles.get("r580-pascal").gpus != base.gpus


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(profiles.ProfileError, match=r"unknown host profile 'r999'.*r535"):
        profiles.get("r999")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["profiles"]["r535"]["gpus"][0].update(model="gpu-9000"), r"profiles\.r535\.gpus\[0\]\.model"),
    (lambda d: d["profiles"]["r535"]["gpus"][0].update(uuid="GPU-XYZ"), r"profiles\.r535\.gpus\[0\]\.uuid"),
    (lambda d: d["profiles"]["r535"]["gpus"][1].update(uuid=d["profiles"]["r535"]["gpus"][0]["uuid"]),
     r"profiles\.r535\.gpus: UUIDs must be unique"),
    (lambda d: d["profiles"]["r535"].update(driver_version="535"), r"profiles\.r535\.driver_version"),
    (lambda d: d["profiles"]["r535"].update(driver_version="300.10.01"), r"profiles\.r535\.driver_version.*branch"),
    (lambda d: d["profiles"]["r580-stub"]["faults"].update(stub="yes"), r"profiles\.r580-stub\.faults\.stub"),
    (lambda d: d["profiles"]["r580-mismatch"]["faults"].update(nvml_init_error=42),
     r"profiles\.r580-mismatch\.faults\.nvml_init_error"),
    (lambda d: d["profiles"]["r580-cuinit-3"]["faults"].update(cuinit_error=7), r"profiles\.r580-cuinit-3\.faults"),
    (lambda d: d["profiles"]["r580-cuinit-3"].update(base="r580-stub"), r"profiles\.r580-cuinit-3\.base"),
    (lambda d: d["profiles"]["r580-cuinit-hang"]["faults"].update(cuinit_hang=1),
     r"profiles\.r580-cuinit-hang\.faults\.cuinit_hang: expected true or false"),
    (lambda d: d["profiles"]["r580-cuinit-hang"]["faults"].update(cuinit_error=999),
     r"profiles\.r580-cuinit-hang\.faults\.cuinit_hang: a cuInit that never returns"),
    (lambda d: d["profiles"].update(R600=d["profiles"]["r580"]), r"profiles\.R600"),
    (lambda d: d.update(schema="other"), r"schema"),
])
def test_errors_name_the_field(edit: Any, message: str) -> None:
    data = raw()
    edit(data)
    with pytest.raises(profiles.ProfileError, match=message):
        profiles.validate(data)


def parse_config(text: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Read a rendered configuration the way refenv/images/simdriver/sim_config.c does."""
    top: dict[str, str] = {}
    gpus: list[dict[str, str]] = []
    for line in (raw_line.strip() for raw_line in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line == "[gpu]":
            gpus.append({})
            continue
        key, value = line.split("=", 1)
        (gpus[-1] if gpus else top)[key] = value
    return top, gpus


def test_render_config() -> None:
    r580 = profiles.get("r580-mismatch")
    top, gpus = parse_config(profiles.render_config(r580))
    assert top == {"format": "1", "profile": "r580-mismatch", "driver_version": "580.95.05",
                   "cuda_driver_version": "13000", "nvml_init_error": "18", "cuinit_error": "803",
                   "cuinit_hang": "0", "stub": "0", "require_device_nodes": "0"}
    assert parse_config(profiles.render_config(profiles.get("r580-cuinit-hang")))[0]["cuinit_hang"] == "1"
    assert [g["uuid"] for g in gpus] == [g.uuid for g in r580.gpus]
    assert gpus[0] == {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": str(81559 << 20), "compute_capability": "9.0",
                       "sm_count": "132", "uuid": r580.gpus[0].uuid, "pci_bus_id": "00000000:18:00.0", "minor": "0"}


def test_render_config_subset_keeps_host_minor_numbers() -> None:
    r535 = profiles.get("r535")
    top, gpus = parse_config(profiles.render_config(r535, r535.gpus[1:], require_device_nodes=True))
    assert top["require_device_nodes"] == "1"
    assert [(g["uuid"], g["minor"]) for g in gpus] == [(r535.gpus[1].uuid, "1")]
    assert parse_config(profiles.render_config(r535, []))[1] == []
