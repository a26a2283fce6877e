"""A team's repository: start its matrix (`init`), and tell two runs apart as its CI gate does (`diff`)."""

from __future__ import annotations

from pathlib import Path

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import USAGE, guarded

REGRESSED = 1


@task(iterable=["image"], help={
    "image": "an image to validate instead of the folder's Dockerfiles (repeat for more), e.g. "
             "nvcr.io/nvidia/pytorch:25.01-py3",
    "drivers": "the driver branches your fleet runs, e.g. 535,570,580 (default: every branch refenv simulates, and "
               "its fault profiles)",
    "force": "overwrite an existing matrix file",
    "matrix": "the file to write (default: matrix.yaml)",
})
@guarded
def init(c: Context, image: list[str] | None = None, drivers: str = "", force: bool = False,
         matrix: str = "matrix.yaml") -> None:
    """Write a commented matrix.yaml for this repository: an environment per Dockerfile (or --image), the hosts
    of your driver branches, the scenarios."""
    from refenv.model import matrix_yaml, scaffold

    target = Path(matrix)
    if target.exists() and not force:
        raise Exit(f"refenv init: {target} exists; edit it, or write it anew with --force", code=USAGE)
    folder = target.resolve().parent
    dockerfiles = [] if image else scaffold.find_dockerfiles(folder)
    if not dockerfiles and not image:
        raise Exit(f"refenv init: no Dockerfile in {folder} (looked for Dockerfile, Dockerfile.*, *.Dockerfile and "
                   f"Containerfile, {scaffold.MAX_DEPTH} folders deep); run it in the repository that holds your "
                   "Dockerfile, or name the image to validate: refenv init --image REGISTRY/NAME:TAG", code=USAGE)
    envs = scaffold.plan(dockerfiles, image or [], folder.name)
    hosts = scaffold.hosts(drivers or None)
    text = scaffold.matrix_text(envs, hosts)
    matrix_yaml.parse(text, str(target))  # what it writes is a matrix refenv reads, or nothing is written
    folder.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}:")
    for e in envs:
        print(f"  environment {e.name}: " + (f"built from {e.dockerfile}" if e.dockerfile else f"image {e.image}"))
    print(f"  hosts: none (no driver), {', '.join(hosts)} (refenv's simulated driver)")
    print(f"  scenarios: {', '.join(s[0] for s in scaffold.SCENARIOS)}")
    print("next: refenv matrix --dry-run (each cell's expected verdict, no engine), then refenv matrix")


@task(positional=["base", "new"], help={
    "base": "the base run: its folder or its cells.json (e.g. the main branch's)",
    "new": "the new run: its folder or its cells.json (e.g. the pull request's)",
})
@guarded
def diff(c: Context, base: str, new: str) -> None:
    """What changed between two runs: the hosts that lost or gained a GPU, the extensions that broke (exit 1 on
    a loss)."""
    from refenv.model.rundoc import load_run
    from refenv.report import diff as run_diff

    d = run_diff.diff(load_run(Path(base)), load_run(Path(new)))
    print("\n".join(run_diff.lines(d)))
    if d.regressed:
        raise Exit(code=REGRESSED)
