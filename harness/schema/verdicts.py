"""The diagnosis vocabulary shared by the harness and the host side: the verdict table, severities, findings.

Each verdict is one row of `TABLE`: its code, its family (the layer of the stack it is about, in the order the
stack is examined), its words, the commands that would confirm it when a reporter is asked, the kinds of fix
that answer it (in the order they are tried) and the label an issue gets. The classifier and the matrix's
expectations order verdicts by it, the report reader asks for its commands, readiness and `invoke reproduce`
choose their fix by its kinds, the issue comment, the bot and the paste page word and label it. `OTHER`,
`CANNOT_TELL` and the confidence levels of an answer read from a report are defined here and nowhere else.

A new verdict is a row here plus the rules that detect it: the classifier's check (harness/classify/), the
prediction (refenv/run/expect.py) and the catalogue rows whose messages mean it (harness/data/failures.json).

One versioned document shape serves `python -m harness diagnose --json`, the matrix's cells and
`diagnose --from`, so the host side reads exactly what the harness writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, Tuple

from harness.schema.jsondata import Record, optional_key

SCHEMA = "refenv.diagnosis"
SCHEMA_VERSION = 1

OK = "OK"
NO_DRIVER = "NO_DRIVER"
DRIVER_BROKEN = "DRIVER_BROKEN"
CPU_WHEEL = "CPU_WHEEL"
DRIVER_TOO_OLD = "DRIVER_TOO_OLD"
NOT_VISIBLE = "NOT_VISIBLE"
ARCH_UNSUPPORTED = "ARCH_UNSUPPORTED"
# Only a report's answer says these: outside the NVIDIA stack refenv judges, or too thin to judge.
OTHER = "OTHER"
CANNOT_TELL = "CANNOT_TELL"

# The families, in the order the stack is examined (DESIGN.md, "Verdicts"): the driver layer first, then the
# wheel and its CUDA runtime, then visibility, then the architectures compiled into the wheel.
WORKS = "works"
DRIVER = "driver"
WHEEL = "wheel"
VISIBILITY = "visibility"
ARCHITECTURE = "architecture"
OUTSIDE = "outside"        # a report about a stack refenv does not judge (ROCm, macOS, WSL 1, AMD or Intel)
UNDECIDED = "undecided"    # a report that holds too little to judge
FAILURES = (DRIVER, WHEEL, VISIBILITY, ARCHITECTURE)
FAMILY_WORDS = {DRIVER: "the driver layer", WHEEL: "the wheel and its CUDA runtime",
                VISIBILITY: "CUDA_VISIBLE_DEVICES, container GPU access",
                ARCHITECTURE: "the GPU's architecture is not compiled into the wheel"}

# The kinds of fix, by what they change: the driver (install or upgrade it), the wheel (another torch build),
# a repair (the same driver without its fault: a reboot, a module reload, a library path) or the container's
# access (GPU access given, no variable hiding the devices).
FIX_DRIVER = "driver"
FIX_WHEEL = "wheel"
FIX_REPAIR = "repair"
FIX_ACCESS = "access"
FIX_KINDS = (FIX_DRIVER, FIX_WHEEL, FIX_REPAIR, FIX_ACCESS)

# How sure an answer read from a report is (harness/intake/assess.py); a live diagnosis has no confidence.
HIGH = "high"
MEDIUM = "medium"
LOW = "low"
CONFIDENCES = (HIGH, MEDIUM, LOW)


@dataclass(frozen=True)
class Verdict:
    """One row of the verdict table."""

    code: str                     # 'DRIVER_TOO_OLD'
    family: str                   # one of the families above
    words: str                    # the verdict in a few words; '{cuda}' stands for the environment's CUDA
    ask: Tuple[str, ...] = ()     # commands whose output would confirm it, asked of a reporter
    fixes: Tuple[str, ...] = ()   # the kinds of fix that answer it, the first tried first
    label: str = ""               # an issue's label after the bot's prefix ('driver-too-old')

    @property
    def failing(self) -> bool:
        """A verdict that says why torch gets no GPU (not OK, not a report's OTHER or CANNOT_TELL)."""
        return self.family in FAILURES


# NVIDIA's and torch's own commands for each question (facts/torch-failures.md): what a reporter can paste back.
TABLE = (
    Verdict(OK, WORKS, "torch gets a GPU", label="ok"),
    Verdict(NO_DRIVER, DRIVER, "no driver", ("nvidia-smi -L", "lspci | grep -i nvidia", "ls -l /dev/nvidia*"),
            (FIX_DRIVER,), "no-driver"),
    Verdict(DRIVER_BROKEN, DRIVER, "driver broken",
            ("cat /proc/driver/nvidia/version", "sudo dmesg | grep -i -e NVRM -e Xid",
             "systemctl status nvidia-fabricmanager"), (FIX_REPAIR,), "driver-broken"),
    Verdict(CPU_WHEEL, WHEEL, "a CPU-only build", ("pip list 2>/dev/null | grep -i torch", "conda list pytorch"),
            (FIX_WHEEL,), "cpu-wheel"),
    Verdict(DRIVER_TOO_OLD, WHEEL, "driver too old for CUDA {cuda}",
            ("nvidia-smi --query-gpu=driver_version --format=csv",), (FIX_DRIVER, FIX_WHEEL), "driver-too-old"),
    Verdict(NOT_VISIBLE, VISIBILITY, "no GPU visible",
            ("echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES",
             "ls -l /dev/nvidia*", "env | grep -i -e NVIDIA_DRIVER_CAPABILITIES -e SLURM_JOB_GPUS"),
            (FIX_ACCESS, FIX_DRIVER), "not-visible"),
    Verdict(ARCH_UNSUPPORTED, ARCHITECTURE, "GPU architecture not in the build",
            ('python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"',),
            (FIX_WHEEL,), "arch-unsupported"),
    Verdict(OTHER, OUTSIDE, "outside the NVIDIA driver stack refenv judges", label="other"),
    Verdict(CANNOT_TELL, UNDECIDED, "not enough in this report to tell what keeps torch from the GPU",
            label="cannot-tell"),
)
BY_CODE: Mapping[str, Verdict] = {v.code: v for v in TABLE}
# The classifier's verdicts, in the order the stack is examined: the primary verdict is the first failing one.
VERDICTS = tuple(v.code for v in TABLE if v.family not in (OUTSIDE, UNDECIDED))
FAILING = tuple(v.code for v in TABLE if v.failing)
# What an answer to a pasted report may say: a verdict, OTHER or CANNOT_TELL.
ANSWERS = tuple(v.code for v in TABLE)


def verdict_of(code: str) -> Verdict:
    """The row of `code`; ValueError naming the known codes for any other."""
    try:
        return BY_CODE[code]
    except KeyError:
        raise ValueError(f"unknown verdict {code!r}; expected one of {', '.join(ANSWERS)}") from None


def _check_table() -> None:
    """The table is whole: one row per code, every family and kind of fix known, a failure has a fix."""
    assert len(BY_CODE) == len(TABLE), "one row per verdict"
    assert len({v.label for v in TABLE}) == len(TABLE), "one label per verdict"
    for v in TABLE:
        assert v.family in (WORKS, OUTSIDE, UNDECIDED, *FAILURES), v.code
        assert set(v.fixes) <= set(FIX_KINDS), v.code
        assert bool(v.fixes) == v.failing, f"{v.code}: a failing verdict names its fix, and only a failing one"


_check_table()

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
class Assessment(Record):
    """How the answer to a pasted report was weighed: its verdict and confidence, what it rests on, what it
    could not rule out, and the commands to ask the reporter for next (harness/intake/assess.py)."""

    verdict: str                   # one of ANSWERS: a verdict, OTHER or CANNOT_TELL
    confidence: str                # one of CONFIDENCES
    rests_on: Tuple[str, ...]      # the facts and clues the verdict rests on, the deciding one first
    competing: Tuple[str, ...]     # verdicts it could not rule out
    ask: Tuple[str, ...]           # commands to ask the reporter for next
    why: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in BY_CODE:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {', '.join(ANSWERS)}")
        if self.confidence not in CONFIDENCES:
            raise ValueError(f"unknown confidence {self.confidence!r}; expected one of {', '.join(CONFIDENCES)}")


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
    assessment: Optional[Assessment] = optional_key()

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
