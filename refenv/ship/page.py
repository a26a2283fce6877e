"""`invoke web`: the paste page as a folder anyone can host (any static file server), `dist/web/` by default.

refenv/web/ (package data) holds the page (index.html, app.js, style.css) and the Python it runs (answer.py);
the folder gets them, the single-file diagnoser (refenv-diagnose.pyz, the harness the page imports) and Pyodide's files
under pyodide/. The page fetches nothing else: its Content-Security-Policy allows only its own origin.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from refenv import paths
from refenv.errors import RefenvError
from refenv.ship import pyodide, pyz

PAGE_FILES = ("index.html", "app.js", "style.css", "answer.py")


@dataclass(frozen=True)
class Site:
    folder: Path
    archive: pyz.Build
    files: tuple[Path, ...]
    bytes: int                      # all of them together, as written


def build(root: Path, folder: Path, tarball: Path | None = None) -> Site:
    """Write the page's folder, its harness from the tree at `root` (the folder holding harness/); Pyodide from
    `tarball`, else the pinned npm package."""
    source = paths.web_dir()
    missing = [name for name in PAGE_FILES if not (source / name).is_file()]
    if missing:
        raise RefenvError(f"{source}: the page's {', '.join(missing)} missing (reinstall refenv)")
    package = tarball or pyodide.fetch()
    if folder.exists():
        if not (folder / "index.html").is_file() and any(folder.iterdir()):
            raise RefenvError(f"{folder}: not empty and not a page folder refenv wrote; choose another --out")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files = [Path(shutil.copyfile(source / name, folder / name)) for name in PAGE_FILES]
    files += pyodide.extract(package, folder / "pyodide")
    archive = pyz.build(root, folder / pyz.NAME)
    files.append(archive.path)
    return Site(folder, archive, tuple(files), sum(p.stat().st_size for p in files))
