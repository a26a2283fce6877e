"""The result vocabulary shared by the harness and the host side: verdicts, severities, findings.

One versioned document shape serves `python -m harness diagnose --json`, the matrix's cells and
`diagnose --from`, so the host side reads exactly what the harness writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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

# Severities of a finding: an error decides the verdict, a warning is worth fixing, info is context.
ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

# Exit codes of every harness command.
EXIT_OK = 0
EXIT_FAILING = 1
EXIT_HARNESS_ERROR = 2   # bad input, on every command (never 1: `memory` exits 1 for "does not fit")
EXIT_INTERNAL = 3        # a bug in refenv: an exception no check foresaw, reported in one line


@dataclass(frozen=True)
class Remedy:
    """A fix as data: its kind and parameters; `harness.catalogue.remedies` renders its words."""

    kind: str
    params: tuple[tuple[str, str], ...] = ()

    def get(self, name: str, default: str | None = None) -> str | None:
        return dict(self.params).get(name, default)

    def with_params(self, **values: object) -> Remedy:
        """The same kind with these parameters set (None leaves a parameter out)."""
        merged = dict(self.params)
        merged.update({k: str(v) for k, v in values.items() if v is not None})
        return Remedy(self.kind, tuple(sorted(merged.items())))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **dict(self.params)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Remedy:
        return cls(str(d["kind"]), tuple(sorted((str(k), str(v)) for k, v in d.items() if k != "kind")))


@dataclass(frozen=True)
class Finding:
    """One judgement over the facts: what is wrong (or right), the evidence, and the fix."""

    verdict: str
    severity: str
    title: str
    evidence: tuple[str, ...] = ()
    remediation: tuple[str, ...] = ()
    layer: str = ""
    remedy: Remedy | None = None  # the structured fix the remediation's words were rendered from

    def __post_init__(self) -> None:
        # An empty verdict marks context: a fact worth showing that decides nothing.
        if self.verdict and self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {', '.join(VERDICTS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; expected one of {', '.join(SEVERITIES)}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = list(self.evidence)
        d["remediation"] = list(self.remediation)
        d["remedy"] = self.remedy.to_dict() if self.remedy else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            verdict=str(d["verdict"]),
            severity=str(d["severity"]),
            title=str(d["title"]),
            evidence=tuple(str(e) for e in d.get("evidence", ())),
            remediation=tuple(str(r) for r in d.get("remediation", ())),
            layer=str(d.get("layer", "")),
            remedy=Remedy.from_dict(d["remedy"]) if isinstance(d.get("remedy"), dict) else None,
        )


@dataclass(frozen=True)
class Diagnosis:
    """The classifier's answer: the primary verdict, every finding, and whether it is simulated."""

    verdict: str
    findings: tuple[Finding, ...] = ()
    simulated: bool = False
    unknowns: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "simulated": self.simulated,
            "findings": [f.to_dict() for f in self.findings],
            "unknowns": list(self.unknowns),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Diagnosis:
        return cls(
            verdict=str(d["verdict"]),
            findings=tuple(Finding.from_dict(f) for f in d.get("findings", ())),
            simulated=bool(d.get("simulated", False)),
            unknowns=tuple(str(u) for u in d.get("unknowns", ())),
        )


def exit_code_for(verdict: str) -> int:
    """0 for OK, 1 for any failing verdict."""
    return EXIT_OK if verdict == OK else EXIT_FAILING
