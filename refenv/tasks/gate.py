"""A CI gate's steps around `refenv matrix` (matrix/action.yml runs them): the disk a run needs (`disk`), the
job's summary and outputs (`summary`), and refenv's base images kept in a cache folder between runs (`bases`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import USAGE, guarded, load_matrix

NOT_GOOD = 1


@task(help={"matrix": "the matrix file (default: matrix.yaml)",
            "env": "only these environments (glob; repeat or comma-separate)"}, iterable=["env"])
@guarded
def disk(c: Context, matrix: str = "matrix.yaml", env: list[str] | None = None) -> None:
    """Predict the disk a run needs (every environment at once, and one at a time) against the disk free here;
    exit 1 at once where even one environment at a time cannot fit, with what to do."""
    from refenv import paths
    from refenv.builder import buildkit, wheelhouse
    from refenv.engines.docker.sdk import Engine
    from refenv.run import disk as disk_plan

    m = load_matrix(matrix, env, None, None)
    engine = Engine.connect()
    needs = []
    for e in m.environments:
        team = e.team
        if team is None:
            lock = wheelhouse.read_lock(wheelhouse.lock_path(m.path, e.name))
            wheels = {w.filename: w.size for w in lock.wheels} if lock else {}
            needs.append(disk_plan.recipe_need(e.name, wheels) if lock else disk_plan.team_need(e.name, None))
        elif team.image:
            needs.append(disk_plan.team_need(e.name, engine.image_size(team.image)))
        else:
            assert team.dockerfile
            text = Path(team.dockerfile).read_text(encoding="utf-8", errors="replace")
            bases = buildkit.base_images(text, team.dockerfile, dict(team.build_args))
            sizes = [engine.image_size(b) for b in bases]
            known = None if not sizes or None in sizes else max(s for s in sizes if s is not None)
            needs.append(disk_plan.team_need(e.name, None, known))
    root = engine.root_dir()
    places = {Path(p) for p in (root, str(paths.cache_root())) if p}
    free = min(shutil.disk_usage(_existing(p)).free for p in places)
    p = disk_plan.plan(needs, free, any(h.kind == "simulated" for h in m.hosts),
                       any(e.team is None for e in m.environments))
    print("\n".join(disk_plan.lines(p)))
    _outputs({"disk": p.verdict, "low-disk": str(p.verdict != disk_plan.FITS).lower()})
    if p.verdict == disk_plan.TOO_SMALL:
        raise Exit(code=NOT_GOOD)


def _chunks(f: IO[bytes]) -> Iterator[bytes]:
    while chunk := f.read(1 << 20):
        yield chunk


def _existing(path: Path) -> Path:
    """The path, or its nearest folder that exists (a cache not made yet lives on its parent's disk)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _outputs(values: dict[str, str]) -> None:
    """The values into $GITHUB_OUTPUT where a runner set it."""
    from refenv.report.gate import output_lines

    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(output_lines(values))


@task(help={
    "run": "the run: its folder or its cells.json (default: results/latest)",
    "baseline": "a baseline run's folder or cells.json (e.g. the main branch's): the summary says what changed",
    "step-summary": "the Markdown file to append the summary to (default: $GITHUB_STEP_SUMMARY, else print it)",
})
@guarded
def summary(c: Context, run: str = "results/latest", baseline: str | None = None,
            step_summary: str | None = None) -> None:
    """Write a run's readiness and stack findings as a CI job's summary, and its outputs (status, gpu-hosts,
    hosts-lost, run) to $GITHUB_OUTPUT."""
    from refenv.model.rundoc import load_run
    from refenv.report import diff as run_diff
    from refenv.report import gate

    folder = Path(run).resolve()
    doc = load_run(folder)
    folder = folder.parent if folder.is_file() else folder
    d = None
    if baseline:
        base = Path(baseline)
        if not base.exists():
            raise Exit(f"refenv summary: the baseline {base} is not there (a run folder or its cells.json)",
                       code=USAGE)
        d = run_diff.diff(load_run(base), doc)
    text = gate.step_summary(doc, d)
    target = step_summary or os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text)
    else:
        print(text)
    values = gate.outputs(doc, folder, d)
    _outputs(values)
    print(f"refenv summary: {values['status']}; GPU on: {values['gpu-hosts']}"
          + (f"; lost: {values['hosts-lost']}" if values["hosts-lost"] else ""))


@task(help={"save": "write the base images of the matrix's recipe environments into this folder (a CI cache)",
            "load": "load the base images this folder holds into the engine",
            "matrix": "the matrix whose bases are saved (default: matrix.yaml)"})
@guarded
def bases(c: Context, save: str | None = None, load: str | None = None, matrix: str = "matrix.yaml") -> None:
    """Keep refenv's base images in a folder between CI runs: --save FOLDER after a run, --load FOLDER before one."""
    from refenv.builder.baseimage import bootstrap_tag
    from refenv.engines.docker.sdk import Engine

    if bool(save) == bool(load):
        raise Exit("refenv bases: give --save FOLDER or --load FOLDER", code=USAGE)
    engine = Engine.connect()
    if load:
        archives = sorted(Path(load).glob("*.tar"))
        if not archives:
            print(f"refenv bases: no base image saved in {load} (a cold cache): a run makes the base it needs")
        for archive in archives:
            with archive.open("rb") as f:
                loaded = engine.load(_chunks(f))
            print(f"refenv bases: loaded {', '.join(loaded) or archive.name}")
        return
    assert save
    m = load_matrix(matrix, None, None, None)
    tags = sorted({e.base.image or bootstrap_tag(e.base.bootstrap) for e in m.environments if e.team is None})
    folder = Path(save)
    folder.mkdir(parents=True, exist_ok=True)
    for tag in tags:
        archive = folder / (tag.replace("/", "_").replace(":", "_") + ".tar")
        if archive.is_file() or engine.image_id(tag) is None:
            continue  # kept already (a base is named by its recipe's digest), or not made by this run
        tmp = archive.with_suffix(".tmp")
        with tmp.open("wb") as f:
            for chunk in engine.save(tag):
                f.write(chunk)
        tmp.replace(archive)
        print(f"refenv bases: saved {tag} to {archive} ({archive.stat().st_size / 1e9:.2f} GB)")
    if not tags:
        print("refenv bases: the matrix has no refenv recipe environment, so no base image to keep")
