"""The image a report runs, and the signs it runs in a container.

An image is named by a Dockerfile's `FROM`, a `docker run`/`pull`/`create`, `image:` in a compose file or a
Kubernetes spec, or 'Image:' in prose. Its tag often says the torch and CUDA it ships (`pytorch/pytorch:
1.7.1-cuda11.0-cudnn8-runtime`, `pytorch:1.13.1-py3.8.16-cuda11.7.1-devel`): those are inferred (a tag is a
name, not a measurement). A CUDA base image (`nvidia/cuda:11.2.1-devel`) names the CUDA it carries.
Inside a container, `nvidia-smi: command not found` (in any wording) says the driver's tools were not
mounted, and `/.dockerenv` says it is a container.
"""

from __future__ import annotations

import re

from harness.intake.parsed import Builder, Line

# A reference: registry/namespace/name:tag (no leading '/', which is a path, no leading digit, a port map).
_REF = r"(?P<ref>(?:[A-Za-z][\w.-]{0,60}(?::\d{2,5})?/){0,4}[A-Za-z][\w.-]{0,60}:[\w][\w.-]{0,120})"
_FROM_RE = re.compile(r"^FROM\s{1,4}(?:--platform=\S{1,40}\s{1,4})?" + _REF)
_RUN_RE = re.compile(r"\b(?:docker|podman|nerdctl|nvidia-docker)\s{1,4}(?:container\s{1,4})?(?:run|pull|create)\b"
                     r"[^|;&\n]{0,400}?(?<=\s)" + _REF + r"(?=\s|$)")
_KEY_RE = re.compile(r"(?:^|\s)(?:-\s)?(?:image|docker image|container image|镜像|イメージ|образ|imagen|imagem)\s{0,2}"
                     r"[:\uff1a]\s{0,3}[`'\"]?" + _REF, re.I)
_TORCH_TAG_RE = re.compile(r"(?:^|[-_])(?:torch|pytorch)?[-_]?(?P<v>[012]\.\d{1,2}(?:\.\d{1,2})?)(?=[-_]|$)")
_CUDA_TAG_RE = re.compile(r"(?:^|[-_])(?:cuda[-_]?(?P<c>\d{1,2}\.\d)(?:\.\d{1,3})?|cu(?P<cu>1\d{2}))(?=[-_.]|$)")
_CUDA_BASE_RE = re.compile(r"^(?P<c>\d{1,2}\.\d)(?:\.\d{1,3})?(?=[-_]|$)")
_SMI_MISSING_RE = re.compile(r"nvidia-smi\W{0,6}(?:->|=>|\u2192|:)?\s{0,3}(?:command )?not found|"
                             r"nvidia-smi[^.\n]{0,30}\b(?:is )?not (?:found|installed|available)", re.I)
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"docker|podman|nerdctl|image|from |nvidia-smi|镜像|イメージ|образ|imagen|imagem")
_DOCKERENV_RE = re.compile(r"/\.dockerenv\b")
_TOOLS_RE = re.compile("docker|podman|nerdctl")
_KEYS_RE = re.compile("image|镜像|イメージ|образ|imagen|imagem")


def read(b: Builder, lines: list[Line]) -> None:
    for line in lines:
        text = line.text
        if not text:
            continue
        low = text.lower()
        ref = (_FROM_RE.match(text) if text.startswith("FROM") else None) or (
            _RUN_RE.search(text) if _TOOLS_RE.search(low) else None) or (
            _KEY_RE.search(text) if _KEYS_RE.search(low) else None)
        if ref and "/" not in ref.group("ref").split(":", 1)[1]:
            _read_image(b, ref.group("ref"), line)
        if "nvidia-smi" in low and _SMI_MISSING_RE.search(text):
            b.put("driver.nvidia_smi.works", False, line)
            b.note(f"line {line.number}: nvidia-smi is not found where it ran: no driver tools there (in a container: "
                   "the NVIDIA runtime did not mount them)")
        if _DOCKERENV_RE.search(text):
            b.put("visibility.in_container", True, line)


def _read_image(b: Builder, ref: str, line: Line) -> None:
    """The facts an image's name and tag give: it runs in a container, and what torch and CUDA it ships."""
    name, tag = ref.rsplit(":", 1)
    if b.put("visibility.in_container", True, line):
        b.put("visibility.container_evidence", f"the image {ref}", line)
    b.detail("image", ref, line)
    repo = name.rsplit("/", 1)[-1].lower()
    if "torch" in repo and not name.lower().startswith("nvcr.io"):  # NGC tags are YY.MM releases, not torch
        torch = _TORCH_TAG_RE.search(tag)
        cuda = _CUDA_TAG_RE.search(tag)
        if torch and b.infer("torch.version", torch.group("v"), line, f"the image {ref} is named for torch "
                             f"{torch.group('v')}"):
            b.note(f"line {line.number}: the image {ref} ships torch {torch.group('v')} (by its tag)")
        if torch and cuda:
            c = cuda.group("c") or f"{int(cuda.group('cu')[:-1])}.{cuda.group('cu')[-1]}"
            if b.infer("torch.cuda", c, line, f"the image {ref} is named for a CUDA {c} build"):
                b.infer("torch.importable", True, line, f"the image {ref} ships torch")
    elif repo == "cuda":
        base = _CUDA_BASE_RE.match(tag)
        if base:
            b.detail("image_cuda", base.group("c"), line)
            b.note(f"line {line.number}: the image {ref} carries the CUDA {base.group('c')} toolkit libraries")
