"""Which environments `invoke publish` takes: known-good in the run that tested this very image (pure)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from refenv import jsoncodec
from refenv.publish import verify
from refenv.publish.verify import Judgement, describe_host
from refenv.rundoc import HostRecord, RunDocumentError, from_data

HASH = "ab" * 32
HOSTS = [
    {"name": "none", "kind": "none", "driver": None, "gpus": [], "faults": []},
    {"name": "r580", "kind": "simulated", "driver": "580.95.05",
     "gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}], "faults": []},
    {"name": "r580-mismatch", "kind": "simulated", "driver": "580.95.05", "gpus": [],
     "faults": ["NVML init error 18", "cuInit error 803"]},
    {"name": "real", "kind": "real", "driver": None, "gpus": [], "faults": []},
]


def cell(env: str, host: str, status: str, reason: str = "as expected") -> dict[str, Any]:
    return {"id": f"{env}/{host}/gpu", "environment": env, "host": host, "scenario": "gpu", "status": status,
            "reason": reason}


def doc(cells: list[dict[str, Any]] | None = None, content_hash: str = HASH) -> dict[str, Any]:
    return {
        "schema": "refenv.cells", "version": 1, "run": {"id": "run-7", "interrupted": False},
        "environments": [{"name": "env", "content_hash": content_hash}, {"name": "other", "content_hash": "c" * 64}],
        "hosts": HOSTS,
        "cells": cells if cells is not None else [
            cell("env", "none", "PASS"), cell("env", "r580", "PASS"), cell("env", "r580-mismatch", "PASS"),
            cell("env", "real", "NOT_RUN", "this Docker engine has no NVIDIA runtime"),
            cell("other", "r580", "FAIL", "expected OK, observed DRIVER_TOO_OLD")],
    }


def judge(d: dict[str, Any], environment: str, content_hash: str) -> Judgement:
    """verify.judge of the document as `load_run` reads it."""
    return verify.judge(from_data(d), environment, content_hash)


def test_known_good_names_the_hosts_it_was_verified_on() -> None:
    j = judge(doc(), "env", HASH)
    assert j.ok and j.reasons == () and j.run_id == "run-7" and j.passed == 3
    assert j.hosts == ("none", "r580", "r580-mismatch")
    assert j.verified_on == ("none (no driver)", "r580 (simulated driver 580.95.05, 2 x NVIDIA H100 80GB HBM3)",
                             "r580-mismatch (simulated driver 580.95.05; faults: NVML init error 18, cuInit error 803)")
    assert j.not_verified == ("env/real/gpu: this Docker engine has no NVIDIA runtime",)


@pytest.mark.parametrize("status", ["FAIL", "ERROR", "BUILD_FAILED", "TIMEOUT", "OOM_KILLED"])
def test_any_bad_cell_refuses(status: str) -> None:
    d = doc()
    d["cells"][1] = cell("env", "r580", status, "what went wrong")
    j = judge(d, "env", HASH)
    assert not j.ok and j.verified_on == ()
    assert j.reasons[0] == "1 of its 4 cells disagree or did not run as planned in run run-7"
    assert j.reasons[1] == f"env/r580/gpu: {status} (what went wrong)"


def test_the_other_environments_failure_does_not_count() -> None:
    assert judge(doc(), "env", HASH).ok
    assert not judge(doc(), "other", "c" * 64).ok


def test_many_bad_cells_are_counted() -> None:
    j = judge(doc([cell("env", f"h{i}", "FAIL") for i in range(8)]), "env", HASH)
    assert len(j.reasons) == 1 + 5 + 1 and j.reasons[-1] == "and 3 more"


def test_no_pass_refuses() -> None:
    j = judge(doc([cell("env", "real", "NOT_RUN", "no NVIDIA runtime")]), "env", HASH)
    assert not j.ok and "nothing verified it" in j.reasons[0]


def test_a_different_content_hash_refuses() -> None:
    j = judge(doc(content_hash="ff" * 32), "env", HASH)
    assert not j.ok and j.reasons[0].startswith(f"the image's content hash {HASH[:16]} differs")


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d["run"].update(interrupted=True), "was interrupted"),
    (lambda d: d.update(environments=[]), "did not test env"),
    (lambda d: d.update(cells=[]), "has no cells of env"),
])
def test_other_refusals(change: Any, words: str) -> None:
    d = copy.deepcopy(doc())
    change(d)
    j = judge(d, "env", HASH)
    assert not j.ok and words in j.reasons[0]


def test_a_document_of_another_schema_is_refused_when_read() -> None:
    d = copy.deepcopy(doc())
    d.update(schema="something.else")
    with pytest.raises(RunDocumentError, match="not a matrix run document"):
        judge(d, "env", HASH)


def host(d: dict[str, Any]) -> HostRecord:
    return jsoncodec.decode(HostRecord, d)


def test_describe_host() -> None:
    mixed = {"name": "n", "kind": "simulated", "driver": "1.2", "gpus": [{"name": "A"}, {"name": "B"}]}
    assert describe_host(host(mixed)) == "n (simulated driver 1.2, 2 GPUs)"
    assert describe_host(host({"name": "real", "kind": "real", "driver": "575.57.08",
                               "gpus": [{"name": "NVIDIA H200"}]})) == "real (real driver 575.57.08, 1 x NVIDIA H200)"
