"""The normalisation keeps every fact and the line it names (hypothesis): a report rewritten the way pastes
are (quoted, indented, fenced, numbered, tabs, CRLF, re-wrapped) gives the same facts, each naming the
line of the rewritten text that its original line became. Read as one environment: which of several a
report's answer is about is several.py's, tested on fixtures."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.intake import ReportError
from harness.intake.anytext import read_lines
from harness.intake.normal import normalise

SHORT = [
    "PyTorch version: 2.1.0+cu121", "Is CUDA available: False", "Driver Version: 535.54.03", "torch==1.13.1",
    "- Python version: 3.10.12", "- GPU: NVIDIA GeForce RTX 3090", "export CUDA_VISIBLE_DEVICES=1",
    "pytorch 1.12.1 py3.9_cpu_0 pytorch", ">>> torch.cuda.is_available()", "False", "OS: Ubuntu 22.04",
    "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |",
]
LONG = [
    "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please "
    "update your GPU driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch "
    "version that has been compiled with your version of the CUDA driver.",
    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed "
    "a driver from http://www.nvidia.com/Download/index.aspx and then try again with the same command line.",
    "I installed it with pip install torch==2.3.1 --index-url https://download.pytorch.org/whl/cu118 and then "
    "ran the training script again from the same shell on the same machine, which still fails the same way.",
]
PROSE = ["Any help is welcome.", "It worked last week.", "", "Thanks!"]
Rewrite = Callable[[list[str]], tuple[str, dict[int, list[int]]]]


def _each(lines: list[str], f: Callable[[str], str], first: int = 1) -> tuple[str, dict[int, list[int]]]:
    return "\n".join(f(line) for line in lines), {i + 1: [i + first] for i in range(len(lines))}


REWRITES: dict[str, Rewrite] = {
    "as-is": lambda lines: _each(lines, lambda s: s),
    "quoted": lambda lines: _each(lines, lambda s: "> " + s),
    "indented": lambda lines: _each(lines, lambda s: "    " + s if s else s),
    "tabs": lambda lines: _each(lines, lambda s: s.replace("  ", "\t")),
    "numbered": lambda lines: ("\n".join(f"{i + 1:3} | {s}" for i, s in enumerate(lines)),
                               {i + 1: [i + 1] for i in range(len(lines))}),
    "fenced": lambda lines: ("```\n" + "\n".join(lines) + "\n```", {i + 1: [i + 2] for i in range(len(lines))}),
    "crlf": lambda lines: ("\r\n".join(lines), {i + 1: [i + 1] for i in range(len(lines))}),
}


def wrapped(width: int) -> Rewrite:
    def rewrite(lines: list[str]) -> tuple[str, dict[int, list[int]]]:
        out: list[str] = []
        where: dict[int, list[int]] = {}
        for i, line in enumerate(lines):
            pieces = textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) if len(
                line) > width else [line]
            where[i + 1] = list(range(len(out) + 1, len(out) + len(pieces) + 1))
            out.extend(pieces or [""])
        return "\n".join(out), where
    return rewrite


def stated(report: Any) -> dict[str, tuple[int, Any]]:
    """Each stated fact's line and value."""
    out = {}
    for path, (number, _) in report.provenance.items():
        if path in report.inferred or path.startswith("details."):
            continue
        node = report.facts
        for key in path.split("."):
            node = node[int(key)] if isinstance(node, list) else node.get(key)
        out[path] = (number, node)
    return out


REPORTS = st.lists(st.sampled_from(SHORT + PROSE), min_size=1, max_size=12).flatmap(
    lambda short: st.lists(st.sampled_from(LONG), min_size=2, max_size=3).flatmap(
        lambda long: st.permutations(short + long)))


@settings(max_examples=40, deadline=None)
@given(REPORTS, st.one_of(st.sampled_from(sorted(REWRITES)), st.integers(min_value=45, max_value=110)))
def test_every_fact_keeps_its_value_and_names_the_line_it_came_from(lines: list[str], how: str | int) -> None:
    try:
        before = read_lines(normalise("\n".join(lines)))
    except ReportError:
        return
    rewrite = wrapped(how) if isinstance(how, int) else REWRITES[how]
    text, where = rewrite(lines)
    after = read_lines(normalise(text))
    pasted = text.replace("\r\n", "\n").split("\n")
    was, now = stated(before), stated(after)
    for path, (number, value) in was.items():
        assert path in now, f"{how}: {path} lost"
        new_number, new_value = now[path]
        assert new_value == value, f"{how}: {path}"
        assert new_number in where[number], f"{how}: {path} names line {new_number}, not one of {where[number]}"
        assert after.provenance[path][1] == pasted[new_number - 1].rstrip()
