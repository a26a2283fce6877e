"""What a parsed report is, the error a bad one raises, and the builder that fills its facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from harness.facts import Facts, GpuFact, empty_facts
from harness.schema.envelope import ReportEnvironment

MAX_NOTES = 200  # a report's notes are read by a person: the first ones say what the rest would


class ReportError(ValueError):
    """The input is not a report refenv can read; the message says what was expected."""


class Line(NamedTuple):
    """One logical line of the pasted text: the 1-based number of the line it starts on, that line as
    pasted, the text cleaned (a wrapped line rejoined), the prompt it was typed at, and its last line."""

    number: int
    raw: str
    text: str
    prompt: str = ""  # '>>>', 'In', 'Out', '...', or a shell prompt ('$', 'PS C:\\x>', '(env) u@h:~$')
    last: int = 0     # the number of the last pasted line it spans (0: this one only)

    @property
    def full(self) -> str:
        """The text with its prompt, as a person reads the line."""
        return f"{self.prompt} {self.text}" if self.prompt else self.text


@dataclass(frozen=True)
class ParsedReport:
    """Facts read from a pasted report, with where each came from and what stays unknown."""

    facts: Facts
    kind: str  # "collect_env" | "text" | "document"
    provenance: dict[str, tuple[int, str]]
    unknowns: tuple[str, ...]
    notes: tuple[str, ...]
    # What the report says that the facts have no place for: cuDNN, the system nvcc, the CPU, ...
    details: dict[str, str] = field(default_factory=dict)
    # Facts not stated but inferred (from the compatibility data), each with how: path -> reason.
    inferred: dict[str, str] = field(default_factory=dict)
    # What the prose says that is no fact of the stack but weighs on the verdict (a Colab CPU
    # runtime, a Slurm job, Apple Silicon): clue name -> (line number, line as pasted).
    clues: dict[str, tuple[int, str]] = field(default_factory=dict)
    # When the report holds several environments: the one these facts are about, and each with its verdict.
    environment: str = ""
    environments: tuple[ReportEnvironment, ...] = ()


class Builder:
    """Accumulates facts, their provenance and notes while a report is read (first value wins)."""

    def __init__(self, source: str) -> None:
        self.facts: Facts = empty_facts(source)
        self.provenance: dict[str, tuple[int, str]] = {}
        self.notes: list[str] = []
        self._noted: set[str] = set()
        self.details: dict[str, str] = {}
        self.inferred: dict[str, str] = {}
        self.clues: dict[str, tuple[int, str]] = {}
        # Facts the report states twice, differently: path -> where the second value is (the first stays).
        self.conflicts: dict[str, tuple[int, str]] = {}

    def get(self, path: str) -> Any:
        """The value at a dotted fact path, or None."""
        node: Any = self.facts
        for key in path.split("."):
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    def known(self, path: str) -> bool:
        """Whether the report said something about this fact (an observed None counts)."""
        return path in self.provenance

    def put(self, path: str, value: Any, line: Line | None, overwrite: bool = False) -> bool:
        """Set a fact unless the report already said it; None is stored as an observation."""
        if self.known(path) and not overwrite:
            if line is not None and path not in self.inferred and value != self.get(path):
                self.conflicts.setdefault(path, (line.number, line.raw))
            return False
        keys = path.split(".")
        node = cast("dict[str, Any]", self.facts)
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
        if line is not None:
            self.provenance[path] = (line.number, line.raw)
        return True

    def add_device(self, path: str, gpu: GpuFact, line: Line) -> None:
        """Append a GPU to a device list (driver.nvml.devices or torch.devices)."""
        devices = self.get(path)
        if not isinstance(devices, list):
            devices = []
            self.put(path, devices, line, overwrite=True)
        devices.append(gpu)
        self.provenance[f"{path}.{len(devices) - 1}"] = (line.number, line.raw)

    def add_warning(self, message: str, line: Line) -> None:
        """Keep one more of torch's warnings in torch.warnings (each once)."""
        warnings = self.get("torch.warnings")
        if not isinstance(warnings, list):
            warnings = []
            self.put("torch.warnings", warnings, line)
        if message not in warnings:
            warnings.append(message)

    def infer(self, path: str, value: Any, line: Line | None, why: str) -> bool:
        """Set a fact the report does not state but implies; it is marked inferred, with why."""
        if not self.put(path, value, line):
            return False
        self.inferred[path] = why
        return True

    def clue(self, name: str, line: Line) -> None:
        """Something the prose says that weighs on the verdict without being a fact (first line wins)."""
        self.clues.setdefault(name, (line.number, line.raw))

    def detail(self, name: str, value: str, line: Line) -> None:
        if name not in self.details:
            self.details[name] = value
            self.provenance[f"details.{name}"] = (line.number, line.raw)

    def note(self, text: str) -> None:
        # A set keeps this linear: a pasted log can repeat a noted line thousands of times.
        if text not in self._noted and len(self.notes) < MAX_NOTES:
            self._noted.add(text)
            self.notes.append(text)

    def build(self, kind: str, unknowns: list[str]) -> ParsedReport:
        return ParsedReport(
            facts=self.facts,
            kind=kind,
            provenance=dict(self.provenance),
            unknowns=tuple(dict.fromkeys(unknowns)),
            notes=tuple(self.notes),
            details=dict(self.details),
            inferred=dict(self.inferred),
            clues=dict(self.clues),
        )
