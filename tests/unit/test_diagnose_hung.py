"""A driver whose initialisation never returns (a GPU fallen off the bus, Xid 79, or a hung driver): the harness
gives up on the blocked call after its bound and still reports, naming it; the predictor, the reader of a pasted
report and the catalogue know it like every other fault.

The live case runs `python -m harness diagnose` on this machine with the simulated driver of r580-cuinit-hang,
whose cuInit truly never returns: the bound is what ends the wait, not this machine's speed. (The dev venv's
torch is a CPU build, which never calls into the driver; a CUDA torch blocking in is_available() is the docker
tier's, tests/docker/test_matrix_faults.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest

from harness.classify import classify
from harness.diagnosis.report import judge_report
from harness.facts import Facts
from harness.intake import load_report
from harness.schema import CPU_WHEEL, DRIVER_BROKEN, EXIT_FAILING, NOT_VISIBLE, Finding
from refenv.builder import simdriver
from refenv.model import profiles
from refenv.model.faults import FAULTS
from refenv.model.matrix import Environment, Host, Scenario
from refenv.run.expect import expect
from tests.unit.facts_builder import healthy, merge

ROOT = Path(__file__).resolve().parents[2]
BOUND = 2  # seconds: the harness's bound on the driver's initialisation, here; the call never returns anyway


def fixes(f: Finding) -> str:
    return "\n".join(f.remediation)


@pytest.fixture(scope="module")
def hung_diagnosis(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    driver = simdriver.build()
    folder = tmp_path_factory.mktemp("hung")
    conf = folder / "simdriver.conf"
    profile = profiles.get("r580-cuinit-hang")
    conf.write_text(profiles.render_config(profile), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    # The host's PCI bus as the profile has it, not this machine's (which may show no NVIDIA GPU).
    env.update(driver.env(conf, simdriver.write_pci_view(*profiles.pci_tree(profile), folder / "pci")))
    done = subprocess.run([sys.executable, "-m", "harness", "diagnose", "--json", "--init-timeout", str(BOUND)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict), done.stderr
    return done.returncode, doc


def test_the_harness_gives_up_on_a_cuinit_that_never_returns_and_names_it(
        hung_diagnosis: tuple[int, dict[str, Any]]) -> None:
    code, doc = hung_diagnosis
    libcuda = doc["facts"]["driver"]["libcuda"]
    assert libcuda["loaded"] is True and libcuda["driver_version"] == 13000
    assert libcuda["blocked_in"] == "cuInit(0)" and libcuda["blocked_s"] >= BOUND and libcuda["cuinit"] is None
    assert len(doc["facts"]["driver"]["nvml"]["devices"]) == 2, "NVML was probed beside it and answered"
    assert doc["facts"]["driver"]["simulated"]["libcuda"]["stage"]["cuinit_called"] is True
    # A hang is an observation, not a harness that failed: exit 1 (a failing verdict), no probe error.
    assert code == EXIT_FAILING and not doc.get("probe_errors") and not doc.get("error")
    diagnosis = doc["diagnosis"]
    assert diagnosis["verdict"] == DRIVER_BROKEN and diagnosis["simulated"] is True
    hang = diagnosis["findings"][0]
    assert hang["title"].startswith("the driver's initialisation never returns: cuInit(0) blocks")
    assert any(e.startswith("cuInit(0) had not returned after ") for e in hang["evidence"])
    fix = "\n".join(hang["remediation"])
    assert "nvidia-smi" in fix and "dmesg | grep -i xid" in fix and "--gpu-reset" in fix and "reboot" in fix
    assert CPU_WHEEL in [f["verdict"] for f in diagnosis["findings"] if f["severity"] == "error"]


def test_a_blocked_torch_is_named_with_the_driver_call_beside_it() -> None:
    facts = healthy(driver={"libcuda": {"cuinit": None, "cuinit_name": None, "cuinit_message": None,
                                        "device_count": None, "blocked_in": "cuInit(0)", "blocked_s": 60.0}},
                    torch={"is_available": None, "device_count": None, "blocked_in": "torch.cuda.is_available()",
                           "blocked_s": 58.2})
    diag = classify(cast(Facts, facts))
    assert diag.verdict == DRIVER_BROKEN
    (hang,) = [f for f in diag.findings if f.failing]
    assert hang.title.startswith("the driver's initialisation never returns: cuInit(0) blocks")
    assert hang.evidence[:2] == ("cuInit(0) had not returned after 60 s",
                                 "torch.cuda.is_available() had not returned after 58.2 s")
    assert hang.remedy is not None and hang.remedy.kind == "reboot"
    # torch alone (a driver probe that answered in time, a torch that did not) says the same.
    alone = merge(facts, {"driver": {"libcuda": {"blocked_in": None, "blocked_s": None, "cuinit": 0}}})
    diag = classify(cast(Facts, alone))
    assert diag.verdict == DRIVER_BROKEN and "torch.cuda.is_available() blocks" in diag.findings[0].title


@pytest.mark.parametrize(("text", "confidence"), [
    ("torch.cuda.is_available() hangs and never returns; nvidia-smi still works\nPyTorch version: 2.5.1+cu124\n",
     "high"),
    ("refenv diagnose: DRIVER_BROKEN\n  cuInit(0) had not returned after 60 s\n", "medium"),
    ("my job is stuck at torch.cuda.is_available() since this morning\n", "medium"),
])
def test_a_report_of_a_hang_is_read_as_one(text: str, confidence: str) -> None:
    doc = judge_report(load_report(text), "report.txt")
    assert doc.diagnosis is not None and doc.diagnosis.verdict == DRIVER_BROKEN
    assert doc.diagnosis.assessment is not None and doc.diagnosis.assessment.confidence == confidence
    hang = doc.diagnosis.failing[0]
    assert "never returns" in hang.title and "--gpu-reset" in fixes(hang)


@pytest.mark.parametrize("text", [
    "[ 8812.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n",
    "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\ntorch.cuda.is_available() returns False\n",
    "调用 torch.cuda.is_available() 时程序卡住了, nvidia-smi 正常\n",
])
def test_xid_79_and_a_hang_in_other_words_are_leads_to_a_broken_driver(text: str) -> None:
    doc = judge_report(load_report(text), "report.txt")
    assert doc.diagnosis is not None and doc.diagnosis.verdict == DRIVER_BROKEN
    assessment = doc.diagnosis.assessment
    assert assessment is not None
    rests = " ".join(assessment.rests_on)
    assert "fallen off the bus" in rests or "hangs" in rests
    assert "sudo dmesg | grep -i -e NVRM -e Xid" in assessment.ask


def test_a_training_that_hangs_later_is_not_read_as_a_driver_hang() -> None:
    doc = judge_report(load_report("PyTorch version: 2.5.1+cu124\nmy training hangs after epoch 3 on the GPU\n"),
                       "report.txt")
    assert doc.diagnosis is not None and doc.diagnosis.verdict != DRIVER_BROKEN


CU130 = Environment("cu130", "2.14.1", "cu130", "3.11")
CPU = Environment("cpu", "2.13.0", "cpu", "3.11")
HUNG = Host("r580-cuinit-hang", "simulated", "r580-cuinit-hang")


def test_the_predictor_expects_the_hang_only_where_a_gpu_is_brought_up() -> None:
    profile = profiles.get("r580-cuinit-hang")
    got = expect(CU130, HUNG, profile, Scenario("gpu", "all"))
    assert (got.verdict, got.verdicts, got.torch_text) == (DRIVER_BROKEN, (DRIVER_BROKEN,), None)
    assert "never returns" in got.reason
    assert expect(CPU, HUNG, profile, Scenario("gpu", "all")).verdicts == (DRIVER_BROKEN, CPU_WHEEL)
    hidden = expect(CU130, HUNG, profile, Scenario("cvd-empty", "all", (("CUDA_VISIBLE_DEVICES", ""),)))
    assert hidden.verdict == NOT_VISIBLE and DRIVER_BROKEN not in hidden.verdicts  # no GPU to wait for
    assert expect(CU130, HUNG, profile, Scenario("no-gpu", "none")).verdict == NOT_VISIBLE


def test_reproduce_can_ask_for_the_hang_by_name() -> None:
    assert FAULTS["cuinit-hang"] == profiles.get("r580-cuinit-hang").faults


# The torch child's side of the bound, with children that stand for it: torch's binding keeps the interpreter
# while the driver blocks, so the parent bounds the calls it announced (harness/gather/collect.py).
CHILD = """
import json, sys, time
def say(facts, calling):
    sys.stdout.write(json.dumps({"facts": facts, "calling": calling}) + "\\n")
    sys.stdout.flush()
"""


def announced(body: str, bound: float, deadline_s: float = 300) -> tuple[dict[str, Any] | None, str | None]:
    from harness.gather.collect import Announced

    # stdin a pipe nobody writes: a child reading it waits for ever, as one blocked in a hung driver does.
    proc = subprocess.Popen([sys.executable, "-c", CHILD + body], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        return Announced(proc).collect(time.monotonic() + deadline_s, bound, "torch")
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.kill()
        proc.wait()


def test_a_call_announced_and_never_returned_is_reported_blocked_after_the_bound() -> None:
    # The child announces the call, then never returns from it (it waits on a pipe nobody writes).
    facts, err = announced('say({"version": "2.14.1"}, "torch.cuda.is_available()")\nsys.stdin.read()', 1)
    assert err is None and facts is not None
    assert facts["version"] == "2.14.1" and facts["blocked_in"] == "torch.cuda.is_available()"
    assert facts["blocked_s"] >= 1


def test_a_child_that_answers_gives_its_last_facts_and_one_that_dies_says_how() -> None:
    facts, err = announced('say({"v": 1}, "torch.cuda.is_available()")\nsay({"v": 2}, None)', 300)
    assert (facts, err) == ({"v": 2}, None)
    facts, err = announced('sys.stderr.write("Segmentation fault\\n")\nsys.exit(139)', 300)
    assert facts is None and err == "the torch probe exited with 139: Segmentation fault"
    facts, err = announced('print("not json")', 300)
    assert facts is None and err == "the torch probe printed no JSON it could read"


def test_a_dead_child_s_last_words_are_read_even_when_they_come_after_its_exit() -> None:
    """The stderr reader may still be reading when the child's exit is seen (a loaded machine): here a grandchild
    holds stderr and writes the child's last words a moment after the child exited 139; they are waited for."""
    late = ("import subprocess\nsubprocess.Popen([sys.executable, '-c', 'import sys, time; time.sleep(1); "
            "sys.stderr.write(\"Segmentation fault\\\\n\")'], stdout=subprocess.DEVNULL)\nsys.exit(139)")
    facts, err = announced(late, 300)
    assert facts is None and err == "the torch probe exited with 139: Segmentation fault"
