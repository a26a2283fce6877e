"""Find the stack among the installed distributions and read what each holds (the I/O of harness/stack).

A distribution belongs to the stack for what it is or ships, never for its name alone: torch; one whose
requirements name torch; one torch's own metadata pins (triton, the nvidia-* and cuda-* wheels); a CUDA
library wheel (nvidia-*, cuda-*); one with a shared object carrying a `.nv_fatbin` section. Names the field
knows (KNOWN) are recognised as well, so an extension installed without metadata is not missed. For each:
its requirements on the rest of the stack, what it was built for, the architectures in its fatbins
(NVIDIA's own library wheels are listed, not read: their coverage is NVIDIA's), and its import in a child.
"""

from __future__ import annotations

import platform
import re
import sys
import time
from dataclasses import dataclass, field, replace
from threading import Thread

from harness.schema.stack_document import Distribution, ImportTrial, Inventory, Library, Requirement, Tally
from harness.stack import builtfor, elf, fatbin, requirements, trials
from harness.stack.installed import Installed, distributions

KNOWN = ("torchvision", "torchaudio", "xformers", "triton", "bitsandbytes", "flash-attn", "vllm", "deepspeed",
         "apex", "cupy")
TORCH_LINKS = ("libtorch", "libc10")
_HASHED_RE = re.compile(r"\.[0-9a-f]{8}\.so")


def _library_kind(d: Installed) -> bool:
    return d.key.startswith(("nvidia-", "cuda-"))


def _known(d: Installed) -> bool:
    return d.key in KNOWN or d.key.startswith("cupy")


def pins_of(torch: Installed | None) -> dict[str, requirements.Requirement]:
    """What torch's metadata pins: an exact (==, ~=, ===) requirement, or any on a CUDA library wheel (sympy>=1.13.3
    is a dependency, not a pin)."""
    if torch is None:
        return {}
    return {r.key: r for r in requirements.active(list(torch.requires))
            if any(op in r.spec for op in ("==", "~=")) or r.key.startswith(("nvidia-", "cuda-"))}


def bundled(rel: str) -> bool:
    """A library grafted into the wheel by auditwheel (`torchvision.libs/libnvjpeg.36e11081.so.13`): NVIDIA's or a
    system library's code, not the distribution's own."""
    folder, _, name = rel.rpartition("/")
    return folder.endswith(".libs") or bool(_HASHED_RE.search(name))


def _reasons(d: Installed, torch_pins: dict[str, requirements.Requirement]) -> list[str]:
    why = []
    if d.key == "torch":
        why.append("torch itself")
    for req in requirements.active(list(d.requires)):
        if req.key == "torch":
            why.append(f"requires torch{req.spec}")
    if d.key in torch_pins:
        why.append(f"torch requires {d.key}{torch_pins[d.key].spec}")
    if _library_kind(d):
        why.append("a CUDA library wheel")
    if _known(d):
        why.append("a known CUDA extension")
    return why


@dataclass
class _Tally:
    """What was read, for the record: every shared object opened once counts once."""

    distributions: int = 0
    objects: set[str] = field(default_factory=set)
    containers: int = 0

    def record(self) -> Tally:
        return Tally(self.distributions, len(self.objects), self.containers)


def _ships_kernels(d: Installed, tally: _Tally) -> bool:
    """Whether one of its own shared objects has a `.nv_fatbin` section (its section table only is read)."""
    for rel in d.shared_objects:
        tally.objects.add(d.path(rel))
        try:
            if elf.read(d.path(rel)).section(".nv_fatbin") is not None:
                return True
        except (OSError, elf.ElfError):
            continue
    return False


def _module(d: Installed) -> str | None:
    if _library_kind(d):
        return None
    wanted = d.key.replace("-", "_")
    if wanted in d.modules:
        return wanted
    return next((m for m in d.modules if not m.startswith("_") and m not in ("tests", "test")), None)


def _libraries(d: Installed, tally: _Tally) -> tuple[list[Library], dict[str, tuple[str, ...]], list[str]]:
    """Each shared object with GPU code (its architectures), every object's DT_NEEDED, and what could not be read."""
    libs: list[Library] = []
    needed: dict[str, tuple[str, ...]] = {}
    errors: list[str] = []
    for rel in d.shared_objects:
        tally.objects.add(d.path(rel))
        try:
            with elf.mapped(d.path(rel)) as data:
                image = elf.parse(data)
                needed[rel] = image.needed
                section = image.section(".nv_fatbin")
                if section is None:
                    continue
                archs = fatbin.summarize(fatbin.containers(data, section.offset, section.size))
        except (OSError, elf.ElfError) as exc:
            errors.append(f"{rel}: {exc}")
            continue
        tally.containers += archs.containers
        libs.append(Library(rel, archs.containers, archs.baseline, archs.extra, archs.ptx_isa, archs.sets,
                            bundled(rel), any(n.startswith(TORCH_LINKS) for n in image.needed),
                            next((n for n in image.needed if n.startswith("libcudart")), None)))
    return libs, needed, errors


def _arch_union(libs: list[Library]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The distribution's architectures: those of its main library (the one with the most kernels: for torch,
    libtorch_cuda.so, whose list is what torch.cuda.get_arch_list() reports; its magma library has its own);
    what its other libraries or some kernels carry besides, apart. Each library keeps its own list."""
    own = [lib for lib in libs if not lib.bundled]
    if not own:
        return (), ()
    main = max(own, key=lambda lib: lib.containers)
    arch = fatbin.sort_names(main.arch)
    return arch, fatbin.sort_names(a for lib in own for a in (*lib.arch, *lib.extra) if a not in arch)


def inventory(path: list[str] | None = None, import_timeout: float = trials.TIMEOUT_S,
              imports: bool = True) -> Inventory:
    """The stack of this interpreter's environment (or of the site folders in `path`), as a JSON-able record."""
    start = time.monotonic()
    found = distributions(path)
    tally = _Tally(len(found))
    torch = next((d for d in found if d.key == "torch"), None)
    torch_pins = pins_of(torch)
    members: list[tuple[Installed, list[str]]] = []
    for d in found:
        why = _reasons(d, torch_pins)
        if not why and _ships_kernels(d, tally):
            why.append("ships CUDA kernels")
        if why:
            members.append((d, why))
    plan = [(m, [d.path(rel) for rel in d.shared_objects if not bundled(rel)]) for d, _ in members
            for m in [_module(d)] if m]
    plan.sort(key=lambda step: step[0] != "torch")  # torch first: every extension imports it anyway
    with _Imports(plan if imports else [], import_timeout) as pending:
        records = [_record(d, why, torch_pins, tally) for d, why in members]
        tried = pending.results()
    records = [replace(rec, trial=tried.get(rec.module) if rec.module else None) for rec in records]
    return Inventory(platform.python_version(), sys.executable, tuple(records), tally.record(), bool(imports),
                     round(time.monotonic() - start, 3))


def _record(d: Installed, why: list[str], torch_pins: dict[str, requirements.Requirement],
            tally: _Tally) -> Distribution:
    kind = "torch" if d.key == "torch" else "cuda-library" if _library_kind(d) else "extension"
    libs: list[Library] = []
    needed: dict[str, tuple[str, ...]] = {}
    errors: list[str] = []
    if kind != "cuda-library":
        libs, needed, errors = _libraries(d, tally)
    arch, extra = _arch_union(libs)
    reqs = tuple(Requirement(r.key, r.spec) for r in requirements.active(list(d.requires)))
    return Distribution(d.name, d.key, d.version, builtfor.labelled_version(d), kind, tuple(why), reqs,
                        torch_pins[d.key].spec if d.key in torch_pins else None, builtfor.built_for(d, needed),
                        arch, extra, tuple(libs), len(d.shared_objects), _module(d), d.listed, tuple(d.also),
                        tuple(errors))


class _Imports:
    """The import child, started on entry so that it imports torch while the parent reads the ELF files."""

    def __init__(self, plan: list[tuple[str, list[str]]], timeout: float) -> None:
        self.plan = plan
        self.timeout = timeout
        self._done: dict[str, ImportTrial] | None = None
        self._thread: Thread | None = None

    def __enter__(self) -> _Imports:
        if self.plan:
            def work() -> None:
                self._done = trials.import_all(self.plan, self.timeout)

            self._thread = Thread(target=work, name="stack-imports", daemon=True)
            self._thread.start()
        return self

    def results(self) -> dict[str, ImportTrial]:
        if self._thread is not None:
            self._thread.join()
        return self._done or {}

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._thread.join()
