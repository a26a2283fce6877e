"""Facts written as prose: issue-template bullets, `key: value` lines in any language, REPL answers.

"- PyTorch Version: 2.2.0+cu121", "Driver Version: 460.80", "Python版本：3.10.11", ">>> torch.__version__" then
"'2.0.1'", "torch.cuda.is_available() --> False". Only values of a known shape are taken (a driver is a
three-digit branch with a minor, a version starts with digits), so prose around them cannot become a fact.
"""

from __future__ import annotations

import re

from harness.gpus.names import capability_of
from harness.intake.parsed import Builder, Line

# "- Key: value", "* Key = value", "1. Key：value", "Key is value", "Key是value" (the key is short).
_KEY_VALUE_RE = re.compile(
    r"^(?:[-*+\u2022]\s{0,3}|\d{1,2}[.)]\s{0,3})?(?P<key>[^:\uff1a=]{1,40}?)\s{0,3}(?:[:\uff1a=]|\bis\b|\u662f|\u4e3a)"
    r"\s{0,3}(?P<value>\S.{0,200})")
_TORCH_KEY = re.compile(r"(?:py)?torch(?:\s{0,2}(?:version|\u7248\u672c))?$", re.I)
_DRIVER_KEY = re.compile(r"driver(?:\s{0,2}version)?$|\u9a71\u52a8", re.I)
_PYTHON_KEY = re.compile(r"python(?:\s{0,2}(?:version|\u7248\u672c))?$", re.I)
_GPU_KEY = re.compile(r"^(?:gpu|gpus|gpu models?(?: and configuration)?|graphics card|video card|\u663e\u5361"
                      r"(?:\u578b\u53f7)?)$", re.I)
_GPU_NAME = re.compile(r"(?:NVIDIA\s)?(?:GeForce|Quadro|Tesla|TITAN|RTX|GTX|[AHLVTPK]\d{1,3}\b)[\w ()-]{0,40}")
_OS_KEY = re.compile(r"^(?:os|platform|operating system|system|\u7cfb\u7edf|\u64cd\u4f5c\u7cfb\u7edf)$", re.I)
_TORCH_VALUE = re.compile(r"(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?(?:\.dev\d{1,12}|a0|rc\d)?(?:\+[a-z0-9.]{1,20})?)")
# A Linux or Windows driver number: a three-digit branch, then one or two parts ('460.80', '535.183.01').
DRIVER_VALUE = re.compile(r"(?<![\d.])([1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?)(?![\d.]*\d)")
_DRIVER_ANYWHERE = re.compile(r"Driver Version:\s{0,4}([1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?)")
_PYTHON_VALUE = re.compile(r"(3\.\d{1,2}(?:\.\d{1,2})?|2\.7(?:\.\d{1,2})?)")
_REPL_VERSION_RE = re.compile(r"torch\.(?P<what>__version__|version\.cuda)\)?\s*$")
_QUOTED_RE = re.compile(r"^(?:Out\[\d{1,5}\]:\s*)?['\"]?(?P<value>[\w.+]{1,40})['\"]?$")
# 'torch.cuda.is_available() --> False', 'is_available()==False', 'CUDA available: False'.
_AVAILABLE_RE = re.compile(r"(?:is_available\(\)|CUDA available)[^A-Za-z0-9\n]{0,8}(?:(?:returns?|gives?|prints?|"
                           r"shows?|is|I get|get|still|always)\s{1,3}){0,3}[`'\"]?(?P<answer>True|False)\b")
# Prose about the variable: 'sets `CUDA_VISIBLE_DEVICES` to -1'.
_CVD_PROSE_RE = re.compile(r"CUDA_VISIBLE_DEVICES\W{0,3}\s(?:to|as)\s[`'\"]?(?P<value>-?\d{1,3}(?:,\d{1,3}){0,15})\b")
_COUNT_RE = re.compile(r"device_count\(\)[^A-Za-z0-9\n]{0,8}(?:(?:returns?|gives?|is|prints?)\s{1,3}){0,2}"
                       r"[`'\"]?(?P<count>\d{1,3})\b")


def read(b: Builder, lines: list[Line]) -> None:
    for i, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        kv = _KEY_VALUE_RE.match(text)
        if kv:
            _read_key_value(b, line, kv.group("key").strip(), kv.group("value"))
        smi = _DRIVER_ANYWHERE.search(text)
        if smi:
            b.put("driver.nvml.driver_version", smi.group(1), line)
        _read_repl(b, lines, i)
        available = _AVAILABLE_RE.search(text)
        if available and "print(" not in text[available.end():]:
            b.put("torch.is_available", available.group("answer") == "True", line)
        cvd = _CVD_PROSE_RE.search(text)
        if cvd and b.put("visibility.cuda_visible_devices", cvd.group("value"), line):
            b.note(f"line {line.number}: CUDA_VISIBLE_DEVICES is set to {cvd.group('value')!r}, as the report says")
        count = _COUNT_RE.search(text)
        if count:
            b.put("torch.device_count", int(count.group("count")), line)


def _read_key_value(b: Builder, line: Line, key: str, value: str) -> None:
    key = key.strip("`*_ ")
    if _TORCH_KEY.search(key):
        m = _TORCH_VALUE.match(value.strip("`'\" "))
        if m and b.put("torch.version", m.group(1), line):
            b.note(f"line {line.number}: torch {m.group(1)}, as the report states it")
    elif _DRIVER_KEY.search(key):
        m = DRIVER_VALUE.search(value)
        if m:
            b.put("driver.nvml.driver_version", m.group(1), line)
    elif _PYTHON_KEY.search(key):
        m = _PYTHON_VALUE.match(value.strip())
        if m:
            b.put("host.python", m.group(1), line)
    elif _GPU_KEY.search(key):
        m = _GPU_NAME.search(value)
        if m:
            name = m.group(0).strip()
            b.detail("gpu", name, line)
            cc = capability_of(name)
            if cc:
                b.note(f"line {line.number}: the report names the GPU {name}, of compute capability {cc} (inferred "
                       "from the GPU tables); the driver's own list is not in the report")
    elif _OS_KEY.search(key):
        low = value.lower()
        system = ("Windows" if "win" in low else "Darwin" if ("mac" in low or "darwin" in low)
                  else "Linux" if any(w in low for w in ("linux", "ubuntu", "debian", "centos", "fedora", "rhel",
                                                          "suse", "arch", "rocky", "alma", "mint")) else None)
        if system:
            b.put("host.os", system, line)
            b.detail("os", value.strip(), line)


def _read_repl(b: Builder, lines: list[Line], i: int) -> None:
    """`>>> torch.__version__` or `print(torch.version.cuda)` and the answer on the next line."""
    m = _REPL_VERSION_RE.search(lines[i].text)
    if not m:
        return
    answer = next((ln for ln in lines[i + 1:i + 3] if ln.text), None)
    a = _QUOTED_RE.match(answer.text) if answer else None
    if answer is None or a is None:
        return
    value = a.group("value")
    if m.group("what") == "__version__" and value[:1].isdigit():
        b.put("torch.version", value, answer)
        b.put("torch.importable", True, answer)
    elif m.group("what") == "version.cuda":
        if value == "None":
            b.put("torch.cuda", None, answer)
            b.put("torch.importable", True, answer)
        elif re.fullmatch(r"\d{1,2}\.\d{1,2}", value):
            b.put("torch.cuda", value, answer)
            b.put("torch.importable", True, answer)
