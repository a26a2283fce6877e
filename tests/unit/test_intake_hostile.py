"""Hostile input to the report reader: a one-line ReportError or a verdict, never a traceback, in linear time.

Seeded random generation (random text, huge input, binary, mixed encodings) over the readers, and a
regression test for each case of the hostile-input issue that concerns the reader.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.classify import classify
from harness.intake import ReportError, load_report
from harness.intake.assess import assess_report

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("PyTorch version: 2.1.0", "Driver Version: 535.54", "torch==1.3.0", "nvidia-smi", "GPU 0: Tesla T4",
         "CUDA_VISIBLE_DEVICES=", "Found no NVIDIA driver on your system", "Error 804:", "conda install cpuonly",
         "| NVIDIA-SMI 470.82 Driver Version: 470.82 CUDA Version: 11.4 |", "THCudaCheck FAIL error=999 : x",
         "NVRM: API mismatch: the client has the version 550.1, but", ">>> torch.__version__", "'2.0.1+cu118'",
         "sm_86 is not compatible", "(Triggered internally at ", "WSL", "C:\\Users\\x", "\u9a71\u52a8\u7248\u672c: ",
         "\u0432\u0435\u0440\u0441\u0438\u044f", "- PyTorch Version:", "capabilities: [", "7" * 5000, " " * 3000)


def outcome(data: bytes) -> str:
    """'refused' or the verdict; anything else raised fails the test."""
    try:
        report = load_report(data)
    except ReportError as exc:
        assert "\n" not in str(exc)
        return "refused"
    a = assess_report(report.facts, classify(report.facts), report.provenance, report.inferred, report.clues)
    json.dumps({"facts": report.facts, "assessment": a.to_dict()}, allow_nan=False)
    return a.verdict


@pytest.mark.parametrize("seed", range(40))
def test_random_texts_give_a_verdict_or_one_line(seed: int) -> None:
    rng = random.Random(seed)
    parts = [rng.choice(WORDS) if rng.random() < 0.6 else "".join(chr(rng.randrange(32, 0x3000)) for _ in range(20))
             for _ in range(rng.randrange(1, 30))]
    text = "".join(p + rng.choice(("\n", " ", "", "\r\n", ": ")) for p in parts)
    encoding = rng.choice(("utf-8", "utf-16", "latin-1", "gb18030"))
    outcome(text.encode(encoding, errors="replace"))


@pytest.mark.parametrize("seed", range(10))
def test_random_bytes_give_a_verdict_or_one_line(seed: int) -> None:
    rng = random.Random(seed)
    outcome(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5000))))


def _read_seconds(text: str) -> float:
    start = time.process_time()  # the reader's own time: other work on a shared machine does not count
    outcome(text.encode())
    return time.process_time() - start


def linear(whole: float, quarter: float) -> bool:
    """Four times the text costs about four times as much (a quadratic reader: sixteen). A ratio of two readings
    in the same run holds on any machine, loaded or not, where a bound in seconds holds only on the one it was
    measured on."""
    return whole < 8 * quarter + 0.2


@pytest.mark.parametrize("line", [
    lambda n: "a" * n + " Found no NVIDIA driver on your system",
    lambda n: "Failed to initialize NVML: " + " " * n + "x",
    lambda n: "GPU 0: " + " " * n + "x",
    lambda n: "x (Triggered internally at " + " " * n,
    lambda n: "- " + "torch " * (n // 5),
    lambda n: "| " * (n // 2),
    lambda n: "torch==" + "1." * (n // 2),
], ids=["anchor-after", "nvml-far", "gpu-far", "triggered-far", "torch-words", "bars", "version-dots"])
def test_a_one_megabyte_line_is_read_in_linear_time(line: Callable[[int], str]) -> None:
    whole = _read_seconds("PyTorch version: 2.1.0\n" + line(1_000_000) + "\n")
    quarter = _read_seconds("PyTorch version: 2.1.0\n" + line(250_000) + "\n")
    assert linear(whole, quarter), (whole, quarter)


def test_a_report_inside_a_megabyte_log_is_read_in_linear_time() -> None:
    rng = random.Random(1)
    log = "".join(f"Epoch {e} step {s}/500 loss={rng.random():.4f} lr=3.0e-04 time=0.{rng.randrange(100, 999)}s\n"
                  for e in range(40) for s in range(500))
    text = (ROOT / "tests" / "data" / "reports" / "two-environments.txt").read_text(encoding="utf-8") + log
    assert outcome(text[:1_000_000].encode()) == outcome(text[:250_000].encode()) == "DRIVER_TOO_OLD"
    whole, quarter = _read_seconds(text[:1_000_000]), _read_seconds(text[:250_000])
    assert linear(whole, quarter), (whole, quarter)


@pytest.mark.parametrize("per_line", [1, 10])
def test_a_one_megabyte_text_is_read_in_linear_time(per_line: int) -> None:
    rng = random.Random(3)
    text = "".join(rng.choice(WORDS[:-2]) + ("\n" if i % per_line == per_line - 1 else " ") for i in range(60_000))
    whole, quarter = _read_seconds(text[:1_000_000]), _read_seconds(text[:250_000])
    assert linear(whole, quarter), (whole, quarter)


@pytest.mark.parametrize("text", [
    "GPU 7" + "7" * 5000 + ": Tesla T4\nPyTorch version: 2.1.0\nIs CUDA available: False\n",
    "RuntimeError: The NVIDIA driver on your system is too old (found version " + "9" * 5000 + ")\n",
    "NVIDIA GeForce RTX 4090 with CUDA capability sm_" + "8" * 5000 + " is not compatible\n",
])
def test_digits_beyond_the_int_limit(text: str) -> None:
    outcome(text.encode())


def test_os_alone_is_not_ok() -> None:
    assert outcome(b"OS: Ubuntu 22.04\n") == "CANNOT_TELL"


def test_damaged_dumps_never_flip_to_ok() -> None:
    text = (ROOT / "tests" / "data" / "collect_env" / "no-driver_torch2.14.1-cu130.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    for cut in range(1, len(lines), 3):
        damaged = "\n".join(lines[:cut]) + "\n" + lines[cut][: len(lines[cut]) // 2]
        assert outcome(damaged.encode()) != "OK", cut


def test_deeply_nested_json_is_one_line() -> None:
    assert outcome(b"[" * 100_000 + b"]" * 100_000) == "refused"
    doc = b'{"schema": "refenv.diagnosis", "version": 1, "facts": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    assert outcome(doc) == "refused"


@pytest.mark.parametrize(("patch", "expected"), [
    ({"input": {"notes": 5}}, None), ({"input": {"provenance": [1]}}, None),
    ({"facts": {"driver": {"nvml": {"devices": [None]}}}}, "refused"),
    ({"facts": {"torch": {"cuda": ""}}}, "refused"),
    ({"facts": {"driver": {"nvml": {"devices": [{"name": "T4", "compute_capability": "banana"}]}}}}, "refused"),
    ({"facts": {"torch": {"version": "\u0661.\u0662.\u0663"}}}, "refused"),
])
def test_wrong_types_in_a_saved_document(patch: dict[str, object], expected: str | None) -> None:
    doc: dict[str, object] = {"schema": "refenv.diagnosis", "version": 1, "facts": {}}
    doc.update(patch)
    got = outcome(json.dumps(doc).encode())
    assert expected is None or got == expected, got


_LEAVES = ("torch.version", "torch.cuda", "torch.devices", "torch.arch_list", "torch.device_count", "host.python",
           "driver.nvml.devices", "driver.nvml.driver_version", "driver.nvml.cuda_driver_version",
           "driver.libcuda.cuinit", "driver.dev_nodes", "visibility.cuda_visible_devices")
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(10 ** 25), 10 ** 25), st.text(max_size=12),
                    st.lists(st.none() | st.integers() | st.text(max_size=4) | st.just({}), max_size=3),
                    st.sampled_from(["\u0661\u0662.\u0661", "\uff11\uff12.\uff11", "12.1", "9.0", "535.54.03", ""]),
                    st.just([{"name": "T4", "compute_capability": "\u0667.\u0665"}]))


@given(st.dictionaries(st.sampled_from(_LEAVES), _VALUES, max_size=4))
def test_any_saved_document_gives_a_verdict_or_one_line(changes: dict[str, object]) -> None:
    facts: dict[str, Any] = {}
    for path, value in changes.items():
        node = facts
        *parents, leaf = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    outcome(json.dumps({"schema": "refenv.diagnosis", "version": 1, "facts": facts}).encode())


def _diagnose(args: list[str], stdin: bytes | None = None, source: str | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "harness", "diagnose", *args], input=stdin, cwd=ROOT,
                          capture_output=True, timeout=60, check=False)


def test_dev_zero_is_refused_with_exit_2() -> None:
    done = _diagnose(["--from", "/dev/zero"])
    assert done.returncode == 2 and b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1


def test_endless_stdin_is_refused_with_exit_2() -> None:
    with subprocess.Popen([sys.executable, "-m", "harness", "diagnose", "--from", "-"], cwd=ROOT,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdin is not None
        try:
            while proc.poll() is None:
                proc.stdin.write(b"Driver Version: 535.54\n" * 4096)
        except BrokenPipeError:
            pass
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and b"Traceback" not in err


def test_no_fact_exits_2_and_a_thin_report_does_not_exit_0() -> None:
    assert _diagnose(["--from", "-"], stdin=b"hello\nworld\n").returncode == 2
    assert _diagnose(["--from", "-"], stdin=b"OS: Ubuntu 22.04\n").returncode == 1
