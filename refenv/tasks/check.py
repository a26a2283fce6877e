"""`refenv check`: a matrix row predicted from a Dockerfile (or every row of a matrix.yaml) in under a second, before
anything is built. Its imports stay light (no engine library, no templates, no rich): it runs in editors and in
pre-commit hooks. The `refenv` program runs its plain command lines through a quick door (refenv.cli) that
skips invoke altogether; this task is the door for every other form (core options, `--path`, `-jn`)."""

from __future__ import annotations

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import guarded


@task(positional=["path"],
      help={"path": "a Dockerfile or a matrix.yaml (default: ./matrix.yaml, else ./Dockerfile)",
            "drivers": "the driver branches to predict for, e.g. 535,570,580 (default: the matrix's hosts, or every "
                       "branch refenv simulates)",
            "json": "write the refenv.check JSON document instead of text",
            "no_inspect": "never ask the engine for a FROM image's labels (names alone)"})
@guarded
def check(c: Context, path: str | None = None, drivers: str = "", json: bool = False, no_inspect: bool = False) -> None:
    """Predict the matrix row of a Dockerfile (every host x scenario verdict, readiness) and lint it, without
    building; exit 1 on an error finding or where torch would get a GPU on no host, 2 on bad input."""
    from refenv.check import command

    code = command.run(path or "", drivers, as_json=json, no_inspect=no_inspect)
    if code:
        raise Exit(code=code)
