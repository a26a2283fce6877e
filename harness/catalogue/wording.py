"""The exact words an entry prints, for a given torch release: for expectations and simulated hosts."""

from __future__ import annotations

import re

from harness.catalogue.entries import Entry, Text
from harness.catalogue.load import entries, torch_init_prefix
from harness.catalogue.lookup import by_cuda_error, entry

_RELEASE_RE = re.compile(r"^(\d+)\.(\d+)")
_FIELD_RE = re.compile(r"\{(\w+)\}")


def _release(version: str) -> tuple[int, int]:
    m = _RELEASE_RE.match(version.strip())
    if not m:
        raise ValueError(f"not a torch release: {version!r}")
    return int(m.group(1)), int(m.group(2))


def wording(e: Entry, release: str | None = None) -> Text:
    """The wording in force at this release (the newest when None or for a non-torch message)."""
    if release is None:
        return e.texts[-1]
    at = _release(release)
    chosen = e.texts[0]
    for t in e.texts:
        if t.since == "*" or _release(t.since) <= at:
            chosen = t
    return chosen


def fill(template: str, params: dict[str, str]) -> str:
    """Put the parameters into a template; ValueError naming one that is missing."""
    def put(m: re.Match[str]) -> str:
        if m.group(1) not in params:
            raise ValueError(f"no value for {{{m.group(1)}}} in {template[:60]!r}")
        return params[m.group(1)]
    return _FIELD_RE.sub(put, template)


def render(e: Entry, release: str | None = None, **params: object) -> str:
    return fill(wording(e, release).template, {k: str(v) for k, v in params.items()})


def torch_text(ident: str, release: str | None = None, **params: object) -> str:
    """What torch `release` prints for entry `ident`, e.g. torch_text('torch.driver_too_old', '2.14', found=12080)."""
    return render(entry(ident), release, **params)


def torch_words_for_cuda_error(code: int, release: str | None = None) -> str:
    """What torch `release` says when cudaGetDeviceCount fails with this CUDA error: its own sentence for
    the codes it names (3, 999), else 'Unexpected error ... Error N: <the runtime's text>' (c10 CUDAFunctions.cpp)."""
    own = next((e for e in entries() if e.layer == "torch" and e.code is not None and e.code.value == code), None)
    if own is not None:
        return render(own, release)
    row = by_cuda_error(code)
    if row is None:
        raise ValueError(f"CUDA error {code} is not in the failure catalogue")
    return render(entry("torch.unexpected_error"), release, code=code, text=row.text)


def torch_message(init_warning: str | None, init_error: str | None) -> str | None:
    """What torch said when CUDA did not initialise, as it printed it: its warning after its prefix, else
    what torch.cuda.init() raised; None when it said neither."""
    if init_warning:
        return torch_init_prefix() + init_warning
    return init_error or None
