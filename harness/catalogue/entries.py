"""The values of the failure catalogue: an entry, its patterns and texts, and a hit in a line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from harness.schema import FIX_ACCESS, FIX_DRIVER, FIX_REPAIR, FIX_WHEEL, Remedy

# Where a message comes from, in the order the stack is examined. "framework": what the frameworks built on
# torch say when torch has no device (they decide nothing alone); "extension": what is built on torch
# (torchvision, xformers, flash-attn, bitsandbytes, triton: their own words and the loader's about them);
# "pip": the installer's.
LAYERS = ("kernel", "nvml", "nvidia_smi", "cuda_driver", "cuda_runtime", "torch", "container", "docker", "framework",
          "extension", "pip")
# Which error-code space a code belongs to (CUresult, cudaError_t, nvmlReturn_t).
CODE_APIS = ("cuda_driver", "cuda_runtime", "nvml")
# What a fix does, and the kind of fix of the verdict table it is (harness/schema/verdicts.py: the driver
# installed or upgraded, another wheel, the driver repaired in place, the container's access);
# `remedies.render` has one renderer per kind, `refenv.reproduce.fix` acts on its kind of fix.
REMEDY_FIX = {
    "install_driver": FIX_DRIVER, "install_wheel": FIX_WHEEL,
    "reboot": FIX_REPAIR, "reload_modules": FIX_REPAIR, "load_module": FIX_REPAIR, "drop_from_library_path": FIX_REPAIR,
    "enable_gpu_access": FIX_ACCESS, "install_toolkit": FIX_ACCESS, "unset_variable": FIX_ACCESS,
    "add_capability": FIX_ACCESS, "expose_devices": FIX_ACCESS, "request_gpu": FIX_ACCESS,
    "reinstall_libraries": FIX_REPAIR, "fix_loader_path": FIX_REPAIR, "start_service": FIX_REPAIR,
    "fix_permissions": FIX_REPAIR, "set_compute_mode": FIX_REPAIR, "check_logs": FIX_REPAIR,
    "check_hardware": FIX_REPAIR, "restore_device_access": FIX_REPAIR, "generate_cdi_spec": FIX_REPAIR,
    "use_cdi_engine": FIX_REPAIR, "rebind_gpu": FIX_REPAIR,
    "attach_gpu": FIX_ACCESS,  # no NVIDIA GPU on the machine's PCI bus: a machine (or VM) given one
    "install_matching": FIX_WHEEL,  # an extension's build (the stack's fix; no finding of a diagnosis carries it)
}
REMEDY_KINDS = tuple(REMEDY_FIX)


@dataclass(frozen=True)
class Pattern:
    """A regex and a literal every match contains (the anchor, found first, case-insensitively).

    The regex is compiled when first used: a program that predicts from the catalogue's words and codes, and
    never scans text, does not pay for compiling every row's patterns (about a tenth of a second at start)."""

    anchor: str
    source: str

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.source)


@lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source)


@dataclass(frozen=True)
class Text:
    """The words printed from release `since` on ('*' for any); `{name}` marks a captured parameter."""

    since: str
    template: str


@dataclass(frozen=True)
class Code:
    """An error code and its name in its API (and NVML's error string, which differs from the text)."""

    api: str
    value: int
    name: str = ""
    text: str = ""


@dataclass(frozen=True)
class Entry:
    """One failure message: where it comes from, what it means, how to recognise it, and its fix."""

    id: str
    layer: str
    verdict: str  # one of harness.schema.VERDICTS, or "" for context that decides nothing alone
    meaning: str
    source: str
    patterns: tuple[Pattern, ...]
    texts: tuple[Text, ...]
    example: tuple[tuple[str, str], ...] = ()
    code: Code | None = None
    remedy: Remedy | None = None

    @property
    def text(self) -> str:
        """The newest wording, unrendered."""
        return self.texts[-1].template

    @property
    def code_value(self) -> int | None:
        return self.code.value if self.code else None


@dataclass(frozen=True)
class Hit:
    """An entry found in a line: the parameters it captured and where the match starts."""

    entry: Entry
    params: dict[str, str] = field(default_factory=dict)
    start: int = 0
    end: int = 0
    text: str = ""  # the matched words

    @property
    def id(self) -> str:
        return self.entry.id
