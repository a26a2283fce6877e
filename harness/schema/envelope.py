"""The versioned documents the harness's commands write, as typed records: one envelope for all of them.

Every document opens with its schema and version, the harness that wrote it, the command, when, and the
error that stopped it (null when none). `diagnose` adds the facts and the diagnosis; `cell` a diagnosis and
its probes and memory verification; `measure` the probes and memory verification of an environment. refenv
reads a cell's and a measurement's document through the same codec (harness/schema/jsondata.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple, Union

from harness.facts import Facts
from harness.schema.jsondata import Record, optional_key
from harness.schema.memory_document import MemoryVerification
from harness.schema.probe_document import ProbeDocument
from harness.schema.stack_document import JudgedStack
from harness.schema.verdicts import SCHEMA, SCHEMA_VERSION, Diagnosis

CELL_SCHEMA = "refenv.cell"
MEASURE_SCHEMA = "refenv.measure"
STACK_SCHEMA = "refenv.stack"
JOB_VERSION = 1


@dataclass(frozen=True)
class ErrorRecord(Record):
    """How a harness failure is recorded: its type, message and the traceback's last lines."""

    type: str = ""
    message: str = ""
    traceback: Optional[str] = None


@dataclass(frozen=True)
class Envelope:
    """What every document opens with. Defaults let a partial document (a run cut short) still be read."""

    schema: str = ""
    version: int = 0
    harness_version: str = ""
    command: str = ""
    created: str = ""
    error: Optional[ErrorRecord] = None


@dataclass(frozen=True)
class SourceLine:
    """Where a fact of a pasted report came from: its line, as pasted, and whether stated or inferred."""

    line: int
    text: str
    how: Optional[str] = optional_key()


@dataclass(frozen=True)
class ReportEnvironment:
    """One environment of a report that holds several: its name, its first and last line, its own answer."""

    name: str
    lines: Tuple[int, ...]
    verdict: str
    confidence: str


@dataclass(frozen=True)
class ReportInput:
    """What `diagnose --from` read: the kind of text, where from, and each fact's line. A report of several
    environments names the one the answer is about, and lists each with its own verdict."""

    kind: str
    path: str
    provenance: Dict[str, SourceLine] = field(default_factory=dict)
    inferred: Dict[str, str] = field(default_factory=dict)
    clues: Dict[str, SourceLine] = field(default_factory=dict)
    notes: Tuple[str, ...] = ()
    environment: Optional[str] = None
    environments: Tuple[ReportEnvironment, ...] = ()


@dataclass(frozen=True)
class DiagnoseDocument(Envelope):
    """`diagnose --json`: the facts gathered (or read from a report) and the classifier's diagnosis."""

    schema: str = SCHEMA
    version: int = SCHEMA_VERSION
    facts: Optional[Facts] = optional_key()
    probe_errors: Optional[Tuple[str, ...]] = optional_key()  # live: the layers that could not be gathered
    diagnosis: Optional[Diagnosis] = optional_key()
    input: Optional[ReportInput] = optional_key()             # from a report: what was read
    wall_s: Optional[float] = optional_key()
    stack: Optional[StackSection] = optional_key()            # --stack: harness/stack/section.py's section


@dataclass(frozen=True)
class Failed:
    """A section whose code raised: what it raised, instead of its document."""

    error: ErrorRecord


@dataclass(frozen=True)
class ProbePair:
    """The probes of a cell or a measurement: the GPU's document (or its waiver) and the CPU's."""

    gpu: Optional[ProbeDocument] = None
    cpu: Optional[ProbeDocument] = None

    @property
    def documents(self) -> Tuple[ProbeDocument, ...]:
        return tuple(d for d in (self.gpu, self.cpu) if d is not None)


# A section is its document, or the error that took its place ({"error": {...}}): Failed is tried first,
# and needs an error record, which neither document has.
ProbesSection = Union[Failed, ProbePair]
MemorySection = Union[Failed, MemoryVerification]
StackSection = Union[Failed, JudgedStack]


@dataclass(frozen=True)
class CellDocument(Envelope):
    """`cell`: one matrix cell inside its container, its diagnosis and (unless off) probes and memory."""

    schema: str = CELL_SCHEMA
    version: int = JOB_VERSION
    diagnosis: Optional[DiagnoseDocument] = None
    probes: Optional[ProbesSection] = None
    memory: Optional[MemorySection] = None
    wall_s: Optional[float] = None
    stack: Optional[StackSection] = optional_key()            # --stack on: harness/stack/section.py's section


@dataclass(frozen=True)
class StackDocument(Envelope):
    """`stack`: the distributions beside torch, the host they were judged against, the judgement."""

    schema: str = STACK_SCHEMA
    version: int = JOB_VERSION
    stack: Optional[StackSection] = None      # harness/stack/section.py's section


@dataclass(frozen=True)
class MeasureDocument(Envelope):
    """`measure`: what an environment (and a real device) measures once for all its cells."""

    schema: str = MEASURE_SCHEMA
    version: int = JOB_VERSION
    device: Optional[str] = None
    waived: Optional[str] = None            # why the GPU work was not done, when it was not
    probes: Optional[ProbesSection] = None
    memory: Optional[MemorySection] = None
    wall_s: Optional[float] = None
