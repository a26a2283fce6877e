"""Team images through the runner (fake engine): read once (refenv/run/imagefacts.py), predicted from what was
read, run with the mounted harness and their own Python; an image the harness cannot use says why in its cells;
each cell's stack is judged against its host and readiness carries it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from refenv.model.matrix import IMAGE, Environment, Host, Matrix, RunSettings, Scenario, TeamImage
from refenv.model.rundoc import load_run
from refenv.report.console import console_summary
from refenv.report.ready import compare_lines, sections
from refenv.run.imagefacts import read_facts, resolve
from refenv.run.pipeline import Options, run_matrix
from tests.unit.fake_engine import UI, FakeEngine

pytestmark = pytest.mark.usefixtures("private_cache")

R580, R535 = Host("r580", "simulated", "r580"), Host("r535", "simulated", "r535")
GPU = Scenario("gpu", "all")
FAST = RunSettings(timeout_s=5, parallel=2, probes="off", memory_check="off")
TORCH_ARCH = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def team(name: str, ref: str, interpreter: str = "/opt/conda/bin/python") -> Environment:
    return Environment(name, "", "", "", team=TeamImage(IMAGE, image=ref, interpreter=interpreter))


def dist(name: str, version: str, kind: str = "extension", **more: Any) -> dict[str, Any]:
    return {"name": name, "key": name, "version": version, "version_label": more.pop("label", version), "kind": kind,
            "why": [], "requires": more.pop("requires", []), "pinned_by_torch": None,
            "built_for": {"cuda": more.pop("cuda", None), "cuda_from": "version.py", "torch": None, "torch_from": None,
                          "per_cuda": []},
            "arch": more.pop("arch", []), "extra_arch": [], "libraries": more.pop("libraries", []),
            "shared_objects": 0, "module": name, "files_listed": True, "errors": [],
            "import": more.pop("imported", {"ok": True, "module": name})}


def stack(*extensions: dict[str, Any]) -> dict[str, Any]:
    torch = dist("torch", "2.14.1", "torch", label="2.14.1+cu130", cuda="13.0", arch=TORCH_ARCH)
    return {"stack": {"inventory": {"python": "3.11.2", "distributions": [torch, *extensions],
                                    "read": {"distributions": 40, "shared_objects": 50, "fatbin_containers": 500},
                                    "wall_s": 4.2}}}


BROKEN_TV = dist("torchvision", "0.28.0", cuda="13.0", requires=[{"name": "torch", "spec": "==2.13.0"}],
                 imported={"ok": False, "module": "torchvision",
                           "error": "RuntimeError: operator torchvision::nms does not exist"})
PYTHON = {"python": "3.11.2", "executable": "/opt/conda/bin/python", "require_cuda": "cuda>=13.0"}


def run(engine: FakeEngine, envs: tuple[Environment, ...], tmp_path: Path, hosts: tuple[Host, ...] = (R580,)) -> Any:
    m = Matrix(str(tmp_path / "matrix.yaml"), envs, hosts, (GPU,), FAST)
    return run_matrix(m, Options(results_root=tmp_path / "results"), UI(), engine)


def test_the_facts_are_read_from_what_the_probe_wrote() -> None:
    facts = read_facts("python3", PYTHON, stack(), {"vendor": "team"})
    assert (facts.torch, facts.cuda, facts.python, facts.error) == ("2.14.1+cu130", "13.0", "3.11.2", None)
    assert facts.arch == tuple(TORCH_ARCH) and facts.require_cuda == "cuda>=13.0"
    env = resolve(team("app", "team/app:1"), facts)
    assert (env.torch, env.variant, env.python, env.cuda, env.arch) == ("2.14.1+cu130", "cu130", "3.11", "13.0",
                                                                         tuple(TORCH_ARCH))


@pytest.mark.parametrize(("image_doc", "stack_doc", "phrase"), [
    (None, None, "did not run: exec: python3: not found"),
    ({"python": "3.6.9"}, None, "is 3.6.9: the harness needs 3.8 or newer"),
    (PYTHON, {"stack": {"inventory": {"distributions": []}}}, "no torch in the image"),
    (PYTHON, None, "the stack inventory did not complete"),
])
def test_an_image_the_harness_cannot_use_says_why(image_doc: dict[str, Any] | None, stack_doc: dict[str, Any] | None,
                                                  phrase: str) -> None:
    facts = read_facts("python3", image_doc, stack_doc, {}, "exec: python3: not found")
    assert facts.error is not None and phrase in facts.error
    assert resolve(team("app", "team/app:1"), facts).known is False


def test_a_team_image_runs_with_the_mounted_harness_and_is_predicted_from_what_it_holds(tmp_path: Path) -> None:
    engine = FakeEngine(image_docs={"team/app:1": {"image.json": PYTHON, "stack.json": stack()}})
    outcome = run(engine, (team("app", "team/app:1"),), tmp_path, (R580, R535))
    spec = engine.specs["app/r580/gpu"]
    assert spec.entrypoint == ("/opt/conda/bin/python", "-m", "harness")
    assert ("PYTHONPATH", "/opt/refenv-harness") in spec.environment
    assert any(target == "/opt/refenv-harness/harness" and ro for _, target, ro in spec.binds)
    cells = {c.host: c for c in outcome.document.cells}
    assert cells["r535"].expected.verdict == "DRIVER_TOO_OLD"  # cu130, read from the image, on R535
    assert cells["r580"].stack is not None and cells["r580"].stack.ready
    env = load_run(outcome.folder).environment("app")
    assert env is not None and (env.source, env.torch, env.cuda, env.require_cuda) == (
        "image", "2.14.1+cu130", "13.0", "cuda>=13.0")
    assert env.stack is not None and env.interpreter == "/opt/conda/bin/python"


def test_an_image_without_a_usable_python_gets_one_line_and_the_rest_runs(tmp_path: Path) -> None:
    engine = FakeEngine(image_docs={"team/old:1": {"image.json": {"python": "3.6.9"}},
                                    "team/app:1": {"image.json": PYTHON, "stack.json": stack()}})
    outcome = run(engine, (team("old", "team/old:1"), team("app", "team/app:1")), tmp_path)
    old = [c for c in outcome.document.cells if c.environment == "old"]
    assert {c.status for c in old} == {"BUILD_FAILED"}
    assert all("is 3.6.9: the harness needs 3.8 or newer" in c.reason for c in old)
    assert {c.status for c in outcome.document.cells if c.environment == "app"} == {"PASS"}


def test_an_extension_that_does_not_import_takes_the_host_out_of_readiness(tmp_path: Path) -> None:
    engine = FakeEngine(image_docs={"team/app:1": {"image.json": PYTHON, "stack.json": stack()},
                                    "team/app:2": {"image.json": PYTHON, "stack.json": stack(BROKEN_TV)}})
    outcome = run(engine, (team("app1", "team/app:1"), team("app2", "team/app:2")), tmp_path)
    doc = load_run(outcome.folder)
    by = {s.environment: s for s in sections(doc)}
    assert by["app1"].gpu_on.startswith("r580") and by["app1"].stack_blocked == ()
    assert by["app2"].gpu_on == "no host"
    (blocked,) = by["app2"].stack_blocked
    assert blocked.startswith("r580: torchvision 0.28.0 does not import: RuntimeError: operator torchvision::nms")
    assert "pip install torchvision==0.29.1" in blocked
    lines = compare_lines(doc, "app1", "app2")
    assert any("r580" in line and "-> GPU, but the stack does not run  [changes]" in line for line in lines)
    assert lines[-1] == "  moving to torch 2.14.1+cu130 breaks torchvision 0.28.0: requires torch==2.13.0"
    text = console_summary(doc)
    assert "the stack beside torch:" in text and "NOT every extension can run" in text
