"""`refenv compat`: what compat.json knows of a torch release, and (`refenv compat refresh`) what a package index
knows that it does not."""

from __future__ import annotations

import json
from pathlib import Path

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import USAGE, guarded

CHANGED = 1


@task(positional=["what"], iterable=["index"], help={
    "what": "a torch release (2.14 or 2.14.1): its builds, minimum drivers and architectures; or `refresh`: read "
            "torch's releases from a package index and print what differs from compat.json",
    "index": "for refresh: a simple-API index root (repeat for more; default https://pypi.org/simple), e.g. "
             "https://download.pytorch.org/whl/cu130 for PyTorch's own cu130 builds",
    "write": "for refresh: write what the index says into compat.json (its sources kept, the refresh named)",
    "table": "for refresh: the compat.json to compare and write (default: the one refenv reads)",
})
@guarded
def compat(c: Context, what: str, index: list[str] | None = None, write: bool = False, table: str = "") -> None:
    """A torch release's builds, minimum drivers and GPU architectures; `compat refresh` reads new releases from
    the package index (exit 1 when compat.json is behind it, unless --write wrote them)."""
    from harness import compat as tables
    from refenv import paths, refresh, releases

    if what != "refresh":
        if index or write or table:
            raise Exit("refenv compat: --index, --write and --table go with `refenv compat refresh`", code=USAGE)
        try:
            print("\n".join(releases.lines(releases.release_facts(what))))
        except releases.UnknownRelease as exc:
            raise Exit(f"refenv compat: {exc}", code=USAGE) from None
        return
    path = Path(table) if table else tables.DATA_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        tables.validate(raw)
    except (OSError, ValueError) as exc:
        raise Exit(f"refenv compat refresh: {path}: {exc}", code=USAGE) from None
    r = refresh.refresh(index or [refresh.PYPI], raw, paths.wheelhouse())
    print("\n".join(refresh.lines(r)))
    behind = [ch for ch in r.changes if ch.kind != "architectures"]
    if write and behind:
        refresh.write(raw, r, path)
        print(f"wrote {path}")
    elif behind:
        print("compat.json is behind the index: `refenv compat refresh --write` writes it")
        raise Exit(code=CHANGED)
