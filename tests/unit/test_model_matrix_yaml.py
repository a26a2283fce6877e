"""matrix.yaml: the default one loads, and every mistake names the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.errors import MatrixError, RefenvError
from refenv.model.matrix import cells, select
from refenv.model.matrix_yaml import load, parse
from tests.unit.matrix_samples import GOOD

ROOT = Path(__file__).resolve().parents[2]

def error_of(text: str) -> MatrixError:
    with pytest.raises(MatrixError) as info:
        parse(text, "m.yaml")
    return info.value


def test_default_matrix_has_what_the_default_run_needs() -> None:
    m = load(ROOT / "matrix.yaml")
    envs = {e.name: e for e in m.environments}
    assert {(e.torch, e.variant) for e in envs.values()} >= {("2.14.1", "cu130"), ("2.10.0", "cu128"), ("2.13.0", "cpu")}
    assert {h.name for h in m.hosts} >= {"none", "r470", "r535", "r570", "r580", "r580-mismatch", "real"}
    scen = {s.name: s for s in m.scenarios}
    assert scen["no-gpu"].gpu_access is False
    assert scen["cvd-empty"].env_dict == {"CUDA_VISIBLE_DEVICES": ""}
    assert scen["nvd-void"].env_dict == {"NVIDIA_VISIBLE_DEVICES": "void"}
    assert scen["caps-utility"].env_dict == {"NVIDIA_DRIVER_CAPABILITIES": "utility"}
    assert scen["cvd-unknown-uuid"].env_dict["CUDA_VISIBLE_DEVICES"].startswith("GPU-")
    assert len(cells(m)) == len(m.environments) * len(m.hosts) * len(m.scenarios)


def test_a_good_matrix_parses() -> None:
    m = parse(GOOD)
    assert [e.cuda for e in m.environments] == ["13.0"]
    assert [h.kind for h in m.hosts] == ["simulated", "none"]


@pytest.mark.parametrize(("text", "line", "field", "phrase"), [
    (GOOD.replace("    variant: cu130\n", "    variant: cu130\n    colour: red\n"), 6, "environments.cu130.colour",
     "unknown key"),
    (GOOD.replace('torch: "2.14.1"', "torch: 2.10"), 4, "environments.cu130.torch",
     'a string: a torch release such as "2.14.1" (quote it'),
    (GOOD.replace("variant: cu130", "variant: cu999"), 5, "environments.cu130.variant", "has no cu999 build"),
    (GOOD.replace("profile: r580}", "profile: r999}"), 7, "hosts.r580.profile", "unknown profile 'r999'"),
    (GOOD.replace("{kind: none}", "{kind: nonee}"), 8, "hosts.none.kind", "none | simulated | real"),
    (GOOD.replace("{gpus: all}", "{gpus: some}"), 10, "scenarios.gpu.gpus", "'all', 'none' or 'device=0,1'"),
    (GOOD.replace("CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICE"), 13, "scenarios.hidden.env.CUDA_VISIBLE_DEVICE",
     "not a variable scenarios set"),
    (GOOD.replace("  none: {kind: none}\n", "  r580: {kind: none}\n"), 8, "hosts.r580", "appears twice"),
    (GOOD.replace("version: 1", "version: 2"), 1, "version", "expected 1"),
    (GOOD.replace("  gpu: {gpus: all}", "  gpu: {gpus: all"), None, "syntax", "not valid YAML"),
])
def test_errors_name_line_and_field(text: str, line: int | None, field: str, phrase: str) -> None:
    err = error_of(text)
    assert err.field == field
    assert phrase in err.expected
    if line is not None:
        assert err.line == line
        assert str(err).startswith(f"m.yaml:{line}: {field}: ")


def test_missing_sections_and_empty_files() -> None:
    assert error_of("").field == "file"
    assert error_of("version: 1\nenvironments: {}\nhosts: {}\nscenarios: {}\n").field == "environments"
    assert error_of("version: 1\n").field == "environments"


def test_missing_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match="not found; pass --matrix PATH"):
        load(tmp_path / "nope.yaml")


def test_select_takes_globs_and_rejects_unknown_names() -> None:
    m = load(ROOT / "matrix.yaml")
    part = select(m, env=["torch-2.14*"], host=["r5*,none"], scenario=["gpu"])
    assert [e.name for e in part.environments] == ["torch-2.14.1-cu130"]
    assert [h.name for h in part.hosts] == ["none", "r535", "r570", "r580", "r580-mismatch"]
    with pytest.raises(RefenvError, match="no host matches r999"):
        select(m, host=["r999"])


def test_cdi_devices_and_the_engine_are_read_and_checked() -> None:
    import pytest

    from refenv.errors import MatrixError
    from refenv.model.matrix_yaml import parse
    from tests.unit.matrix_samples import GOOD

    text = GOOD.replace("scenarios:\n", "scenarios:\n  cdi: {devices: [nvidia.com/gpu=all, nvidia.com/gpu=0]}\n", 1)
    m = parse(text + "run: {engine: podman}\n")
    cdi = m.scenario("cdi")
    assert cdi.devices == ("nvidia.com/gpu=all", "nvidia.com/gpu=0") and cdi.gpus == "none" and m.run.engine == "podman"
    with pytest.raises(MatrixError, match="devices\\[0\\]: expected a CDI device name"):
        parse(GOOD.replace("scenarios:\n", "scenarios:\n  cdi: {devices: [nvidia.com/gpu]}\n", 1))
    with pytest.raises(MatrixError, match="by --gpus or by CDI devices, not both"):
        parse(GOOD.replace("scenarios:\n", "scenarios:\n  cdi: {gpus: all, devices: [nvidia.com/gpu=0]}\n", 1))
    with pytest.raises(MatrixError, match=r"run\.engine: expected docker \| podman"):
        parse(text + "run: {engine: lxc}\n")
