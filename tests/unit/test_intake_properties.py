"""Properties of the report reader under generated input (hypothesis): random text, fragments of real
report shapes, binary, mixed encodings. Each gives a verdict with valid JSON or a one-line ReportError."""

from __future__ import annotations

import json
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.classify import classify
from harness.intake import ReportError, load_report
from harness.intake.assess import assess_report
from harness.schema import CANNOT_TELL, OTHER, VERDICTS

FRAGMENTS = st.sampled_from([
    "PyTorch version: 2.1.0", "Is CUDA available: False", "Driver Version: 535.54.03", "torch==1.3.0",
    "pip install torch==2.3.1 --index-url https://download.pytorch.org/whl/cu118", "conda install pytorch cpuonly",
    "pytorch 1.12.1 py3.9_cpu_0 pytorch", "| NVIDIA-SMI 470.82 Driver Version: 470.82 CUDA Version: 11.4 |",
    "|   0  Tesla T4   Off  | 00000000:00:04.0 Off |", "GPU 0: Tesla T4 (UUID: GPU-0123abcd)",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
    "UserWarning: CUDA initialization: Found no NVIDIA driver on your system.",
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
    "THCudaCheck FAIL file=x line=1 error=802 : system not yet initialized", ">>> torch.__version__", "'2.0.1'",
    ">>> torch.cuda.is_available()", "False", "docker run --gpus all img", "export CUDA_VISIBLE_DEVICES=1",
    "NVRM: API mismatch: the client has the version 550.1, but", "NVRM: Xid (PCI:0000:01:00): 79, pid=1",
    "- PyTorch Version: 2.2.0+cu121", "- GPU models and configuration: RTX 3090", "WSL 1", "MacBook M2",
    "C:\\Users\\me\\envs", "\u9a71\u52a8\u7248\u672c: 460.80", "capabilities: [utility]", "#SBATCH -p gpu",
])
LINES = st.one_of(FRAGMENTS, st.text(max_size=60))
REPORTS = st.lists(LINES, min_size=1, max_size=25).map("\n".join)


def judged(data: bytes) -> str:
    try:
        report = load_report(data)
    except ReportError as exc:
        assert "\n" not in str(exc) and str(exc)
        return "refused"
    a = assess_report(report.facts, classify(report.facts), report.provenance, report.inferred, report.clues)
    assert a.verdict in (*VERDICTS, OTHER, CANNOT_TELL)
    assert a.confidence in ("high", "medium", "low")
    if a.verdict == "OK":
        assert report.facts["torch"].get("is_available") is True or (report.facts["torch"].get("device_count") or 0) > 0
    json.dumps({"facts": report.facts, "assessment": a.to_dict(), "inferred": report.inferred}, allow_nan=False)
    for path, (number, _) in report.provenance.items():
        assert number >= 1, path
    return a.verdict


@given(REPORTS, st.sampled_from(["utf-8", "utf-16", "gb18030", "cp1251", "latin-1"]))
def test_any_report_text_in_any_encoding(text: str, encoding: str) -> None:
    judged(text.encode(encoding, errors="replace"))


@given(st.binary(max_size=4096))
def test_any_bytes(data: bytes) -> None:
    judged(data)


@given(REPORTS)
def test_an_encoding_does_not_change_the_verdict(text: str) -> None:
    assert judged(text.encode("utf-8")) == judged(text.encode("utf-16"))


def _seconds(fragment: str, per_line: int, size: int) -> float:
    text = ((" ".join([fragment] * per_line) + "\n") * (size // (len(fragment) * per_line + 1) + 1))[:size]
    start = time.process_time()  # the reader's own time: other work on a shared machine does not count
    judged(text.encode())
    return time.process_time() - start


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FRAGMENTS, st.integers(min_value=1, max_value=3))
def test_a_megabyte_of_repeated_fragments_in_linear_time(fragment: str, per_line: int) -> None:
    quarter = _seconds(fragment, per_line, 250_000)
    whole = _seconds(fragment, per_line, 1_000_000)
    # Linear: four times the text costs about four times as much (a quadratic reader: sixteen). A ratio of two
    # readings in the same run holds on any machine, where a bound in seconds assumes the one it was measured on.
    assert whole < 8 * quarter + 0.2, (whole, quarter)
