"""`refenv check`: a matrix row predicted from a Dockerfile (or every row of a matrix.yaml) in about a second, before
anything is built. Its imports stay light (no engine library, no templates, no rich): it runs in editors and in
pre-commit hooks."""

from __future__ import annotations

import json as jsonlib

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import guarded

NOT_GOOD = 1


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
    from refenv.check import checker, report

    checked = checker.check(path or "", drivers, use_engine=not no_inspect)
    print(jsonlib.dumps(report.document(checked), indent=2) if json else report.text(checked))
    if not all(x.good for x in checked):
        raise Exit(code=NOT_GOOD)
