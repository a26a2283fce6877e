"""`refenv check` on Dockerfiles of our own making: each input form read with its line, the torch resolved, each cell
predicted by the matrix's own predictor, and each kind of finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import compat
from refenv.check import bases, checker, report
from refenv.check.facts import DockerfileFacts
from refenv.check.lint import lint
from refenv.check.reader import context_path, read_dockerfile
from refenv.check.resolve import resolve
from refenv.check.text import CheckInputError
from refenv.model.matrix import Environment
from refenv.model.matrix_yaml import parse
from refenv.run import expect

DEFAULT = Path(__file__).resolve().parents[2] / "matrix.yaml"


def facts(text: str, files: dict[str, str] | None = None, target: str | None = None) -> DockerfileFacts:
    known = files or {}
    return read_dockerfile(text.encode(), "Dockerfile", known.get, target=target)


def torch_of(text: str, files: dict[str, str] | None = None) -> tuple[str, str, int]:
    f = facts(text, files)
    r = resolve(f, "e")
    assert r.environment is not None and r.torch is not None
    return r.environment.torch, r.environment.variant, r.torch.where.line


@pytest.mark.parametrize(("text", "files", "want"), [
    ("FROM python:3.11-slim\nRUN pip install torch==2.6.0+cu126\n", None, ("2.6.0", "cu126", 2)),
    ("FROM python:3.11-slim\nRUN pip install --no-cache-dir \\\n    torch==2.6.0 \\\n"
     "    --index-url https://download.pytorch.org/whl/cu118\n", None, ("2.6.0", "cu118", 3)),
    ("FROM python:3.11\nRUN python -m pip install torch==2.5.1 --extra-index-url https://download.pytorch.org/whl/cpu\n",
     None, ("2.5.1", "cpu", 2)),
    ("FROM python:3.11\nRUN pip install torch==2.8.0\n", None, ("2.8.0", "cu128", 2)),  # PyPI's default build
    ("FROM python:3.11\nWORKDIR /app\nCOPY requirements.txt .\nRUN pip install -r requirements.txt\n",
     {"requirements.txt": "numpy\n# the pin\ntorch==2.7.1+cu126\n"}, ("2.7.1", "cu126", 3)),
    ("FROM python:3.11\nCOPY reqs/ /tmp/reqs/\nRUN pip install -r /tmp/reqs/main.txt\n",
     {"reqs/main.txt": "-r base.txt\n", "reqs/base.txt": "--index-url https://download.pytorch.org/whl/cu124\n"
      "torch==2.5.1\n"}, ("2.5.1", "cu124", 2)),
    ("FROM python:3.11\nRUN uv pip install --system torch==2.9.0 --torch-backend cu130 "
     "--index-url https://download.pytorch.org/whl/cu130\n", None, ("2.9.0", "cu130", 2)),
    ("FROM continuumio/miniconda3\nRUN conda install -y pytorch==2.1.0 pytorch-cuda=12.1 -c pytorch -c nvidia\n",
     None, ("2.1.0", "cu121", 2)),
    ("FROM continuumio/miniconda3\nRUN mamba install -y pytorch=2.1 cpuonly -c pytorch\n", None, ("2.1.0", "cpu", 2)),
    ("FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\nRUN echo hi\n", None, ("2.5.1", "cu124", 1)),
    ("FROM nvcr.io/nvidia/pytorch:24.05-py3\n", None, ("2.4.0", "cu124", 1)),
    ("ARG TORCH=2.6.0\nARG CU=cu124\nFROM python:3.11\nARG TORCH\nARG CU\nRUN pip install torch==${TORCH}+${CU}\n",
     None, ("2.6.0", "cu124", 6)),
])
def test_each_input_form_gives_torch_its_build_and_its_line(text: str, files: dict[str, str] | None,
                                                             want: tuple[str, str, int]) -> None:
    assert torch_of(text, files) == want


def test_uv_sync_reads_the_project_and_its_torch_index() -> None:
    pyproject = ('[project]\nname = "app"\nversion = "1"\ndependencies = ["torch==2.6.0", "numpy"]\n\n'
                 '[tool.uv.sources]\ntorch = [{ index = "pytorch-cu126" }]\n\n'
                 '[[tool.uv.index]]\nname = "pytorch-cu126"\nurl = "https://download.pytorch.org/whl/cu126"\n'
                 'explicit = true\n')
    text = "FROM python:3.12\nWORKDIR /app\nCOPY pyproject.toml ./\nRUN uv sync --frozen\n"
    f = facts(text, {"pyproject.toml": pyproject})
    assert f.files_read == ("pyproject.toml",)
    r = resolve(f, "e")
    assert r.environment is not None and (r.environment.torch, r.environment.variant) == ("2.6.0", "cu126")
    assert r.torch is not None and str(r.torch.where) == "pyproject.toml:4"


def test_a_uv_lock_names_the_exact_build() -> None:
    lock = ('version = 1\n\n[[package]]\nname = "torch"\nversion = "2.7.1+cu128"\n'
            'source = { registry = "https://download.pytorch.org/whl/cu128" }\n')
    f = facts("FROM python:3.12\nCOPY . /app\nWORKDIR /app\nRUN uv sync --locked\n", {"uv.lock": lock})
    r = resolve(f, "e")
    assert r.environment is not None and (r.environment.torch, r.environment.variant) == ("2.7.1", "cu128")


def test_an_unpinned_torch_is_assumed_and_said() -> None:
    r = resolve(facts("FROM python:3.11\nRUN pip install 'torch>=2.4,<2.6'\n"), "e")
    assert r.environment is not None and r.environment.torch == "2.5.0"
    assert any("assumed torch 2.5.0" in a for a in r.assumptions)


def test_env_and_stages_follow_the_builder() -> None:
    text = ("FROM python:3.11 AS deps\nENV CUDA_VISIBLE_DEVICES=\"\"\nRUN pip install torch==2.6.0+cu126\n"
            "FROM deps AS app\nENV NVIDIA_DRIVER_CAPABILITIES=utility\nFROM python:3.11 AS other\n")
    f = facts(text, target="app")
    assert f.stage == "app" and f.base.image == "python:3.11"
    assert {k: (v.value, v.where.line) for k, v in f.env.items()} == {
        "CUDA_VISIBLE_DEVICES": ("", 2), "NVIDIA_DRIVER_CAPABILITIES": ("utility", 5)}
    assert resolve(facts(text), "e").environment is None  # the last stage installs no torch


def test_copy_maps_container_paths_to_the_context() -> None:
    copies: list[tuple[tuple[str, ...], str]] = [(("requirements.txt",), "/app/"), (("src/",), "/srv/"),
                                                 (("a.txt",), "/opt/b.txt")]
    assert context_path("/app/requirements.txt", copies) == "requirements.txt"
    assert context_path("/srv/x/req.txt", copies) == "src/x/req.txt"
    assert context_path("/opt/b.txt", copies) == "a.txt"
    assert context_path("/etc/passwd", copies) is None


def test_known_bases_by_name() -> None:
    cuda = bases.from_reference("docker.io/nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04@sha256:" + "0" * 64)
    assert (cuda.kind, cuda.cuda, cuda.flavour) == ("nvidia-cuda", "12.8.1", "cudnn-devel")
    ngc = bases.from_reference("nvcr.io/nvidia/pytorch:25.08-py3")
    assert (ngc.torch, ngc.cuda, ngc.min_driver) == ("2.8.0a0", "13.0.0", "580.65.06")
    assert bases.from_reference("python:3.11-slim").kind == "plain"
    inspected = bases.from_inspect("team:1", {"refenv.torch": "2.14.1+cu130", "refenv.cuda": "13.0"}, {})
    assert inspected is not None and (inspected.torch, inspected.variant) == ("2.14.1+cu130", "cu130")


def test_ngc_rows_keep_the_cuda_toolkits_driver_floor_and_say_what_is_confirmed() -> None:
    """Each NGC release's driver is its CUDA's toolkit floor (compat.json) or a later driver of the same branch,
    its torch's CUDA major is the release's, and a row not read in NVIDIA's release notes says so where shown."""
    releases = bases.ngc_releases()
    assert "23.01" in releases and "25.12" in releases
    for tag, release in releases.items():
        floor = compat.min_driver_for_cuda(release.cuda)
        assert floor is not None, tag
        assert compat.parse_version(release.min_driver) >= compat.parse_version(floor), tag
        assert release.min_driver.split(".")[0] == floor.split(".")[0], tag
        shown = bases.from_reference(f"nvcr.io/nvidia/pytorch:{tag}-py3").source
        if release.confirmed:
            assert "docs.nvidia.com" in shown and (set(release.confirmed) < {"torch", "cuda", "min_driver", "python"})\
                == ("unconfirmed" in shown), tag
        else:
            assert "not confirmed" in shown, tag
    assert releases["25.12"].confirmed == ("torch", "cuda", "python")
    assert bases.from_reference("nvcr.io/nvidia/pytorch:99.01-py3").torch is None


def test_the_cells_are_the_matrix_predictors_own() -> None:
    """A Dockerfile that installs the default matrix's cu130 torch predicts what the matrix predicts for it."""
    matrix = parse(DEFAULT.read_text(encoding="utf-8"), str(DEFAULT))
    recipe = matrix.environment("torch-2.14.1-cu130")
    f = facts("FROM python:3.11-slim\nRUN pip install torch==2.14.1\n")
    checked = checker._judged("team", "dockerfile", "Dockerfile", resolve(f, "team"), f, matrix)
    assert len(checked.cells) == len(matrix.hosts) * len(matrix.scenarios)
    for cell in checked.cells:
        host, scenario = matrix.host(cell.host), matrix.scenario(cell.scenario)
        if host.kind == "real":
            assert cell.verdict is None
            continue
        want = expect.expect(recipe, host, expect.host_profile(host, None), scenario)
        assert (cell.verdict, cell.verdicts) == (want.verdict or None, want.verdicts), cell


def test_a_baked_cuda_visible_devices_hides_the_gpu_where_the_run_does_not_set_it() -> None:
    matrix = parse(DEFAULT.read_text(encoding="utf-8"), str(DEFAULT))
    f = facts("FROM python:3.11\nENV CUDA_VISIBLE_DEVICES=\"\"\nRUN pip install torch==2.14.1+cu130\n")
    checked = checker._judged("team", "dockerfile", "Dockerfile", resolve(f, "team"), f, matrix)
    verdicts = {(c.host, c.scenario): c.verdict for c in checked.cells}
    assert verdicts[("r580", "gpu")] == "NOT_VISIBLE"
    assert verdicts[("r580", "cvd-unknown-uuid")] == "NOT_VISIBLE"   # the run's own value wins
    assert checked.readiness is not None and not checked.readiness.ready and not checked.good
    env = Environment("x", "2.14.1", "cu130")
    plain = expect.expect(env, matrix.host("r580"), expect.host_profile(matrix.host("r580"), None),
                          matrix.scenario("gpu"))
    assert plain.verdict == "OK"  # the same cell without the ENV: the difference is the image's, not the rules'


@pytest.mark.parametrize("caps", ["compute,utility", "all", "utility,compute,video"])
def test_capabilities_with_compute_are_no_finding(caps: str) -> None:
    """NVIDIA's own CUDA images set compute,utility: the toolkit still mounts libcuda, nothing to lint."""
    f = facts(f"FROM python:3.11\nENV NVIDIA_DRIVER_CAPABILITIES={caps}\nRUN pip install torch==2.6.0\n", None)
    assert [x.code for x in lint(f, resolve(f, "e")) if x.code == "visibility-baked"] == []


@pytest.mark.parametrize(("text", "files", "code", "severity", "line"), [
    ("FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y python3-pip \\\n    libnvidia-compute-535\n"
     "RUN pip install torch==2.6.0\n", None, "driver-in-image", "error", 3),
    ("FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nRUN apt-get install -y cuda-toolkit-12-4\n"
     "RUN pip install torch==2.5.1+cu124\n", None, "toolkit-installed", "warning", 2),
    ("FROM python:3.11\nRUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cpu\n", None,
     "cpu-build", "error", 2),
    ("FROM python:3.11\nCOPY r.txt /r.txt\nRUN pip install -r /r.txt\n", {"r.txt": "torch==2.13.0+cpu\n"},
     "cpu-build", "error", 1),
    ("FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install torch==2.6.0+cu126\n", None, "cuda-major",
     "warning", 2),
    ("FROM python:3.11\nRUN pip install torch==2.6.0+cu121\n", None, "no-such-build", "error", 2),
    ("FROM python:3.11\nENV NVIDIA_VISIBLE_DEVICES=0\nRUN pip install torch==2.6.0\n", None, "visibility-baked",
     "warning", 2),
    ("FROM python:3.11\nENV NVIDIA_DRIVER_CAPABILITIES=utility\nRUN pip install torch==2.6.0\n", None,
     "visibility-baked", "warning", 2),
    ("FROM python:3.11\nRUN pip install torch==2.14.1 torchvision==0.28.0\n", None, "extension-pairing", "error",
     2),
    ("FROM python:3.11\nRUN pip install torch\n", None, "unpinned-torch", "warning", 2),
])
def test_each_finding_names_its_line_and_fix(text: str, files: dict[str, str] | None, code: str, severity: str,
                                              line: int) -> None:
    f = facts(text, files)
    found = [x for x in lint(f, resolve(f, "e")) if x.code == code]
    assert found, [x.code for x in lint(f, resolve(f, "e"))]
    assert (found[0].severity, found[0].where.line) == (severity, line) and found[0].fix


def test_a_clean_dockerfile_has_no_finding_and_is_good(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nRUN pip install torch==2.14.1 torchvision==0.29.1\n")
    checked = checker.check(str(tmp_path / "Dockerfile"), drivers="535,580", use_engine=False)
    assert [c.findings for c in checked] == [()]
    doc = report.document(checked)
    assert doc["status"] == "good"
    env = doc["environments"][0]
    assert env["readiness"]["ready"] == ["r580"]
    assert {c["host"] for c in env["cells"]} == {"none", "r535", "r580"}


def test_bad_input_is_named_by_file_and_line() -> None:
    with pytest.raises(CheckInputError, match="Dockerfile:3: byte 0xff"):
        read_dockerfile(b"FROM a\nRUN x\nRUN \xff\n", "Dockerfile", lambda _: None)


def test_the_gate_compares_the_prediction_with_the_run_cell_by_cell() -> None:
    from refenv.check.compare import agreement, markdown

    check_doc = {"environments": [{"cells": [
        {"environment": "e", "host": "r535", "scenario": "gpu", "verdict": "DRIVER_TOO_OLD"},
        {"environment": "e", "host": "r580", "scenario": "gpu", "verdict": "OK"},
        {"environment": "e", "host": "real", "scenario": "gpu", "verdict": None}]}]}
    cells_doc = {"cells": [
        {"environment": "e", "host": "r535", "scenario": "gpu", "observed": {"verdict": "DRIVER_TOO_OLD"}},
        {"environment": "e", "host": "r580", "scenario": "gpu", "observed": {"verdict": "NOT_VISIBLE"}},
        {"environment": "e", "host": "real", "scenario": "gpu", "observed": None}]}
    a = agreement(check_doc, cells_doc)
    assert (a.compared, a.differing) == (2, (("e/r580/gpu", "OK", "NOT_VISIBLE"),)) and a.share == 0.5
    assert "| e/r580/gpu | OK | NOT_VISIBLE |" in markdown(a)
