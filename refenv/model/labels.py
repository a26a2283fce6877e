"""The labels refenv puts on every image and container it makes: how runs, kinds and leftovers are found.

Plain constants, so the planners that write them (runspec, images, baseimage, publish) need no engine.
"""

from __future__ import annotations

MANAGED = "refenv.managed"          # on everything refenv makes: `invoke clean` reaps by it
KIND = "refenv.kind"                # base, deps, deps-build, environment, cell, ldcache, release, gpu-check
RUN = "refenv.run"                  # the run a container belongs to: Ctrl-C removes all of a run by it
CELL = "refenv.cell"                # the cell a container runs
ENVIRONMENT = "refenv.environment"  # the environment a build container installs
CONTENT_HASH = "refenv.content-hash"
DEPS_BUILD = "deps-build"


def of_run(run_id: str) -> dict[str, str]:
    """The filter that finds every container of one run."""
    return {RUN: run_id}
