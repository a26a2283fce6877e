"""Podman's command lines for a cell (pure) and its refusals in refenv's words."""

from __future__ import annotations

from refenv.engines.podman import cli
from refenv.errors import NotStarted, RefenvError
from refenv.model.matrix import RunSettings, Scenario
from refenv.run.containers import cell_spec

SETTINGS = RunSettings()


def args_of(scenario: Scenario, **kw: object) -> list[str]:
    spec = cell_spec("img:1", "e/h/s", "run1", "/out", scenario, SETTINGS, **kw)  # type: ignore[arg-type]
    return cli.create_args(spec, "refenv-1-1")


def pairs(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_a_cell_keeps_its_confinement_on_podman() -> None:
    args = args_of(Scenario("no-gpu", "none"))
    assert args[:2] == ["--name", "refenv-1-1"] and "--read-only" in args
    assert pairs(args, "--network") == ["none"] and pairs(args, "--cap-drop") == ["ALL"]
    assert pairs(args, "--security-opt") == ["no-new-privileges"]
    assert pairs(args, "--ulimit") == list(cli.ULIMITS)  # podman's defaults do not start here
    assert "refenv.run=run1" in pairs(args, "--label")
    assert pairs(args, "--mount") == ["type=bind,source=/out,destination=/out"]
    assert args[args.index("img:1") + 1] == "cell"


def test_cdi_devices_and_gpu_requests_are_cdi_names() -> None:
    cdi = Scenario("cdi", "none", (), "", ("nvidia.com/gpu=all",))
    args = args_of(cdi, cdi_specs=("/run/cdi/r580.json",), ldcache="/cache/ld.so.cache")
    assert pairs(args, "--device") == ["nvidia.com/gpu=all"]
    assert "type=bind,source=/cache/ld.so.cache,destination=/etc/ld.so.cache,ro=true" in pairs(args, "--mount")
    real = args_of(Scenario("gpu", "device=0,1"), real_host=True)
    assert pairs(real, "--device") == ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]


def test_podmans_cdi_refusal_is_not_run_with_its_words() -> None:
    spec = cell_spec("img:1", "e/h/s", "r", "/out", Scenario("cdi", "none", (), "", ("nvidia.com/gpu=all",)),
                     SETTINGS)
    err = cli.translate("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n", spec)
    assert isinstance(err, NotStarted)
    assert "unresolvable CDI devices nvidia.com/gpu=all" in err.message and "nvidia-ctk cdi generate" in str(err.hint)
    other = cli.translate("Error: no such image", spec)
    assert type(other) is RefenvError and other.message == "podman: Error: no such image"
