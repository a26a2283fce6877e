"""The diagnosis vocabulary shared by the harness and the host side: verdicts, severities, findings.

One versioned document shape serves `python -m harness diagnose --json`, the matrix's cells and
`diagnose --from`, so the host side reads exactly what the harness writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

from harness.schema.jsondata import Record, optional_key

SCHEMA = "refenv.diagnosis"
SCHEMA_VERSION = 1

# The primary verdicts, in the order the stack is examined: the driver layer first, then the
# wheel and its CUDA runtime, then visibility (DESIGN.md, "Verdicts").
OK = "OK"
NO_DRIVER = "NO_DRIVER"
DRIVER_BROKEN = "DRIVER_BROKEN"
CPU_WHEEL = "CPU_WHEEL"
DRIVER_TOO_OLD = "DRIVER_TOO_OLD"
NOT_VISIBLE = "NOT_VISIBLE"
ARCH_UNSUPPORTED = "ARCH_UNSUPPORTED"
VERDICTS = (OK, NO_DRIVER, DRIVER_BROKEN, CPU_WHEEL, DRIVER_TOO_OLD, NOT_VISIBLE, ARCH_UNSUPPORTED)
FAILING = VERDICTS[1:]

# Severities of a finding: an error decides the verdict, a warning is worth fixing, info is context. Not a
# status: a check's outcome is PASS / FAIL / ERROR ... (harness/schema/outcomes.py).
SEVERITY_ERROR = "error"
SEVERITY_WARNING = "warning"
SEVERITY_INFO = "info"
SEVERITIES = (SEVERITY_ERROR, SEVERITY_WARNING, SEVERITY_INFO)

# Exit codes of every harness command.
EXIT_OK = 0
EXIT_FAILING = 1
EXIT_HARNESS_ERROR = 2   # bad input, on every command (never 1: `memory` exits 1 for "does not fit")
EXIT_INTERNAL = 3        # a bug in refenv: an exception no check foresaw, reported in one line


@dataclass(frozen=True)
class Remedy:
    """A fix as data: its kind and parameters; `harness.catalogue.remedies` renders its words."""

    kind: str
    params: Tuple[Tuple[str, str], ...] = ()

    def get(self, name: str, default: str | None = None) -> str | None:
        return dict(self.params).get(name, default)

    def with_params(self, **values: object) -> Remedy:
        """The same kind with these parameters set (None leaves a parameter out)."""
        merged = dict(self.params)
        merged.update({k: str(v) for k, v in values.items() if v is not None})
        return Remedy(self.kind, tuple(sorted(merged.items())))

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, **dict(self.params)}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Remedy:
        return cls(str(d["kind"]), tuple(sorted((str(k), str(v)) for k, v in d.items() if k != "kind")))


@dataclass(frozen=True)
class Finding(Record):
    """One judgement over the facts: what is wrong (or right), the evidence, and the fix."""

    verdict: str
    severity: str
    title: str
    evidence: Tuple[str, ...] = ()
    remediation: Tuple[str, ...] = ()
    layer: str = ""
    remedy: Optional[Remedy] = None  # the structured fix the remediation's words were rendered from

    def __post_init__(self) -> None:
        # An empty verdict marks context: a fact worth showing that decides nothing.
        if self.verdict and self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {', '.join(VERDICTS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; expected one of {', '.join(SEVERITIES)}")

    @property
    def failing(self) -> bool:
        """An error that decides a failing verdict (not context, not a warning): what a diagnosis rests on."""
        return self.severity == SEVERITY_ERROR and self.verdict in FAILING


@dataclass(frozen=True)
class Diagnosis(Record):
    """The classifier's answer: the primary verdict, every finding, and whether it is simulated."""

    verdict: str
    simulated: bool = False
    findings: Tuple[Finding, ...] = ()
    unknowns: Tuple[str, ...] = ()
    # From a pasted report (`diagnose --from`): the classifier's own verdict over the facts, and how the
    # report's answer weighed them (written by harness/intake/assess.py).
    classifier_verdict: Optional[str] = optional_key()
    assessment: Optional[Dict[str, Union[str, List[str]]]] = optional_key()

    @property
    def failing(self) -> tuple[Finding, ...]:
        """The findings that decide a failing verdict, in the classifier's order (the primary first)."""
        return tuple(f for f in self.findings if f.failing)

    @property
    def failing_verdicts(self) -> tuple[str, ...]:
        """Every failing verdict found, each once, the primary first."""
        return tuple(dict.fromkeys(f.verdict for f in self.failing))


def exit_code_for(verdict: str) -> int:
    """0 for OK, 1 for any failing verdict."""
    return EXIT_OK if verdict == OK else EXIT_FAILING
