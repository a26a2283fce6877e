"""Facts written as sentences: what a reporter says torch printed, in any language.

"torch.cuda.is_available() --> False", "is_available() 을 확인하여보면 분명히 TRUE로 나오는데", "Driver Version:
460.80" inside a sentence, "sets `CUDA_VISIBLE_DEVICES` to -1". Labelled values are `labelled.py`'s, REPL
answers `repl.py`'s.
"""

from __future__ import annotations

import re

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
# Prose about the variable: 'sets `CUDA_VISIBLE_DEVICES` to -1'.
_CVD_PROSE_RE = re.compile(r"CUDA_VISIBLE_DEVICES\W{0,3}\s(?:to|as)\s[`'\"]?(?P<value>-?\d{1,3}(?:,\d{1,3}){0,15})\b",
                           re.I)
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"driver version|is_a|available|visible_devices|device_count")
_COUNT_RE = re.compile(r"device_count\(\)[^A-Za-z0-9\n]{0,8}(?:(?:returns?|gives?|is|prints?)\s{1,3}){0,2}"
                       r"[`'\"]?(?P<count>\d{1,3})\b")


def read(b: Builder, lines: list[Line]) -> None:
    for line in lines:
        text = line.text
        if not text:
            continue
        low = text.lower()
        smi = _DRIVER_ANYWHERE.search(text) if "Driver Version" in text else None
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
