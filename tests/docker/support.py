"""Helpers of the docker tier: small matrices from YAML text, runs through `run_matrix`, and reading their cells."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from refenv.engines.docker.sdk import Engine
from refenv.engines.seam import ContainerSpec
from refenv.model import codec, matrix_yaml
from refenv.model.builds import EnvBuild
from refenv.model.labels import MANAGED
from refenv.model.matrix import Matrix
from refenv.model.records import CellResult, MeasurementRecord, cell_id
from refenv.run.pipeline import Options, Outcome, run_matrix

LOG = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MATRIX = ROOT / "matrix.yaml"

# The default matrix's environments: a test matrix reuses their definitions, so their locks and image tags.
CU130 = "torch-2.14.1-cu130"
CU128 = "torch-2.10.0-cu128"
CPU = "torch-2.13.0-cpu"

# Verdict tests need the diagnosis only; the probes and the memory check have their own tiers.
DIAGNOSIS_ONLY: dict[str, Any] = {"probes": "off", "memory_check": "off"}
GPU: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}}
JSON_MARK = "REFENV-TEST-JSON "


def default_data() -> dict[str, Any]:
    """The default matrix file as YAML data."""
    data = yaml.safe_load(DEFAULT_MATRIX.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def matrix_text(envs: Iterable[str], hosts: Iterable[str], scenarios: Mapping[str, Mapping[str, Any]],
                run: Mapping[str, Any] | None = None, extra_envs: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """YAML for a small matrix: named default environments (plus `extra_envs`), hosts and scenarios.

    A host called `none` has no driver; any other host is simulated with the profile of its name.
    """
    default = default_data()
    environments = {name: default["environments"][name] for name in envs}
    environments.update({name: dict(body) for name, body in (extra_envs or {}).items()})
    data: dict[str, Any] = {
        "version": 1,
        "base": default["base"],
        "environments": environments,
        "hosts": {h: {"kind": "none"} if h == "none" else {"kind": "simulated", "profile": h} for h in hosts},
        "scenarios": {name: dict(body) for name, body in scenarios.items()},
    }
    if run:
        data["run"] = dict(run)
    return yaml.safe_dump(data, sort_keys=False)


def small_matrix(envs: Iterable[str], hosts: Iterable[str], scenarios: Mapping[str, Mapping[str, Any]],
                 run: Mapping[str, Any] | None = None, extra_envs: Mapping[str, Mapping[str, Any]] | None = None,
                 path: Path = DEFAULT_MATRIX) -> Matrix:
    """The matrix refenv's loader makes of `matrix_text`; `path` decides where its locks are read."""
    return matrix_yaml.parse(matrix_text(envs, hosts, scenarios, run, extra_envs), str(path))


class RecordingUI:
    """A UI for `run_matrix` that keeps what it is told (stages, builds, cells) instead of printing."""

    def __init__(self) -> None:
        self.stages: list[str] = []
        self.builds: list[EnvBuild] = []
        self.cells: list[CellResult] = []
        self.measurements: list[MeasurementRecord] = []

    def stage(self, message: str) -> None:
        self.stages.append(message)

    def build_line(self, environment: str, line: str) -> None:
        LOG.debug("%s: %s", environment, line)

    def build_done(self, build: EnvBuild) -> None:
        self.builds.append(build)

    def measurements_start(self, total: int) -> None:
        LOG.debug("%d measurements", total)

    def measurement_done(self, record: MeasurementRecord) -> None:
        self.measurements.append(record)

    def cells_start(self, total: int) -> None:
        LOG.debug("%d cells", total)

    def cell_done(self, result: CellResult) -> None:
        self.cells.append(result)


def run_grid(matrix: Matrix, results_root: Path, use_cache: bool = False, parallel: int = 0) -> Outcome:
    """Run every cell of `matrix` in real containers; measured afresh unless `use_cache`."""
    return run_matrix(matrix, Options(results_root=results_root, parallel=parallel, use_cache=use_cache),
                      RecordingUI())


def cell(outcome: Outcome, env: str, host: str, scenario: str) -> dict[str, Any]:
    """One cell of a run's cells.json document."""
    wanted = cell_id(env, host, scenario)
    found = [c for c in outcome.document.cells if c.id == wanted]
    assert found, f"no cell {wanted} in {[c.id for c in outcome.document.cells]}"
    return dict(codec.encode(found[0]))  # as cells.json holds it


def harness_doc(c: Mapping[str, Any]) -> dict[str, Any]:
    """The document the harness wrote inside the cell's container."""
    assert c.get("result_path"), f"{c['id']}: no result document ({c['status']}: {c['reason']})"
    data = json.loads(Path(c["result_path"]).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def facts(c: Mapping[str, Any]) -> dict[str, Any]:
    """The facts the harness gathered in the cell's container."""
    return dict(harness_doc(c)["diagnosis"]["facts"])


def findings(c: Mapping[str, Any], verdict: str) -> list[dict[str, Any]]:
    """The harness's findings of one verdict in this cell."""
    return [f for f in (c.get("observed") or {}).get("findings", []) if f.get("verdict") == verdict]


def describe(c: Mapping[str, Any]) -> str:
    """A cell in one line, for assertion messages."""
    observed = c.get("observed") or {}
    return (f"{c['id']}: {c['status']} ({c['reason']}); observed {observed.get('verdict')}, torch said "
            f"{observed.get('torch_message')!r}; log: {(c.get('log_tail') or '')[-400:]}")


def leftovers(engine: Engine, run_id: str) -> list[str]:
    """Containers of a run still in the engine, running or not (`docker ps -a --filter label=refenv.run=ID`)."""
    found = engine.client.containers.list(all=True, filters={"label": [f"refenv.run={run_id}"]})
    return [str(c.name) for c in found]


def python_in_image(engine: Engine, image: str, code: str, timeout: float = 180.0) -> dict[str, Any]:
    """Run `code` with the image's Python, as the image's own user, and return the JSON it prints after JSON_MARK."""
    spec = ContainerSpec(image=image, command=(code,), entrypoint=("python", "-c"), environment=(),
                         labels=((MANAGED, "true"), ("refenv.kind", "test")), binds=())
    outcome = engine.run(spec, timeout)
    assert outcome.exit_code == 0 and not outcome.timed_out, f"{image}: exit {outcome.exit_code}: {outcome.logs}"
    lines = [ln for ln in outcome.logs.splitlines() if ln.startswith(JSON_MARK)]
    assert lines, f"{image} printed no result: {outcome.logs}"
    data = json.loads(lines[-1][len(JSON_MARK):])
    assert isinstance(data, dict)
    return data


def wheel(requirement: str) -> Path:
    """A cp311 manylinux wheel of `requirement` in the shared wheelhouse (downloaded once, without dependencies)."""
    from refenv import paths
    from refenv.builder.wheelhouse import pip_download
    from refenv.model.suites import SUITE_GLIBC

    house = paths.wheelhouse()
    name, _, version = requirement.partition("==")
    pattern = f"{name.replace('-', '_')}-{version or ''}*.whl"
    if not sorted(house.glob(pattern)):
        pip_download(["--python-version", "3.11", "--abi", "cp311", "--abi", "abi3", "--abi", "none", "--no-deps",
                      "--", requirement], house, SUITE_GLIBC["bookworm"])  # the default base's glibc
    found = sorted(house.glob(pattern))
    assert found, f"pip downloaded no wheel for {requirement}"
    return found[-1]
