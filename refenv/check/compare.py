"""Where `refenv check`'s prediction and a matrix run's observation part: its JSON against the run's cells.json,
cell by cell (environment, host, scenario), as the CI gate writes it to the job's summary (pure, and a door:
`python -m refenv.check.compare CHECK.json CELLS.json`, exit 0 all agree, 1 some differ, 2 bad input)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Agreement:
    compared: int                                        # cells both predicted and observed
    differing: tuple[tuple[str, str | None, str], ...]   # (cell id, predicted, observed)

    @property
    def share(self) -> float:
        return 1.0 if not self.compared else 1 - len(self.differing) / self.compared


def _cells(doc: Mapping[str, Any]) -> dict[str, str | None]:
    return {f"{c['environment']}/{c['host']}/{c['scenario']}": c.get("verdict")
            for e in doc.get("environments", []) for c in e.get("cells", [])}


def agreement(check_doc: Mapping[str, Any], cells_doc: Mapping[str, Any]) -> Agreement:
    """Every cell the check predicted a verdict for and the run observed one for, and those that differ."""
    predicted = _cells(check_doc)
    differing = []
    compared = 0
    for c in cells_doc.get("cells", []):
        key = f"{c['environment']}/{c['host']}/{c['scenario']}"
        observed = (c.get("observed") or {}).get("verdict")
        if observed is None or predicted.get(key) is None:
            continue
        compared += 1
        if predicted[key] != observed:
            differing.append((key, predicted[key], observed))
    return Agreement(compared, tuple(differing))


def markdown(a: Agreement) -> str:
    """The job summary's section: the share that agreed, then each cell that did not."""
    lines = ["## refenv check against the matrix", "",
             f"{a.compared - len(a.differing)} of {a.compared} cells observed as `refenv check` predicted "
             f"({a.share:.1%})."]
    if a.differing:
        lines += ["", "| cell | predicted | observed |", "|---|---|---|"]
        lines += [f"| {cell} | {p or '-'} | {o} |" for cell, p, o in a.differing]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m refenv.check.compare CHECK.json CELLS.json", file=sys.stderr)
        return 2
    try:
        docs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in argv]
    except (OSError, ValueError) as exc:
        print(f"refenv check compare: {exc}", file=sys.stderr)
        return 2
    if not all(isinstance(d, dict) for d in docs):
        print("refenv check compare: both files must hold a JSON object", file=sys.stderr)
        return 2
    a = agreement(docs[0], docs[1])
    print(markdown(a), end="")
    return 1 if a.differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
