"""The sample run documents under tests/data/cells, as JSON data and as the typed document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from refenv.model.rundoc import RunDocument, from_data

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "cells"


def raw(name: str) -> dict[str, Any]:
    """The sample as parsed JSON (to change before reading it)."""
    data: dict[str, Any] = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def sample(name: str) -> RunDocument:
    """The sample as the typed run document."""
    return from_data(raw(name), name)
