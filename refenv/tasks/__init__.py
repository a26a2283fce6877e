"""refenv's task collection: the `refenv` program's commands, and `invoke`'s in refenv's checkout (tasks.py).

  refenv init               write a matrix.yaml for this folder's Dockerfiles (or --image REF)
  refenv matrix             build every environment, run every cell, check expected against observed
  refenv matrix --env NEW --compare OLD      the same, and what moving from OLD to NEW changes on each host
  refenv compare OLD NEW    that comparison, read from the latest run
  refenv diff BASE NEW      what changed between two runs' cells.json: hosts that lost or gained a GPU
  refenv run --env E --host H --scenario S   one cell, with its full diagnosis
  refenv build [--env E]    build (or find) the environment images
  refenv lock [--env E]     re-resolve the wheels of an environment and rewrite its lock
  refenv reproduce REPORT   rebuild a user's stack from a pasted report (or `flags --torch ...`) on a simulated host
  refenv publish --registry HOST[:PORT]/NAMESPACE   push the environments a full matrix run proved (GPU somewhere)
  refenv fleet [--partition P]   per node of a Slurm (or Kubernetes) cluster: driver, GPUs, ready environments
  refenv clean              remove every container and image refenv made
  refenv disk               the disk a run needs (all environments, one at a time) against the disk free here
  refenv summary [--run R]  a run's readiness as a CI job's summary and outputs ($GITHUB_STEP_SUMMARY, $GITHUB_OUTPUT)
  refenv bases --save|--load FOLDER   refenv's base images kept in a CI cache folder
  refenv zipapp             write dist/refenv-diagnose.pyz: the harness as one file for any Python 3.8+
  refenv web                write dist/web/: the paste page, diagnosing in the browser (Pyodide)

Each task parses its arguments, calls refenv, prints, and raises Exit on expected errors; the exit codes are
refenv.tasks.guard's. Everything a task reads ships in the package (refenv.paths), so the program works in
any folder: ./matrix.yaml, ./results/, locks beside the matrix, caches in the user's cache folder.
"""

from __future__ import annotations

from invoke.collection import Collection

from refenv.tasks.gate import bases, disk, summary
from refenv.tasks.guard import EXIT_INTERNAL
from refenv.tasks.jobs import fleet, publish, reproduce
from refenv.tasks.matrix import build, compare, lock, matrix, run
from refenv.tasks.team import diff, init
from refenv.tasks.tools import clean, web, zipapp


def collection() -> Collection:
    """A fresh collection of refenv's tasks (the checkout's tasks.py adds its own `test` to one)."""
    return Collection(init, matrix, compare, diff, run, build, lock, clean, reproduce, publish, fleet, zipapp, web,
                      disk, summary, bases)


ns = collection()
__all__ = ["EXIT_INTERNAL", "bases", "build", "clean", "collection", "compare", "diff", "disk", "fleet", "init",
           "lock", "matrix", "ns", "publish", "reproduce", "run", "summary", "web", "zipapp"]
