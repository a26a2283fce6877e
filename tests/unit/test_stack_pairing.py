"""The pairing table (harness/data/pairings.json): which extension release goes with a torch release."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.catalogue import pairing

RAW: dict[str, Any] = json.loads(pairing.DATA_FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("dist", "torch", "requirement"), [
    ("torchvision", "2.14.1+cu130", "torchvision==0.29.1"),   # the pair this machine's wheels carry
    ("torchvision", "2.13.0", "torchvision==0.28.0"),
    ("torchvision", "2.10.0", "torchvision==0.25.0"),
    ("torchvision", "2.6.1", "torchvision==0.21.*"),          # a release the table lacks: its series
    ("torchaudio", "2.5.1", "torchaudio==2.5.1"),
    ("torchaudio", "2.14.1", "torchaudio==2.11.1"),
])
def test_the_paired_release(dist: str, torch: str, requirement: str) -> None:
    found = pairing.paired(dist, torch)
    assert found is not None and found.requirement == requirement
    assert found.source


def test_unpaired_and_unknown_say_none() -> None:
    assert pairing.paired("torchvision", "3.0.0") is None
    assert pairing.paired("xformers", "2.6.0") is None        # its build is had from PyTorch's index
    assert pairing.paired("left-pad", "2.6.0") is None
    rule = pairing.rule("cupy-cuda12x")
    assert rule is not None and rule.how == "cuda-named"


def _broken(path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(RAW)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(("path", "value", "message"), [
    (["schema"], "x", "refenv.pairings"),
    (["distributions", "torchvision", "how"], "guess", "how"),
    (["distributions", "torchvision", "source"], "a blog", "named sources"),
    (["distributions", "torchvision", "pairs", 0, "version"], "latest", r"pairs\[0\]\.version"),
    (["distributions", "torchvision", "pairs", 0, "source"], "nowhere", r"pairs\[0\]\.source"),
])
def test_a_malformed_row_is_refused_naming_it(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(pairing.PairingError, match=message):
        pairing.validate(_broken(path, value))


def test_every_row_of_the_shipped_table_reads() -> None:
    sources, rules = pairing.validate(RAW)
    assert {"torchvision", "torchaudio", "xformers", "flash-attn", "bitsandbytes", "triton", "cupy"} <= set(rules)
    assert all(p.source in sources for r in rules.values() for p in r.pairs)
