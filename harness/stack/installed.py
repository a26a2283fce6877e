"""What is installed for this interpreter: each distribution's name, version, requirements, files, modules.

Read through `importlib.metadata` (Python 3.8+): the METADATA, RECORD and top_level.txt that pip, uv and
conda write beside each package. A distribution without a RECORD (some conda and `setup.py develop` installs)
is listed by walking its top-level packages instead, up to a bound.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace

MAX_WALK = 20000          # files listed per RECORD-less distribution
MAX_TEXT = 1 << 20        # bytes read of one metadata file
_SO_RE = re.compile(r"\.so(\.\d{1,6}){0,4}$")
_MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,100}")


@dataclass(frozen=True)
class Installed:
    name: str
    key: str                      # normalised: lower case, '-' for runs of -_.
    version: str
    root: str                     # the folder its RECORD paths are relative to
    files: tuple[str, ...]
    requires: tuple[str, ...]
    modules: tuple[str, ...]      # its top-level importable names
    listed: bool                  # False when its files were found by walking, not read from a RECORD
    also: tuple[str, ...] = ()    # other installs of the same name further down the path, or beside it: versions

    def path(self, rel: str) -> str:
        return os.path.normpath(os.path.join(self.root, rel))

    @property
    def shared_objects(self) -> tuple[str, ...]:
        return tuple(f for f in self.files if _SO_RE.search(f) and "/__pycache__/" not in f)

    def read_text(self, rel: str) -> str | None:
        try:
            with open(self.path(rel), "rb") as f:
                return f.read(MAX_TEXT).decode("utf-8", "replace")
        except OSError:
            return None


def normalise(name: str) -> str:
    return re.sub(r"[-_.]{1,50}", "-", name).lower()


def _module_of(rel: str) -> str | None:
    head, _, rest = rel.partition("/")
    if head.endswith((".dist-info", ".egg-info", ".data")) or head in ("..", "") or head.startswith("__"):
        return None
    name = head.split(".")[0] if not rest else head
    return name if _MODULE_RE.fullmatch(name) and (rest or head.endswith((".py", ".so", ".pyd"))) else None


def _walk(root: str, modules: list[str]) -> list[str]:
    out: list[str] = []
    for module in modules:
        top = os.path.join(root, module)
        for folder, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                out.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
                if len(out) >= MAX_WALK:
                    return out
    return out


def _read(dist: object) -> Installed | None:
    meta = getattr(dist, "metadata", None)
    name = meta["Name"] if meta is not None else None
    version = getattr(dist, "version", None)
    if not name or not version:
        return None
    try:
        root = str(dist.locate_file(""))  # type: ignore[attr-defined]
        record = dist.files  # type: ignore[attr-defined]
        top_level = dist.read_text("top_level.txt") or ""  # type: ignore[attr-defined]
        requires = tuple(dist.requires or ())  # type: ignore[attr-defined]
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    files = [str(p).replace(os.sep, "/") for p in record] if record is not None else []
    modules = [m for m in top_level.split() if _MODULE_RE.fullmatch(m)]
    if not modules:
        modules = sorted({m for m in (_module_of(f) for f in files) if m})
    if record is None:
        files = _walk(root, modules)
    return Installed(str(name), normalise(str(name)), str(version), root, tuple(files), requires, tuple(modules),
                     record is not None)


def distributions(path: list[str] | None = None) -> list[Installed]:
    """Every distribution on `path` (default sys.path), the first of each name (the one `import` finds)."""
    from importlib import metadata

    seen: dict[str, Installed] = {}
    for dist in metadata.distributions(path=path if path is not None else sys.path):
        found = _read(dist)
        if found is None:
            continue
        first = seen.get(found.key)
        if first is None:
            seen[found.key] = found
        elif found.version not in first.also:
            # a second dist-info of the name: `pip install --no-deps` over another install, or conda and pip both
            seen[found.key] = replace(first, also=(*first.also, f"{found.version} in {found.root}"))
    return sorted(seen.values(), key=lambda d: d.key)
