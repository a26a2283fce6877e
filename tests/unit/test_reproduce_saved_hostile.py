"""`invoke reproduce` from a saved `diagnose --json` document that is well-formed JSON but hostile: the
document's shape and values are checked where it is read (harness/intake/saved.py), so reproduction gets a
one-line refusal naming the field, or a plan every consumer accepts; never an exception."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.diagnosis.report import diagnose_report
from harness.intake import ReportError, load_report
from harness.schema import encode
from refenv.model import accepts, matrix_yaml, profiles
from refenv.reproduce import ReproduceError, infer
from refenv.reproduce.builds import Offer
from refenv.reproduce.choose import plan

ROOT = Path(__file__).resolve().parents[2]
MATRIX = matrix_yaml.load(ROOT / "matrix.yaml")
# What this machine offers without PyPI: the locally cached torch builds (as test_reproduce_hostile.py has it).
OFFLINE = Offer(False, frozenset({("2.13.0", "cpu", "3.11")}), ("3.9", "3.11", "3.13"),
                frozenset({("2.14.1", "cu130", "3.11"), ("2.10.0", "cu128", "3.11")}))
# A dump with two V100s on R470 (captured in a container of the cu128 image), saved as diagnose --json.
SAVED: dict[str, Any] = encode(diagnose_report(str(ROOT / "tests" / "data" / "reproduce" / "cu128-on-r470.txt")))


def with_value(path: str, value: Any, saved: dict[str, Any] = SAVED) -> dict[str, Any]:
    """A copy of a saved document with one value of its facts replaced (a dotted path; list items by index)."""
    doc = copy.deepcopy(saved)
    node: Any = doc["facts"]
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = value
    return doc


def reproduce_plan(doc: dict[str, Any]) -> Any:
    """What `invoke reproduce saved.json` does before Docker: read, infer, plan."""
    inferred = infer(load_report(json.dumps(doc).encode("utf-8")))
    return plan(inferred, OFFLINE, MATRIX.environments, MATRIX.environments[0].base)


def refusal(doc: dict[str, Any]) -> str:
    with pytest.raises((ReportError, ReproduceError)) as info:
        reproduce_plan(doc)
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def test_the_saved_document_itself_is_reproduced() -> None:
    r = reproduce_plan(SAVED)
    assert r.profile is not None and [g.name for g in r.profile.gpus] == ["Tesla V100-SXM2-32GB"] * 2


@pytest.mark.parametrize(("path", "value", "named"), [
    ("driver.nvml.devices", [None], "facts.driver.nvml.devices[0]: expected an object, got null"),
    ("driver.nvml.devices.0.compute_capability", "banana", "facts.driver.nvml.devices[0].compute_capability"),
    ("torch.devices", [None, {"name": "Tesla T4"}], "facts.torch.devices[0]"),
    ("torch.cuda", "", "facts.torch.cuda"),
    ("torch.version", "١.٢.٣", "facts.torch.version"),
    ("torch.version", "２.1.0", "facts.torch.version"),
    ("driver.nvml.driver_version", "٤٧٠.٢٥٦.٠٢", "facts.driver.nvml.driver_version"),
    ("host.python", "3.1١", "facts.host.python"),
    ("driver.nvml.cuda_driver_version", 10 ** 20, "facts.driver.nvml.cuda_driver_version"),
    ("driver.libcuda.driver_version", -1, "facts.driver.libcuda.driver_version"),
    ("torch.warnings", [None], "facts.torch.warnings[0]: expected a string"),
    ("torch", [], "facts.torch: expected an object"),
    ("driver.nvml.devices.0.name", 7, "facts.driver.nvml.devices[0].name"),
])
def test_each_hostile_value_is_refused_naming_its_field(path: str, value: Any, named: str) -> None:
    message = refusal(with_value(path, value))
    assert named in message, message


def test_a_refused_capability_never_blames_the_shipped_profiles() -> None:
    message = refusal(with_value("driver.nvml.devices.0.compute_capability", "9.banana"))
    assert "profiles.json" not in message and "MAJOR.MINOR" in message


# ---- generated: every leaf of the facts, every hostile shape ----------------------------------------------

def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, f"{prefix}{k}.")] or [prefix[:-1]]
    if isinstance(node, list) and node:
        return [prefix[:-1]] + [p for i, v in enumerate(node) for p in _leaves(v, f"{prefix}{i}.")]
    return [prefix[:-1]]


LEAVES = sorted(set(_leaves(SAVED["facts"])) - {""})
NON_ASCII_DIGITS = ("٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "०१२३४५६७८९")


def _digits(text: str, table: str) -> str:
    return "".join(table[int(c)] if c.isascii() and c.isdigit() else c for c in text)


hostile = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40), st.just(""),
    st.lists(st.none() | st.text(max_size=8) | st.integers(), max_size=3), st.just({}), st.just([{}]),
    st.sampled_from(["banana", "9.0", "12.1", "535.104.05", "2.1.0+cu121", "3.11.7", "sm_90", "GPU-x", "\n"]),
    st.builds(_digits, st.sampled_from(["2.1.0+cu121", "12.1", "535.104.05", "8.6", "3.10"]),
              st.sampled_from(NON_ASCII_DIGITS)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LEAVES), hostile), min_size=1, max_size=3))
def test_any_hostile_saved_document_gives_a_plan_or_one_line(changes: list[tuple[str, Any]]) -> None:
    doc = SAVED
    for path, value in changes:
        try:
            doc = with_value(path, value, doc)
        except (TypeError, IndexError, KeyError, ValueError, AttributeError):
            continue  # an earlier change made this path a scalar: nothing to replace
    try:
        r = reproduce_plan(doc)
    except (ReportError, ReproduceError) as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 500, str(exc)
        return
    accepts.environment_name(r.environment.name, "environment")
    for key, value in r.scenario.env:
        accepts.env_value(value, key)
    if r.profile is not None:
        assert profiles.render_config(r.profile).count("[gpu]") == len(r.profile.gpus)

