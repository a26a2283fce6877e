"""A cell's name and what the compatibility rules expect of it: what the planner, `refenv check` and the matrix's
model need of a cell before anything runs. The records of what ran (refenv/model/records.py) carry the harness's
documents; these need none of them, so reading a matrix or predicting a Dockerfile's row imports no schema of
probes, memory or stacks."""

from __future__ import annotations

from dataclasses import dataclass


def cell_id(environment: str, host: str, scenario: str) -> str:
    return f"{environment}/{host}/{scenario}"


@dataclass(frozen=True)
class Expected:
    """What the compatibility rules predict for a cell."""

    verdict: str
    verdicts: tuple[str, ...] = ()    # every failing verdict predicted, primary first
    torch_text: str | None = None     # a phrase torch's own message must contain, if any
    reason: str = ""                  # why, in a sentence
