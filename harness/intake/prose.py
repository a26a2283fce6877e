"""Facts written as sentences: what a reporter says torch printed, in any language.

"torch.cuda.is_available() --> False", "is_available() 을 확인하여보면 분명히 TRUE로 나오는데", "Driver Version:
460.80" inside a sentence, "sets `CUDA_VISIBLE_DEVICES` to -1". Labelled values are `labelled.py`'s, REPL
answers `repl.py`'s.
"""

from __future__ import annotations

import re

from harness.intake.installs import read_label
from harness.intake.parsed import Builder, Line

_DRIVER_ANYWHERE = re.compile(r"Driver Version:\s{0,4}([1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?)")
# 'torch.cuda.is_available() --> False', 'is_available()==False', 'CUDA available: False', 'is_avaiable()
# return `False`', 'cuda.is_available()只会返回false': the call (misspelt or not), then the first True or False in
# the same sentence, in any language and letter case.
_AVAILABLE_RE = re.compile(r"(?:\bis_a[a-z]{3,8}le\b(?:\(\))?|\bCUDA[ _]available\b)"
                           r"(?P<gap>[^.;!?\n\u3002\uff01\uff1f]{0,60}?)(?<![A-Za-z])(?P<answer>true|false)(?![A-Za-z])",
                           re.I)
_CODE_RE = re.compile(r"^(?:if|elif|while|assert|return|def|for)\b|\b(?:print|assert)\(", re.I)
_NEGATION_RE = re.compile(r"\b(?:not|never|instead of)\b|n't\b|\u4e0d|\u6ca1|\u306a\u3044|\b\u043d\u0435\b", re.I)
# A driver stated in a sentence: 'driver 575.64', 'Driver version 435.21', 'my nvidia driver is 470.82.01'.
_DRIVER_PROSE_RE = re.compile(r"\bdriver(?:\sversion)?(?:\s(?:is|was|of))?\s{0,2}[:=]?\s{0,2}v?"
                              r"([1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?)(?![\d.]*\d)", re.I)
# The answer before the call: 'gets "True" with "torch.cuda.is_available()"'.
_ANSWER_FIRST_RE = re.compile(r"\b(?:gets?|got|returns?|returned|prints?|printed|shows?|showed)\s{1,3}[\"'`\u201c]?"
                              r"(?P<answer>true|false)[\"'`\u201d]?\s{1,3}(?:with|from|for)\s{1,3}[\"'`\u201c]?"
                              r"(?:torch\.)?(?:cuda\.)?is_available", re.I)
# Two answers in one sentence about two runs: 'it printed `True` when I ran train.py but it printed `False` when I
# ran from Minibatch' (the call named on this line or one of the two before it).
_TWO_ANSWERS_RE = re.compile(r"\b(?:prints?|printed|returns?|returned|gives?|gave|gets?|got|shows?|showed|is|was)"
                             r"\s{1,3}[\"'`\u201c]?(?P<first>true|false)\b[^\n]{1,120}?\b(?:but|while|whereas)\b[^\n]{0,60}?"
                             r"\b(?P<second>true|false)\b", re.I)
# A release and its build in a sentence: 'PyTorch 2.8.0 + cu129', 'torch 2.1.0 with cu118'.
_BUILD_RE = re.compile(r"\b(?:py)?torch\s{0,2}(?:version\s{0,2})?v?(?P<version>\d{1,2}\.\d{1,2}(?:\.\d{1,3})?)\s{0,3}"
                       r"(?:\+|with|built for)\s{0,3}(?P<variant>cu\d{2,3}|cpu)\b", re.I)
# An NVIDIA GPU named in a sentence by its family and number ('GTX 1070', 'RTX 4090', 'Quadro P4000', 'GT 740M').
_GPU_RE = re.compile(r"\b(?:NVIDIA\s)?(?:GeForce\s)?(?:GTX|RTX|Quadro|TITAN|Tesla|GT(?=\s?\d{3}M?\b))"
                     r"\s?[A-Z]{0,2}\d{2,4}(?:\s?(?:Ti|SUPER|Super|Laptop GPU|Mobile|M))?\b")
# nvidia-smi failing, in the reporter's words: 'nvidia-smi was showing an error', 'nvidia-smi fails'.
_SMI_FAILS_RE = re.compile(r"nvidia-smi[`'\"]?\s{1,3}(?:(?:was|is)\s{1,3})?(?:(?:showing|shows|showed|gives|gave|"
                           r"returns|returned|throws|threw|prints|printed)\s{1,3}(?:an?|and)\s{1,3}error|fails|failed|"
                           r"(?:does ?n[o']t|did ?n[o']t) work|(?:is )?not working|command not found)", re.I)
# Prose about the variable: 'sets `CUDA_VISIBLE_DEVICES` to -1'.
_CVD_PROSE_RE = re.compile(r"CUDA_VISIBLE_DEVICES\W{0,3}\s(?:to|as)\s[`'\"]?(?P<value>-?\d{1,3}(?:,\d{1,3}){0,15})\b",
                           re.I)
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"driver|is_a|available|visible_devices|device_count|torch|gtx|rtx|quadro|titan|tesla|geforce|"
                  r"nvidia-smi")
_COUNT_RE = re.compile(r"device_count\(\)[^A-Za-z0-9\n]{0,8}(?:(?:returns?|gives?|is|prints?)\s{1,3}){0,2}"
                       r"[`'\"]?(?P<count>\d{1,3})\b")


def read(b: Builder, lines: list[Line]) -> None:
    for i, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        low = text.lower()
        if "true" in low or "false" in low:
            _answers(b, lines, i)
        build = _BUILD_RE.search(text) if "torch" in low else None
        if build and not b.known("torch.version"):
            read_label(b, line, build.group("version"), build.group("variant").lower())
            b.note(f"line {line.number}: the report names torch {build.group('version')}+"
                   f"{build.group('variant').lower()} in a sentence")
        fails = _SMI_FAILS_RE.search(text) if "nvidia-smi" in low else None
        if fails and b.put("driver.nvidia_smi.works", False, line):
            b.note(f"line {line.number}: the report says nvidia-smi fails")
        gpu = _GPU_RE.search(text) if "gpu" not in b.details else None
        if gpu:
            b.detail("gpu", gpu.group(0).strip(), line)
        smi = _DRIVER_ANYWHERE.search(text) if "Driver Version" in text else None
        if not smi and "driver" in low:
            smi = _DRIVER_PROSE_RE.search(text)
        if smi:
            b.put("driver.nvml.driver_version", smi.group(1), line)
        available = _AVAILABLE_RE.search(text) if "is_a" in low or "available" in low else None
        if available and not _CODE_RE.search(text[:available.start()] + available.group("gap")) and not (
                _NEGATION_RE.search(available.group("gap"))):
            b.put("torch.is_available", available.group("answer").lower() == "true", line)
        cvd = _CVD_PROSE_RE.search(text) if "visible_devices" in low else None
        if cvd and b.put("visibility.cuda_visible_devices", cvd.group("value"), line):
            b.note(f"line {line.number}: CUDA_VISIBLE_DEVICES is set to {cvd.group('value')!r}, as the report says")
        count = _COUNT_RE.search(text) if "device_count" in text else None
        if count:
            b.put("torch.device_count", int(count.group("count")), line)


def _answers(b: Builder, lines: list[Line], i: int) -> None:
    """is_available()'s answer said before the call, or two answers of two runs in one sentence."""
    line = lines[i]
    first = _ANSWER_FIRST_RE.search(line.text)
    if first:
        b.put("torch.is_available", first.group("answer").lower() == "true", line)
        return
    two = _TWO_ANSWERS_RE.search(line.text)
    near = " ".join(ln.text for ln in lines[max(0, i - 2):i + 1]).lower()
    if two and "is_a" in near and two.group("first").lower() != two.group("second").lower():
        b.put("torch.is_available", two.group("first").lower() == "true", line)
        b.put("torch.is_available", two.group("second").lower() == "true", line)  # kept as a conflict
