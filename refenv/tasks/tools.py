"""Housekeeping and what refenv ships: remove what it made (`clean`), the single-file diagnoser (`zipapp`),
the paste page (`web`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from invoke.context import Context
from invoke.tasks import task

from refenv import paths
from refenv.tasks.guard import guarded


@task(help={"cache": "also delete refenv's caches (wheelhouse, simulated driver, cell results)",
            "keep-images": "remove containers only",
            "stale": "remove only environment images superseded by a newer build of the same environment"})
@guarded
def clean(c: Context, cache: bool = False, keep_images: bool = False, stale: bool = False) -> None:
    """Remove every container and image labelled by refenv (and, with --cache, its caches)."""
    from refenv.engines.docker.sdk import Engine
    from refenv.engines.docker.sdk import stale as stale_ids
    from refenv.model.labels import MANAGED

    engine = Engine.connect()
    removed = engine.remove_containers({MANAGED: "true"})
    print(f"removed {removed} container(s)")
    if stale:
        old = [i for kind in ("environment", "deps")
               for i in stale_ids(engine.image_records({MANAGED: "true", "refenv.kind": kind}))]
        removed_ids = [image_id for image_id in old if engine.remove_unused_image(image_id)]
        kept = len(old) - len(removed_ids)
        print(f"removed {len(removed_ids)} superseded image(s)"
              + (f"; kept {kept} that a newer build still stands on" if kept else ""))
        return
    if not keep_images:
        # Environment images first, then the layers they stand on.
        ids = engine.images_labelled({MANAGED: "true"})
        for kind in ("environment", "release", "deps", "base"):
            for image_id in engine.images_labelled({MANAGED: "true", "refenv.kind": kind}):
                engine.remove_image(image_id)
        print(f"removed {len(ids)} image(s)")
    if shutil.which("podman"):
        # What runs with --engine podman left in Podman's storage: its containers, and the images copied there.
        from refenv.engines.podman.engine import remove_labelled

        containers, images = remove_labelled({MANAGED: "true"}, images=not keep_images)
        print(f"podman: removed {containers} container(s), {images} image(s)")
    if cache:
        # The wheelhouse and the build root too where REFENV_WHEELHOUSE / REFENV_BUILDROOT keep them elsewhere.
        for folder in dict.fromkeys((paths.cache_root(), paths.wheelhouse(), paths.build_root())):
            if folder.exists():
                shutil.rmtree(folder)
                print(f"removed {folder}")



@task(help={"out": "where to write the archive (default: dist/refenv-diagnose.pyz)"})
@guarded
def zipapp(c: Context, out: str = "dist/refenv-diagnose.pyz") -> None:
    """Write the single-file diagnoser: the harness as one zipapp that any Python 3.8+ runs.

    On the broken machine: python3 refenv-diagnose.pyz [--json] [--from FILE] (a version line comes first)."""
    from refenv.ship import pyz

    made = pyz.build(paths.harness_dir().parent, Path(out))
    print(f"wrote {made.path} ({made.path.stat().st_size // 1024} KiB, {made.files} files): refenv-diagnose "
          f"{made.version} ({made.commit})")
    print(f"on the broken machine: python3 {made.path.name}   (--json to paste back, --from FILE for a report)")


@task(help={"out": "the folder to write (default: dist/web)",
            "pyodide": "the tarball of `npm pack pyodide@VERSION` to use instead of fetching it with npm"})
@guarded
def web(c: Context, out: str = "dist/web", pyodide: str | None = None) -> None:
    """Build the paste page: a folder any static server can host, where a report pasted is diagnosed in the
    browser (Pyodide runs the harness; nothing leaves the page)."""
    from refenv.ship import page

    site = page.build(paths.harness_dir().parent, Path(out), Path(pyodide) if pyodide else None)
    print(f"wrote {site.folder} ({len(site.files)} files, {site.bytes / 1e6:.1f} MB; harness {site.archive.version} "
          f"({site.archive.commit}))")
    print(f"try it: python3 -m http.server --bind 127.0.0.1 --directory {site.folder} 8000   # then open "
          "http://127.0.0.1:8000/")


