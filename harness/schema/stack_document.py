"""The `stack` section of a harness document, as typed records: the inventory, the host, the judgement.

`python -m harness stack`, `diagnose --stack` and `cell --stack on` write it (harness/stack/section.py); the
host side reads an image's inventory from it once and judges it again for each cell's host
(refenv/run/imagefacts.py, refenv/run/stackcheck.py). The keys are those the section always had: a
distribution's import trial is written under `import` (a Python keyword, so the field is `trial`).

Annotations use typing.Optional / Tuple / Dict: the codec evaluates them, and the harness runs on 3.8.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from harness.schema.jsondata import decode_fields, encode
from harness.schema.verdicts import SEVERITY_ERROR, Finding

IMPORT_KEY = "import"


@dataclass(frozen=True)
class Requirement:
    """One Requires-Dist of a distribution: the name it requires (normalised) and the version spec ('' for any)."""

    name: str
    spec: str = ""


@dataclass(frozen=True)
class BuiltFor:
    """What a distribution was built for, and where that was read (harness/stack/builtfor.py)."""

    cuda: Optional[str] = None           # '13.0', or a major alone ('12') when only that is known
    cuda_from: Optional[str] = None
    torch: Optional[str] = None          # the torch release it was built against, where it records one
    torch_from: Optional[str] = None
    per_cuda: Tuple[str, ...] = ()       # CUDA versions it ships a library for, each its own file


@dataclass(frozen=True)
class Library:
    """One shared object with GPU code: the architectures of its fatbins (harness/stack/fatbin.py) and its links."""

    path: str                            # relative to the site folder
    containers: int = 0
    arch: Tuple[str, ...] = ()           # in every container: what the library as a whole was built for
    extra: Tuple[str, ...] = ()          # in some containers only
    ptx_isa: Optional[str] = None        # the newest PTX ISA among its PTX entries
    sets: Tuple[Tuple[str, ...], ...] = ()
    bundled: bool = False                # grafted in by auditwheel: not the distribution's own code
    links_torch: bool = False
    cudart: Optional[str] = None         # the libcudart it loads, 'libcudart.so.13'


@dataclass(frozen=True)
class ImportTrial:
    """A module's import in a child process (harness/stack/trial.py): whether it imported, and the exact texts."""

    module: str = ""
    ok: bool = False
    error: Optional[str] = None          # 'Type: message', exactly as raised
    causes: Tuple[str, ...] = ()
    warnings: Tuple[str, ...] = ()
    log: Tuple[str, ...] = ()
    output: Tuple[str, ...] = ()
    loader: Tuple[str, ...] = ()         # the dynamic loader's own words for each library that does not load
    seconds: Optional[float] = None


@dataclass(frozen=True)
class Distribution:
    """One distribution of the stack: why it belongs, what it requires, what it was built for, its code, its import."""

    name: str
    key: str
    version: str
    version_label: str = ""              # with its local label, '2.14.1+cu130'
    kind: str = "extension"              # torch, extension or cuda-library
    why: Tuple[str, ...] = ()
    requires: Tuple[Requirement, ...] = ()
    pinned_by_torch: Optional[str] = None
    built_for: BuiltFor = field(default_factory=BuiltFor)
    arch: Tuple[str, ...] = ()
    extra_arch: Tuple[str, ...] = ()
    libraries: Tuple[Library, ...] = ()
    shared_objects: int = 0
    module: Optional[str] = None
    files_listed: bool = True
    also_installed: Tuple[str, ...] = ()
    errors: Tuple[str, ...] = ()
    trial: Optional[ImportTrial] = None  # written as `import`; None where there is no module or none was tried

    def requires_torch(self) -> Optional[str]:
        """Its spec on torch ('' for any version), or None when it does not require torch."""
        return next((r.spec for r in self.requires if r.name == "torch"), None)

    @property
    def own_libraries(self) -> Tuple[Library, ...]:
        return tuple(lib for lib in self.libraries if not lib.bundled)

    @classmethod
    def from_dict(cls, data: Dict[str, object]) -> Distribution:
        fields = {k: v for k, v in data.items() if k not in (IMPORT_KEY, "trial")}
        if IMPORT_KEY in data:
            fields["trial"] = data[IMPORT_KEY]
        return decode_fields(cls, fields)

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {f.name: encode(getattr(self, f.name)) for f in dataclasses.fields(self)
                                  if f.name != "trial"}
        out[IMPORT_KEY] = encode(self.trial)
        return out


@dataclass(frozen=True)
class Tally:
    """What was read, for the record: every shared object opened once counts once."""

    distributions: int = 0
    shared_objects: int = 0
    fatbin_containers: int = 0


@dataclass(frozen=True)
class Inventory:
    """The stack of one Python environment (harness/stack/inventory.py)."""

    python: str = ""
    executable: str = ""
    distributions: Tuple[Distribution, ...] = ()
    read: Tally = field(default_factory=Tally)
    imports_tried: bool = True
    wall_s: float = 0.0

    def member(self, key: str) -> Optional[Distribution]:
        return next((d for d in self.distributions if d.key == key), None)


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str              # '8.9'


@dataclass(frozen=True)
class Host:
    """What of the host the stack is judged against; empty when judged without one."""

    gpus: Tuple[Gpu, ...] = ()
    driver_cuda: Optional[int] = None    # cuDriverGetVersion, e.g. 12080


@dataclass(frozen=True)
class Judgement:
    """The stack's findings on one host, worst first, and each distribution's state (harness/stack/findings.py)."""

    ready: bool = True
    status: Dict[str, str] = field(default_factory=dict)   # distribution -> ok | warning | broken
    findings: Tuple[Finding, ...] = ()

    @classmethod
    def of(cls, findings: Tuple[Finding, ...], status: Dict[str, str]) -> Judgement:
        return cls(not any(f.severity == SEVERITY_ERROR for f in findings), status, findings)

    @property
    def errors(self) -> Tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == SEVERITY_ERROR)


@dataclass(frozen=True)
class JudgedStack(Judgement):
    """The section as written: the inventory, the host it was judged against, and the judgement's keys beside
    them. A section whose inventory raised is the envelope's Failed instead (harness/schema/envelope.py)."""

    inventory: Inventory = field(default_factory=Inventory)
    host: Host = field(default_factory=Host)

    @classmethod
    def of_parts(cls, inventory: Inventory, host: Host, judgement: Judgement) -> JudgedStack:
        return cls(judgement.ready, dict(judgement.status), judgement.findings, inventory, host)

    def to_dict(self) -> Dict[str, object]:
        # The keys in the order the section has always had: inventory and host first.
        return {"inventory": encode(self.inventory), "host": encode(self.host), "ready": self.ready,
                "status": dict(self.status), "findings": encode(self.findings)}
