"""Which torch a report installs: pip and conda commands, `pip list`/`pip freeze`/`conda list` rows, labels.

A version label (`2.0.0+cpu`, `+cu118`) and a conda build string (`py3.7_cpu_0`, `py3.8_cuda11.3_cudnn8_0`,
`cuda100py37h...`) say what the build is: they are stated. An install command says what was asked for, so
what it implies about the build is inferred (`inference.py` adds the CUDA of the default wheel).
"""

from __future__ import annotations

import re

from harness import compat
from harness.intake.parsed import Builder, Line

_VERSION = r"(?P<version>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:(?:a|b|rc|\.dev|\.post)\d{1,12})?(?:\+[A-Za-z0-9.]{1,24})?)"
# `pip install ... torch==1.3.0`, `pip3 install torch===1.3.0 -f ...`, `python -m pip install "torch>=2"`.
_PIP_RE = re.compile(r"\bpip[0-9.]{0,4}\s+install\b")
_PIN_RE = re.compile(r"(?<![\w-])torch\s{0,3}={2,3}\s{0,3}" + _VERSION)
_INDEX_RE = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(?P<variant>cpu|cu\d{2,3}|rocm[\d.]{1,8})\b")
_CONDA_RE = re.compile(r"\b(?:conda|mamba|micromamba)\s+install\b")
_CONDA_CUDA_RE = re.compile(r"\b(?P<pkg>cudatoolkit|pytorch-cuda)\s{0,2}=\s{0,2}(?P<cuda>\d{1,2}\.\d{1,2})")
# `conda list` rows: name, version, build string, channel; `pip list` rows: name, version.
_ROW_RE = re.compile(r"^(?P<name>pytorch|torch)\s{1,40}" + _VERSION + r"(?:\s{1,40}(?P<build>[A-Za-z0-9_.]{1,80}))?")
# A torch version with its label anywhere in prose: '2.0.0+cpu', '1.8.1+cu102'.
_LABEL_RE = re.compile(r"(?<![\w.])(?P<version>\d\.\d{1,2}\.\d{1,2})"
                       r"\+(?P<variant>cpu|cu\d{2,3}|rocm\d{1,2}(?:\.\d{1,2}){0,2})\b")
_BUILD_CUDA_RE = re.compile(r"cuda(?P<cuda>\d{1,2}\.\d{1,2}|\d{3})")


def read(b: Builder, lines: list[Line]) -> None:
    for line in lines:
        text = line.text
        if not text:
            continue
        if _PIP_RE.search(text):
            _read_pip(b, line)
        else:
            pin = _PIN_RE.search(text)  # a requirements line or prose: 'torch==1.5.1'
            if pin and b.put("torch.version", pin.group("version"), line):
                b.note(f"line {line.number}: torch {pin.group('version')} is pinned")
        if _CONDA_RE.search(text):
            _read_conda_command(b, line)
        row = _ROW_RE.match(text)
        if row:
            _read_row(b, line, row)
        label = _LABEL_RE.search(text)
        if label:
            _read_label(b, line, label.group("version"), label.group("variant"))


def _read_pip(b: Builder, line: Line) -> None:
    b.clue("pip_install", line)
    pin = _PIN_RE.search(line.text)
    index = _INDEX_RE.search(line.text)
    if index:
        b.clue(f"index_{index.group('variant')}", line)
    if pin:
        version = pin.group("version")
        if b.put("torch.version", version, line):
            b.note(f"line {line.number}: torch {version} is what `pip install` asked for")
        if index and "+" not in version:
            _read_label(b, line, version, index.group("variant"))


def _read_conda_command(b: Builder, line: Line) -> None:
    text = line.text
    b.clue("conda_install", line)
    if re.search(r"(?<![\w-])cpuonly\b", text):
        b.clue("conda_cpuonly", line)
        b.infer("torch.cuda", None, line, "conda's cpuonly package selects a CPU-only pytorch build")
        b.note(f"line {line.number}: `conda install ... cpuonly` installs a CPU-only torch")
    cuda = _CONDA_CUDA_RE.search(text)
    if cuda:
        b.detail("conda_cuda_requested", f"{cuda.group('pkg')}={cuda.group('cuda')}", line)
    if re.search(r"-c\s{1,3}pytorch-nightly\b", text):
        b.clue("nightly", line)


def _read_row(b: Builder, line: Line, row: re.Match[str]) -> None:
    version, build = row.group("version"), row.group("build") or ""
    if b.put("torch.version", version, line):
        b.note(f"line {line.number}: a package list names {row.group('name')} {version}"
               + (f" (build {build})" if build else ""))
    if "+" in version:
        _read_label(b, line, version.split("+")[0], version.split("+", 1)[1])
        return
    if not build:
        return
    if "cpu" in build.split("_") or build.startswith("cpu") or "[cpuonly]" in line.text:
        if b.put("torch.cuda", None, line):
            b.put("torch.importable", True, line)
            b.note(f"line {line.number}: conda build string {build}: a CPU-only pytorch")
        return
    m = _BUILD_CUDA_RE.search(build)
    if m:
        digits = m.group("cuda")
        cuda = digits if "." in digits else f"{int(digits[:-1])}.{digits[-1]}"
        if b.put("torch.cuda", cuda, line):
            b.put("torch.importable", True, line)
            b.note(f"line {line.number}: conda build string {build}: a CUDA {cuda} build of pytorch")


def _read_label(b: Builder, line: Line, version: str, variant: str) -> None:
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
