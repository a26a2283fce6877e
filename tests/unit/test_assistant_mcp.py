"""`refenv mcp` through the official SDK's own stdio client: the program is started as an assistant starts it,
lists its tools, and answers each of them; a bad argument comes back as the tool's error naming the argument."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from refenv.assistant import answers

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape (redact.py's table)
REPORT = (DATA / "reports" / "docker-without-gpus.txt").read_text(encoding="utf-8") + f"\nGITHUB_TOKEN={SECRET}\n"

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "diagnose_machine": ("diagnose_machine", {"torch_timeout": 120}),
    "diagnose_report": ("diagnose_report", {"text": REPORT}),
    "stack": ("stack", {"capabilities": ["9.0"], "driver_cuda": "12.8"}),
    "memory_fit": ("memory_fit", {"model": "llama-3-70b", "gpu": "H100-SXM", "gpus": 1}),
    "compat": ("compat", {"release": "2.14.1"}),
    "matrix_readiness": ("matrix_readiness", {"results": str(DATA / "cells" / "passing.json"),
                                              "against": str(DATA / "cells" / "failures.json")}),
    "bad release": ("compat", {"release": "9.99"}),
    "missing release": ("compat", {}),
    "bad gpu": ("memory_fit", {"model": "llama-3-8b", "gpu": "GTX-9999"}),
    "bad regime": ("memory_fit", {"model": "llama-3-8b", "regime": "fp8"}),
    "bad results": ("matrix_readiness", {"results": "/nonexistent/results"}),
    "bad capability": ("stack", {"capabilities": ["sm_90"]}),
    "empty report": ("diagnose_report", {"text": "   "}),
}


def _program() -> str:
    """The installed `refenv` beside this interpreter (the console script an MCP client is configured with)."""
    found = Path(sys.executable).parent / "refenv"
    return str(found) if found.exists() else shutil.which("refenv") or "refenv"


async def _session() -> tuple[list[Any], dict[str, Any]]:
    params = StdioServerParameters(command=_program(), args=["mcp"], cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        results = {key: await session.call_tool(name, args) for key, (name, args) in CALLS.items()}
    return listed, results


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[list[Any], dict[str, Any]]]:
    yield anyio.run(_session)


def _json(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


def _error(result: Any) -> str:
    assert result.is_error
    text: str = result.content[0].text
    assert "Traceback" not in text
    return text


def test_the_server_lists_its_six_tools_each_described_with_a_typed_schema(served: Any) -> None:
    listed, _ = served
    assert {t.name for t in listed} == {"diagnose_machine", "diagnose_report", "stack", "memory_fit", "compat",
                                        "matrix_readiness"}
    for tool in listed:
        assert tool.description and len(tool.description) > 40, tool.name
        props = tool.input_schema["properties"]
        for name, prop in props.items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
            assert "type" in prop or "anyOf" in prop, f"{tool.name}.{name} has no type"
        assert tool.annotations is not None and tool.annotations.read_only_hint
    by_name = {t.name: t for t in listed}
    assert by_name["diagnose_report"].input_schema["required"] == ["text"]
    assert by_name["memory_fit"].input_schema["properties"]["mode"]["enum"] == ["train", "infer"]


def test_diagnose_machine_answers_this_machines_verdict_with_evidence(served: Any) -> None:
    from harness.schema import OK, VERDICTS

    data = _json(served[1]["diagnose_machine"])
    # Whatever this machine is (CI's has no NVIDIA driver, the lent device has a GPU), the harness judges it.
    assert data["verdict"] in VERDICTS
    assert data["findings"] and all(f["evidence"] for f in data["findings"] if f["severity"] == "error")
    assert data["fix"] or data["verdict"] == OK
    assert data["text"].startswith(f"refenv diagnose: {data['verdict']}")


def test_diagnose_report_gives_verdict_confidence_evidence_lines_and_redacts_the_paste(served: Any) -> None:
    data = _json(served[1]["diagnose_report"])
    assert data["verdict"] == "NOT_VISIBLE"
    assert data["confidence"] == "high"
    assert any(e["line"] == 1 and e["rests_on"] for e in data["evidence"])
    assert data["fix"] and data["comment"]
    assert SECRET not in json.dumps(data)
    assert SECRET[:12] not in json.dumps(data)


def test_stack_inventories_this_environment_and_judges_it(served: Any) -> None:
    data = _json(served[1]["stack"])
    assert data["of"] == "this environment"
    names = {d["name"] for d in data["stack"]["inventory"]["distributions"]}
    assert "torch" in names
    assert data["text"].startswith("refenv stack (this environment)")


def test_memory_fit_says_70b_does_not_fit_one_h100_and_gives_the_ladder(served: Any) -> None:
    data = _json(served[1]["memory_fit"])
    assert data["fits"] is False
    prediction = data["prediction"]
    assert prediction["model"]["name"] == "llama-3-70b"
    assert prediction["ledgers"] and prediction["budget"]["name"] == "H100-SXM"
    assert prediction["plans"], "no ladder proposed"
    assert data["fits_after_ladder"] is prediction["plans"][-1]["fits"] is True  # QLoRA, its last rung
    assert "does NOT fit" in data["text"]


def test_compat_gives_builds_minimum_drivers_and_architectures(served: Any) -> None:
    data = _json(served[1]["compat"])
    by_variant = {b["variant"]: b for b in data["builds"]}
    assert by_variant["cu130"]["min_driver"] == "580.65.06"
    assert "sm_90" in by_variant["cu130"]["architectures"]
    assert by_variant["cpu"]["cuda"] is None


def test_matrix_readiness_reads_a_run_and_what_changed_against_another(served: Any) -> None:
    data = _json(served[1]["matrix_readiness"])
    assert data["environments"] and all("gpu_on" in s for s in data["environments"])
    assert data["changes"]["text"].startswith("from run ")


@pytest.mark.parametrize(("call", "argument"), [
    ("bad release", "release"), ("missing release", "release"), ("bad gpu", "gpu"), ("bad regime", "regime"),
    ("bad results", "results"), ("bad capability", "capabilities"), ("empty report", "text"),
])
def test_a_bad_argument_is_an_mcp_error_naming_it(served: Any, call: str, argument: str) -> None:
    assert argument in _error(served[1][call])


def test_every_string_of_an_answer_passes_the_redaction_boundary() -> None:
    answer = answers.redacted({"k": [f"token {SECRET}", {"x": SECRET}], "n": 3})
    assert SECRET not in json.dumps(answer)
    assert answer["n"] == 3
