"""What a FROM image is known to hold, from its name alone or from its inspect (pure).

Three families name their stack in the tag: `nvidia/cuda:X.Y.Z-FLAVOUR-OS` (a CUDA toolkit or runtime, no
torch), `pytorch/pytorch:T-cudaX.Y-cudnnN-FLAVOUR` (torch T built for CUDA X.Y), and NGC's
`nvcr.io/nvidia/pytorch:YY.MM-py3` (a release of NVIDIA's framework support matrix, refenv/data/ngc_pytorch.json).
Any other image is read from its inspect where an engine has it (refenv's own labels, the environment variables
those images set: CUDA_VERSION, PYTORCH_VERSION, NVIDIA_PYTORCH_VERSION), else is plain: its torch, if any, comes
from the install lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from harness import compat
from refenv import paths
from refenv.check.facts import Base

NGC_FILE = "ngc_pytorch.json"
_CUDA_TAG = re.compile(r"(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?)-(.+)")
_PYTORCH_TAG = re.compile(r"(\d+\.\d+(?:\.\d+)?)-cuda(\d{1,2}\.\d{1,2})-cudnn(\d+)-(\w+)")
_NGC_TAG = re.compile(r"(\d\d\.\d\d)-py3(?:-.*)?")
_NGC_FIELDS = frozenset({"torch", "cuda", "min_driver", "python"})
_REGISTRIES = ("docker.io/", "index.docker.io/", "registry-1.docker.io/", "library/")


@dataclass(frozen=True)
class NgcRelease:
    torch: str
    cuda: str
    min_driver: str
    python: str
    source: str                       # what confirms the row, in words
    confirmed: tuple[str, ...] = ()   # the fields read in NVIDIA's release notes; the others are unconfirmed


@lru_cache(maxsize=1)
def ngc_releases() -> dict[str, NgcRelease]:
    """The NGC PyTorch releases (refenv/data/ngc_pytorch.json), validated as read."""
    raw = json.loads((paths.package_dir() / "data" / NGC_FILE).read_text(encoding="utf-8"))
    sources = raw.get("sources") or {}
    out = {}
    for tag, row in raw["releases"].items():
        if not re.fullmatch(r"\d\d\.\d\d", tag) or row.get("source") not in sources:
            raise ValueError(f"{NGC_FILE}: releases.{tag}: a YY.MM tag with a named source is expected")
        confirmed = row.get("confirmed", [])
        if row["source"] != "unconfirmed" and not (confirmed and row.get("url")):
            raise ValueError(f"{NGC_FILE}: releases.{tag}: a confirmed row names its fields ('confirmed') "
                             "and the page they were read in ('url')")
        if not set(confirmed) <= _NGC_FIELDS:
            raise ValueError(f"{NGC_FILE}: releases.{tag}.confirmed: fields of {sorted(_NGC_FIELDS)} are expected")
        compat.parse_version(row["cuda"])
        compat.parse_version(row["min_driver"])
        # The words a prediction shows beside the base; the table's source note says the rest.
        source = "not confirmed against NVIDIA's release notes"
        if confirmed:
            unread = sorted(_NGC_FIELDS - set(confirmed))
            source = f"{', '.join(confirmed)} read in {row['url']}"
            source += f"; {', '.join(unread)} unconfirmed" if unread else ""
        out[tag] = NgcRelease(row["torch"], row["cuda"], row["min_driver"], row["python"], source,
                              tuple(confirmed))
    return out


def split_reference(image: str) -> tuple[str, str]:
    """('nvidia/cuda', '12.4.1-runtime-ubuntu22.04') from a reference; the digest and Docker Hub's names dropped."""
    name = image.split("@", 1)[0]
    tag = ""
    if ":" in name.rsplit("/", 1)[-1]:
        name, tag = name.rsplit(":", 1)
    for prefix in _REGISTRIES:
        name = name.removeprefix(prefix)
    return name.lower(), tag


def from_reference(image: str) -> Base:
    """The base a reference names (pure): known by its family and tag, or plain."""
    name, tag = split_reference(image)
    if name in ("nvidia/cuda", "nvcr.io/nvidia/cuda") and (m := _CUDA_TAG.fullmatch(tag)):
        return Base(image, "nvidia-cuda", cuda=m.group(1), flavour=m.group(2).rsplit("-", 1)[0],
                    source="the nvidia/cuda tag")
    if name == "pytorch/pytorch":
        if m := _PYTORCH_TAG.fullmatch(tag):
            cuda = m.group(2)
            variant = compat.cuda_variant(cuda)
            return Base(image, "pytorch", cuda=cuda, torch=f"{m.group(1)}+{variant}", variant=variant,
                        flavour=m.group(4), source="the pytorch/pytorch tag")
        return Base(image, "pytorch", flavour=tag or "latest", source="the pytorch/pytorch tag (no version in it)")
    if name == "nvcr.io/nvidia/pytorch" and (m := _NGC_TAG.fullmatch(tag)):
        release = ngc_releases().get(m.group(1))
        if release is None:
            return Base(image, "ngc", source=f"NGC PyTorch {m.group(1)}: not in refenv's table of releases")
        cuda = ".".join(release.cuda.split(".")[:2])
        return Base(image, "ngc", cuda=release.cuda, torch=release.torch, variant=compat.cuda_variant(cuda),
                    python=release.python, min_driver=release.min_driver,
                    source=f"NGC PyTorch {m.group(1)} ({release.source})")
    return Base(image, "plain")


def from_inspect(image: str, labels: Mapping[str, str], env: Mapping[str, str]) -> Base | None:
    """The base as its inspect shows it (labels and environment), or None when it says nothing of torch or CUDA."""
    torch = labels.get("refenv.torch") or env.get("PYTORCH_VERSION")
    variant = labels.get("refenv.variant")
    cuda = labels.get("refenv.cuda") if labels.get("refenv.cuda") not in (None, "none") else env.get("CUDA_VERSION")
    if variant is None and torch and "+" in torch:
        variant = torch.split("+", 1)[1]
    if variant is None and torch and cuda:
        variant = compat.cuda_variant(".".join(cuda.split(".")[:2]))
    if torch is None and cuda is None:
        return None
    return Base(image, "inspected", cuda=cuda, torch=torch, variant=variant, python=labels.get("refenv.python"),
                source=f"{image}'s inspect (labels and environment)")
