"""Which torch a report installs with pip: `pip install` commands, pins, and version labels anywhere.

A version label (`2.0.0+cpu`, `+cu118`, `torch-2.6.0+cpu`) says what the build is: it is stated. An install
command says what was asked for, so what it implies about the build is inferred (`implied.py` adds the CUDA
of the default wheel); a pin pip could not find (`No matching distribution found`) was not installed.
conda's commands, lists and build strings are `conda.py`'s.
"""

from __future__ import annotations

import re

from harness import compat
from harness.intake.conda import VERSION
from harness.intake.parsed import Builder, Line

# `pip install ... torch==1.3.0`, `pip3 install torch===1.3.0 -f ...`, `python -m pip install "torch>=2"`,
# `uv pip install torch`.
_PIP_RE = re.compile(r"\bpip[0-9.]{0,4}\s+install\b")
_PIN_RE = re.compile(r"(?<![\w-])torch\s{0,3}={2,3}\s{0,3}" + VERSION)
_INDEX_RE = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(?P<variant>cpu|cu\d{2,3}|rocm[\d.]{1,8})\b")
# pip's words for a requirement it could not find: nothing of that pin was installed.
_NOT_FOUND_RE = re.compile(r"No matching distribution found|Could not find a version that satisfies", re.I)
# A torch version with its label anywhere in prose: '2.0.0+cpu', '1.8.1+cu102'.
_LABEL_RE = re.compile(r"(?<![\w.])(?P<version>\d\.\d{1,2}\.\d{1,2})"
                       r"\+(?P<variant>cpu|cu\d{2,3}|rocm\d{1,2}(?:\.\d{1,2}){0,2})\b")
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"torch|pip|\+(?:cpu|cu\d|rocm)")
_AFTER = 4  # pip reports a missing distribution within a few lines of the command


def read(b: Builder, lines: list[Line]) -> None:
    for i, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        low = text.lower()
        pin = _PIN_RE.search(text) if "torch" in text else None
        if pin and any(_NOT_FOUND_RE.search(ln.text) for ln in lines[i:i + _AFTER]):
            b.detail("torch_not_found", pin.group("version"), line)
            b.note(f"line {line.number}: pip found no torch {pin.group('version')}: it was not installed")
            continue
        if "pip" in low and _PIP_RE.search(text):
            _read_pip(b, line, pin)
        elif pin and b.put("torch.version", pin.group("version"), line):  # a requirements line or prose
            b.note(f"line {line.number}: torch {pin.group('version')} is pinned")
        label = _LABEL_RE.search(text) if "+" in text else None
        if label:
            read_label(b, line, label.group("version"), label.group("variant"))


def _read_pip(b: Builder, line: Line, pin: re.Match[str] | None) -> None:
    b.clue("pip_install", line)
    index = _INDEX_RE.search(line.text)
    if index:
        b.clue(f"index_{index.group('variant')}", line)
    if pin:
        version = pin.group("version")
        if b.put("torch.version", version, line):
            b.note(f"line {line.number}: torch {version} is what `pip install` asked for")
        if index and "+" not in version:
            read_label(b, line, version, index.group("variant"))


def read_label(b: Builder, line: Line, version: str, variant: str) -> None:
    """A version label states the build: +cpu is CPU-only, +cuXYZ is CUDA X.Y."""
    b.put("torch.version", f"{version}+{variant}", line)
    if variant == "cpu":
        b.put("torch.cuda", None, line)
        b.put("torch.importable", True, line)
    elif variant.startswith("rocm"):
        b.put("torch.hip", variant[len("rocm"):], line)
        b.put("torch.cuda", None, line)
    elif variant.startswith("cu"):
        cuda = compat.variant_cuda(variant)
        if cuda and b.put("torch.cuda", cuda, line):
            b.put("torch.importable", True, line)
