"""Which pytorch conda installed or plans to: `conda install` commands, `conda list` rows, package specs
(`pytorch=1.9.0=py3.8_cpu_0`), the solver's plan and download lines (`pytorch/linux-64::pytorch-1.10.0-py3.6_cpu_0`,
`pytorch-1.10.0-py3.9_cuda11.3_cudnn8.2.0_0.tar.bz2`, `pytorch-1.10.0 | py3.9_cuda11.3_...`) and the
`pytorch-mutex`/`cpuonly` packages that pin a variant.

A build string says what the build is, so what it says is stated: `py3.7_cpu_0`, `cpu_py39h...`
(conda-forge) and `cpu` are CPU-only; `py3.8_cuda11.3_cudnn8_0`, `cuda100py37h...`, `cuda112py39h...` and
`cuda120_py310h...` name their CUDA. An install command says only what was asked for (a clue).
"""

from __future__ import annotations

import re

from harness.intake.parsed import Builder, Line

VERSION = r"(?P<version>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:(?:a|b|rc|\.dev|\.post)\d{1,12})?(?:\+[A-Za-z0-9.]{1,24})?)"
_COMMAND_RE = re.compile(r"\b(?:conda|mamba|micromamba)\s{1,4}(?:install|create|env\s{1,4}create)\b|"
                         r"\b(?:using|with|via|through) (?:conda|mamba) to install\b|\binstall\w{0,3} (?:it |them |"
                         r"\w{1,20} )?(?:with|via|using|through) (?:conda|mamba)\b", re.I)
_REQUESTED_CUDA_RE = re.compile(r"\b(?P<pkg>cudatoolkit|pytorch-cuda|cuda-version)\s{0,2}=\s{0,2}"
                                r"(?P<cuda>\d{1,2}\.\d{1,2})")
# `conda list` rows: name, version, build string, channel (`pip list` rows: name, version); a row may sit
# inside a line when a paste joined the table's lines.
_ROW_RE = re.compile(r"(?:^|(?<=\s))(?P<name>pytorch|torch)\s{1,40}" + VERSION
                     + r"(?:\s{1,40}(?P<build>[A-Za-z0-9_.]{1,80}))?(?!\S)")
# A spec, a plan line or a package file: the build string follows the version.
_SPEC_RE = re.compile(r"(?<![\w-])(?:pytorch::)?pytorch\s{0,2}={1,2}\s{0,2}" + VERSION
                      + r"=(?P<build>[A-Za-z0-9_.]{1,80})")
_FILE_RE = re.compile(r"(?<![\w-])pytorch-(?P<version>\d{1,3}\.\d{1,3}(?:\.\d{1,3})?)(?:-|\s{0,40}\|\s{0,4})"
                      r"(?P<build>[A-Za-z0-9_.]{1,80})")
_PACKAGE_SUFFIX_RE = re.compile(r"\.(?:tar\.bz2|tar|conda)$")
# pytorch-mutex (the pytorch channel) and _pytorch_select (Anaconda's defaults: build cpu_0 or gpu_0) pin the variant.
_MUTEX_RE = re.compile(r"(?:^|(?<=\s))(?:pytorch-mutex|_pytorch_select)\s{1,40}\d[\d.]{0,8}\s{1,40}"
                       r"(?P<kind>cpu|cuda|gpu)(?![a-z])")
_CPUONLY_RE = re.compile(r"(?:^|(?<=\s))cpuonly\s{1,40}\d")
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"conda|mamba|torch|cpuonly")
BUILD_CUDA_RE = re.compile(r"cuda_?(?P<cuda>\d{1,2}\.\d{1,2}|\d{3,4})(?!\d)")


def build_cuda(build: str) -> tuple[bool, str | None] | None:
    """(known, CUDA or None for a CPU build) of a conda build string; None when it says neither."""
    parts = build.lower().split("_")
    if "cpu" in parts or build.lower().startswith("cpu"):
        return True, None
    m = BUILD_CUDA_RE.search(build.lower())
    if not m:
        return None
    digits = m.group("cuda")
    return True, digits if "." in digits else f"{int(digits[:-1])}.{digits[-1]}"


def read(b: Builder, lines: list[Line]) -> None:
    for line in lines:
        text = line.text
        if not text:
            continue
        low = text.lower()
        if ("conda" in low or "mamba" in low) and _COMMAND_RE.search(text):
            _read_command(b, line)
        if "torch" not in low and "cpuonly" not in low:
            continue
        found = _ROW_RE.search(text) or _SPEC_RE.search(text) or _FILE_RE.search(text)
        if found:
            build = _PACKAGE_SUFFIX_RE.sub("", found.group("build") or "")
            read_build(b, line, found.group("version"), build, "[cpuonly]" in text)
        mutex = _MUTEX_RE.search(text)
        if mutex or _CPUONLY_RE.search(text):
            cpu = _CPUONLY_RE.search(text) is not None or (mutex is not None and mutex.group("kind") == "cpu")
            b.clue("conda_cpuonly" if cpu else "conda_cuda_variant", line)
            b.note(f"line {line.number}: conda pins a {'CPU-only' if cpu else 'CUDA'} pytorch ({text})")


def _read_command(b: Builder, line: Line) -> None:
    text = line.text
    b.clue("conda_install", line)
    if re.search(r"(?<![\w-])cpuonly\b", text):
        b.clue("conda_cpuonly", line)
        b.infer("torch.cuda", None, line, "conda's cpuonly package selects a CPU-only pytorch build")
        b.note(f"line {line.number}: `conda install ... cpuonly` installs a CPU-only torch")
    cuda = _REQUESTED_CUDA_RE.search(text)
    if cuda:
        b.detail("conda_cuda_requested", f"{cuda.group('pkg')}={cuda.group('cuda')}", line)
    if re.search(r"-c\s{1,3}pytorch-nightly\b", text):
        b.clue("nightly", line)
    if re.search(r"-c\s{1,3}conda-forge\b", text):
        b.clue("conda_forge", line)


def read_build(b: Builder, line: Line, version: str, build: str, cpuonly: bool = False) -> None:
    """A package listed or planned with its version and build string."""
    if build.isupper():
        # conda's build strings are lower case ('py3.8_cpu_0', 'cuda112py39h...'): 'torch 1.7.1 CPU' is a
        # framework's banner naming the device it chose (YOLOv5's select_device), not how torch was built.
        build = ""
    if b.put("torch.version", version, line):
        b.note(f"line {line.number}: conda names pytorch {version}" + (f" (build {build})" if build else ""))
    said = build_cuda(build) if build else None
    if cpuonly:
        said = (True, None)
    if said is None or "+" in version:
        return
    _, cuda = said
    if b.put("torch.cuda", cuda, line):
        b.put("torch.importable", True, line)
        b.note(f"line {line.number}: conda build string {build or '[cpuonly]'}: "
               + ("a CPU-only pytorch" if cuda is None else f"a CUDA {cuda} build of pytorch"))
