"""Resolving an environment for a Python other than the one refenv runs on: uv decides the versions, pip fetches.

`pip download --python-version` filters wheels by the target's tags, but evaluates the requirements'
environment markers against the interpreter pip runs on (pypa/pip#11010, #11198): resolving torch 2.5.1 for
Python 3.13 on a 3.11 host asks for `triton==3.1.0; python_version < "3.13"`, which has no 3.13 wheel, and
leaves out `setuptools; python_version >= "3.12"`, which torch imports there. `uv pip compile --python-version
--python-platform` resolves for the target itself, markers included. refenv takes uv's pins and lets pip
download exactly those (`--no-deps`), with the host's pip configuration as for every other environment.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from refenv.errors import LockError
from refenv.model import suites

LOG = logging.getLogger(__name__)
# The manylinux targets uv's --python-platform names (uv 0.13: 2_17, 2_28, 2_31 ... 2_40).
UV_MANYLINUX = (17, 28, *range(31, 41))
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,100})==([A-Za-z0-9.+!_-]{1,60})$")


def uv_binary() -> Path:
    """The uv executable of the `uv` package refenv depends on (the resolver, and the installer in an image)."""
    from uv import find_uv_bin

    return Path(find_uv_bin())


def uv_platform(glibc: str) -> str:
    """uv's name for the newest manylinux target a base with this glibc runs."""
    minor = suites.glibc_key(glibc)[1]
    return f"x86_64-manylinux_2_{max((m for m in UV_MANYLINUX if m <= minor), default=17)}"


def compile_command(uv: str, python: str, glibc: str, extra_index: str | None) -> list[str]:
    """`uv pip compile` reading the requirements from standard input (after pip's rules, checked before)."""
    command = [uv, "pip", "compile", "-", "--python-version", python, "--python-platform", uv_platform(glibc),
               "--only-binary", ":all:", "--no-header", "--no-annotate", "--quiet"]
    if extra_index:
        command += ["--extra-index-url", extra_index, "--index-strategy", "unsafe-best-match"]
    return command


def parse_pins(text: str) -> list[str]:
    """uv's output as `name==version` lines; LockError for anything else."""
    pins = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    bad = [p for p in pins if not _PIN.match(p)]
    if bad or not pins:
        raise LockError(f"uv pip compile gave no pins it could be trusted with ({(bad or ['nothing'])[0][:120]})",
                        "run it by hand to see why")
    return pins


def pins(uv: str, requirements: list[str], python: str, glibc: str, extra_index: str | None,
         log: Callable[[str], None] | Any = None) -> list[str]:
    """The versions uv resolves `requirements` to for CPython `python` on a base with `glibc`."""
    command = compile_command(uv, python, glibc, extra_index)
    LOG.info("running %s", " ".join(command))
    try:
        done = subprocess.run(command, input="\n".join(requirements) + "\n", capture_output=True, text=True,
                              timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LockError(f"uv pip compile could not run: {exc}", "is uv installed (pip install uv)?") from None
    if log is not None:
        log(done.stderr)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        raise LockError(f"uv pip compile for Python {python} failed: {' | '.join(lines[-3:])[:600]}",
                        "check the torch version and variant in matrix.yaml, and that the package index is reachable")
    return parse_pins(done.stdout)
