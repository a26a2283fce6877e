"""refenv's checkout: the `refenv` program's task collection (refenv/tasks/), plus the checkout's own `test`.

  invoke matrix ...         the same command as `refenv matrix ...` (every task of refenv.tasks; `invoke --list`)
  invoke test               ruff, mypy, the docs site, then the test tiers (unit, docker, slurm, browser; gpu if any)
  invoke docs               write the command reference from the parsers, then build the documentation site

Exit codes, on every task: 0 done; 1 a result that is not good; 2 bad input; 3 an internal error
(refenv/tasks/guard.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks import collection
from refenv.tasks.guard import guarded

ROOT = Path(__file__).resolve().parent


def _has_gpu() -> bool:
    """Whether nvidia-smi lists a GPU here (the gpu tier needs a real one)."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU " in out.stdout


@task(help={"tier": "unit, docker, podman, slurm, browser, breadth, gpu, or all (default: unit, docker, podman, "
                    "slurm, browser and breadth, and gpu where a GPU is)",
            "k": "pytest -k expression", "x": "stop at the first failure",
            "lint": "run ruff check, mypy (strict, as pyproject.toml sets) and `mkdocs build --strict` first "
                    "(default: yes)"})
@guarded
def test(c: Context, tier: str = "default", k: str = "", x: bool = False, lint: bool = True) -> None:
    """Lint and type-check, build the docs site strictly, then run the tests.

    With CI=true a missing Docker engine, Slurm cluster or Chromium fails its tier instead of skipping it."""
    if lint:
        # The guardrails first: a finding stops here, before minutes of containers (`--no-lint` skips them).
        c.run(f"{sys.executable} -m ruff check .", pty=False)
        c.run(f"{sys.executable} -m mypy", pty=False)
        _build_site(c, None)
    if tier == "default":
        tier = "all" if _has_gpu() else "nogpu"
        if tier == "nogpu":
            print("refenv test: unit, docker, podman, slurm and browser tiers; the gpu tier is not run here "
                  "(no GPU: nvidia-smi lists none)")
    markers = {"unit": "not docker and not gpu and not slurm and not browser and not podman and not breadth",
               "docker": "docker", "podman": "podman", "slurm": "slurm", "browser": "browser", "breadth": "breadth",
               "gpu": "gpu", "nogpu": "not gpu", "all": ""}.get(tier)
    if markers is None:
        raise Exit(f"unknown tier {tier!r}: unit, docker, podman, slurm, browser, breadth, gpu, default or all",
                   code=2)
    if tier in ("slurm", "nogpu", "all"):
        _slurm_up(c)
    args = [sys.executable, "-m", "pytest", "tests"]
    if markers:
        args += ["-m", markers]
    if k:
        args += ["-k", k]
    if x:
        args += ["-x"]
    c.run(" ".join(f"'{a}'" if " " in a else a for a in args), pty=False, env={"PYTHONPATH": str(ROOT)})


def _build_site(c: Context, out: str | None) -> None:
    """`mkdocs build --strict` (a broken link or page fails it) into `out`, or into a folder thrown away after."""
    import tempfile

    env = {"NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, on every build
    with tempfile.TemporaryDirectory(prefix="refenv-site-") as tmp:
        site = out or tmp
        c.run(f"{sys.executable} -m mkdocs build --strict --config-file {ROOT / 'mkdocs.yml'} "
              f"--site-dir {site}", pty=False, env=env)


def _slurm_up(c: Context) -> None:
    """The slurm tier's single-node cluster (.ci/slurm-up installs and starts it); under CI a failure stops
    here, elsewhere the tier then skips and says why."""
    done = c.run(str(ROOT / ".ci" / "slurm-up"), pty=False, warn=True)
    if done is not None and done.ok:
        return
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        raise Exit("refenv test: CI=true and the Slurm cluster did not come up (.ci/slurm-up)", code=1)
    print("refenv test: no Slurm cluster here (.ci/slurm-up failed); the slurm tier will skip")


@task(help={"out": "the folder to build the site into (default: site)"})
@guarded
def docs(c: Context, out: str = "site") -> None:
    """Write the command reference from the parsers (docs/reference.md), then build the documentation site.

    The site is MkDocs with the Material theme over docs/, built strictly: a broken link fails it."""
    from refenv import reference

    page = reference.write(ROOT)
    print(f"wrote {page.relative_to(ROOT)} (from `python -m harness`'s parser and these tasks)")
    _build_site(c, out)
    print(f"built {out}/ (open {out}/index.html)")


ns = collection()
ns.add_task(test)
ns.add_task(docs)
