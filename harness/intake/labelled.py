"""Facts written as labelled values: issue-template bullets, `key: value` lines and issue-form headings,
in any spelling and language (what each label names is `labels.field_of`'s).

"- PyTorch Version: 2.2.0+cu121", "Driver Version: 460.80", "Python版本：3.10.11", "Версия драйвера: 535.54",
"### Pytorch version" with "2.7.0+cu128" under it. Only values of a known shape are taken (a driver is a
three-digit branch with a minor, a version starts with digits), so prose around them cannot become a fact.
"""

from __future__ import annotations

import re

from harness.intake import labels
from harness.intake.implied import capability_of
from harness.intake.parsed import Builder, Line

# "- Key: value", "* Key = value", "1. Key：value", "Key is value", "Key是value" (the key is short).
_KEY_VALUE_RE = re.compile(
    r"^(?:[-*+\u2022]\s{0,3}|\d{1,2}[.)]\s{0,3})?(?:\[[ xX]\]\s)?(?P<key>[^:\uff1a=]{1,60}?)\s{0,3}"
    r"(?:[:\uff1a=]|\bis\b|\u662f(?!\u5426)|\u4e3a)\s{0,3}(?P<value>\S.{0,200})")
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"[:\uff1a=]|\bis\b|\u662f|\u4e3a|^#{2,4} ", re.M)
_SEP_RE = re.compile(r"[:\uff1a] ")
_LABEL_WORDS = 5   # a label is at most this many words ('CUDA used to build PyTorch')
_MAX_PAIRS = 40    # a line is not read for more labelled values than a dump has fields
_HEADING_RE = re.compile(r"^#{2,4}\s{1,3}(?P<key>[^#]{1,60}?)\s{0,3}$")
GPU_NAME = re.compile(r"(?:NVIDIA\s)?(?:GeForce|Quadro|Tesla|TITAN|RTX|GTX|Jetson|GH\d{3}|GB\d{3}|[AHLVTPKB]\d{1,3}\b)"
                      r"[\w ()-]{0,40}")
TORCH_VALUE = re.compile(r"(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?(?:\.dev\d{1,12}|a0|rc\d)?(?:\+[a-z0-9.]{1,20})?)")
# A Linux or Windows driver number: a three-digit branch, then one or two parts ('460.80', '535.183.01').
DRIVER_VALUE = re.compile(r"(?<![\d.])([1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?)(?![\d.]*\d)")
_PYTHON_VALUE = re.compile(r"(3\.\d{1,2}(?:\.\d{1,2})?|2\.7(?:\.\d{1,2})?)")
_CUDA_VALUE = re.compile(r"^(\d{1,2}\.\d{1,2})")
_NOT_COLLECTED = ("none", "could not collect", "no cuda", "n/a", "not detected")
_SYSTEMS = (("Windows", ("win",)), ("Darwin", ("mac", "darwin")),
            ("Linux", ("linux", "ubuntu", "debian", "centos", "fedora", "rhel", "suse", "arch", "rocky", "alma", "mint",
                       "pop!_os", "pop-os")))


def read(b: Builder, lines: list[Line]) -> None:
    for i, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        heading = _HEADING_RE.match(text)
        if heading:
            value = next((ln for ln in lines[i + 1:i + 4] if ln.text), None)
            field = labels.field_of(heading.group("key"))
            if field and value is not None and not value.text.startswith("#"):
                _take(b, field, value.text, value)
            continue
        kv = _KEY_VALUE_RE.match(text)
        if kv:
            field = labels.field_of(kv.group("key"))
            if field:
                _take(b, field, kv.group("value"), line)
        if text.count(": ") > 1:
            for field, said in _more_pairs(text):
                _take(b, field, said, line)


def _more_pairs(text: str) -> list[tuple[str, str]]:
    """The labelled values after the first in a line that holds several ('OS: Ubuntu 18.04 driver: 410.48',
    a dump whose lines a paste joined): a label is the last words before a ': ' that name a field."""
    seps = [m.start() for m in _SEP_RE.finditer(text)]
    pairs = []
    for k, at in enumerate(seps[1:], start=1):
        words = text[seps[k - 1] + 2:at].split()
        end = seps[k + 1] if k + 1 < len(seps) else len(text)
        for n in range(min(_LABEL_WORDS, len(words)), 0, -1):
            field = labels.field_of(" ".join(words[-n:]))
            if field:
                pairs.append((field, text[at + 2:end]))
                break
    return pairs[:_MAX_PAIRS]


def _take(b: Builder, field: str, value: str, line: Line) -> None:
    """The fact a labelled value states, when the value has the shape of that fact."""
    plain = value.strip("`'\" *")
    if field == "torch_version":
        m = TORCH_VALUE.match(plain)
        if m and b.put("torch.version", m.group(1), line):
            b.note(f"line {line.number}: torch {m.group(1)}, as the report states it")
    elif field == "cuda_built":
        cuda = _CUDA_VALUE.match(plain)
        if cuda and b.put("torch.cuda", cuda.group(1), line):
            b.put("torch.importable", True, line)
        elif plain.lower() in _NOT_COLLECTED and b.get("torch.version") and b.put("torch.cuda", None, line):
            b.put("torch.importable", True, line)
            b.note(f"line {line.number}: torch was built without CUDA ('{plain}')")
    elif field == "cuda_available":
        answer = labels.yes_no(plain.split()[0] if plain.split() else "")
        if answer is not None:
            b.put("torch.is_available", answer, line)
    elif field == "driver":
        m = DRIVER_VALUE.search(value)
        if m:
            b.put("driver.nvml.driver_version", m.group(1), line)
    elif field == "python":
        m = _PYTHON_VALUE.search(plain)
        if m:
            b.put("host.python", m.group(1), line)
    elif field == "gpus":
        _gpu(b, value, line)
    elif field in ("os", "python_platform"):
        low = plain.lower()
        system = next((name for name, words in _SYSTEMS if any(w in low for w in words)), None)
        if system:
            b.put("host.os", system, line)
            b.detail("os", plain, line)
    elif field == "nvcc":
        m = _CUDA_VALUE.match(plain)
        if m:
            b.detail("nvcc", plain, line)


def _gpu(b: Builder, value: str, line: Line) -> None:
    m = GPU_NAME.search(value) if "gpu" not in b.details else None  # the first GPU named is the one kept
    if not m:
        return
    name = m.group(0).strip()
    b.detail("gpu", name, line)
    cc = capability_of(name)
    if cc:
        b.note(f"line {line.number}: the report names the GPU {name}, of compute capability {cc} (inferred "
               "from the GPU tables); the driver's own list is not in the report")
