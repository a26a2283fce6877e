"""`refenv check`'s predictions against the matrix's observations, and the check's time per Dockerfile.

Nine Dockerfiles of refenv's own making that build offline here: each starts FROM one of the default matrix's
images (built first where missing, as `refenv build` builds them; an ARG's default names the image) and changes
what decides a GPU — a CPU build, a CUDA 12.8 build (too new for r470's 11.4), a CUDA 13 build on r535, a baked-in
`CUDA_VISIBLE_DEVICES=""`, `=-1`, a UUID no host has, `=0`, a baked-in `NVIDIA_DRIVER_CAPABILITIES=utility` (the
toolkit then injects no libcuda: the simulated toolkit reads the image's ENV as the real one does), and a
torchvision unpacked for another torch (torch's verdict unchanged, the stack broken). They form one matrix with
the default matrix's hosts and scenarios; `refenv check matrix.yaml --json` predicts every cell before anything
is built (the FROM images read from their labels by `image inspect`), then `refenv matrix` builds and runs every
cell.

Figures: the share of cells with an observed verdict where the check's verdict equals it (target >= 99%), and the
median wall time of `refenv check DOCKERFILE` as a fresh process per Dockerfile, Python's own start included
(target <= 1 s), beside a bare `python -c pass` in the same run; the time is also taken for a Dockerfile as teams
write them (a CUDA base known by name, install lines with pins and an index URL, a requirements file it COPYs),
which the check reads without any engine, and held to the same target. Exit 1 when a target is missed.

    flock /tmp/refenv-engine.lock python benchmarks/check_vs_matrix.py [--rounds N] [--timing-only] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refenv.check.compare import agreement, markdown  # noqa: E402

# The `refenv` command as a team types it (the console script beside this Python): `python -m refenv.cli` is the
# checkout's door (./go), which loads the tasks.py of the folder it runs in, and the benchmark's folder has none.
REFENV = [str(Path(sys.executable).with_name("refenv"))]
SHARE_TARGET = 0.99
TIME_TARGET_S = 1.0
CU130, CU128, CPU = "torch-2.14.1-cu130", "torch-2.10.0-cu128", "torch-2.13.0-cpu"
HEAD = "ARG BASE={image}\nFROM ${{BASE}}\n"
# name -> (the default matrix's environment it starts FROM, what the Dockerfile adds)
DOCKERFILES = {
    "cu130": (CU130, "LABEL team=cu130\n"),
    "cpu-pin": (CPU, "LABEL team=cpu\n"),
    "cu128-r470": (CU128, "LABEL team=cu128\n"),
    "cvd-empty-baked": (CU130, 'ENV CUDA_VISIBLE_DEVICES=""\n'),
    "cvd-minus-one": (CU128, "ENV CUDA_VISIBLE_DEVICES=-1\n"),
    "cvd-uuid": (CU130, "ENV CUDA_VISIBLE_DEVICES=GPU-00000000-dead-beef-0000-000000000000\n"),
    "cvd-zero": (CU128, "ENV CUDA_VISIBLE_DEVICES=0\n"),
    "caps-utility-baked": (CU128, "ENV NVIDIA_DRIVER_CAPABILITIES=utility\n"),
    "torchvision-mismatch": (CU130, "USER root\nCOPY torchvision.whl /tmp/torchvision.whl\n"
                             "RUN cd /opt/venv/lib/python3.11/site-packages && rm -rf torchvision torchvision-* "
                             "&& python -m zipfile -e /tmp/torchvision.whl . && rm /tmp/torchvision.whl\n"
                             "USER 10001:10001\n"),
}


def default_images() -> dict[str, str]:
    """The tag of each default-matrix environment the Dockerfiles start FROM, as this tree builds it (built here
    when missing, a cached image otherwise): the engine may hold newer images of the same environment that other
    checkouts built, and the newest of them is not this tree's."""
    from refenv.builder.environment import build_environment
    from refenv.engines.docker.sdk import Engine
    from refenv.model import matrix_yaml

    engine = Engine.connect()
    default = matrix_yaml.load(ROOT / "matrix.yaml")
    tags = {}
    for name in sorted({base for base, _ in DOCKERFILES.values()}):
        built = build_environment(engine, default, default.environment(name), lambda env, line: print(f"  {line}"))
        if built.tag is None:
            raise SystemExit(f"{name} did not build: {built.error}")
        tags[name] = built.tag
    return tags


# A Dockerfile as a team writes it, for the time only (it is not built): nothing to inspect, every line read.
TEAM_DOCKERFILE = """\
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
ARG TORCH=2.10.0
RUN apt-get update && apt-get install -y --no-install-recommends python3-pip && rm -rf /var/lib/apt/lists/*
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir torch==${TORCH} torchvision==0.25.0 --index-url https://download.pytorch.org/whl/cu128
RUN pip install --no-cache-dir -r /tmp/requirements.txt
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility
"""
TEAM_REQUIREMENTS = "numpy>=1.26\ntransformers==4.57.1\nflash-attn==2.8.3 ; platform_machine == 'x86_64'\n"


def project(folder: Path, wheel: Path | None, images: dict[str, str]) -> Path:
    """The Dockerfiles and the matrix that names them, with the default matrix's hosts and scenarios."""
    import yaml

    default = yaml.safe_load((ROOT / "matrix.yaml").read_text(encoding="utf-8"))
    envs = {}
    for name, (base_env, body) in DOCKERFILES.items():
        (folder / name).mkdir()
        (folder / name / "Dockerfile").write_text(HEAD.format(image=images[base_env]) + body, encoding="utf-8")
        if "torchvision.whl" in body and wheel is not None:
            (folder / name / "torchvision.whl").write_bytes(wheel.read_bytes())
        envs[name] = {"dockerfile": f"{name}/Dockerfile", "python": "/opt/venv/bin/python"}
    matrix = {"version": 1, "environments": envs, "hosts": default["hosts"], "scenarios": default["scenarios"],
              "run": {"probes": "off", "memory_check": "off"}}
    (folder / "matrix.yaml").write_text(yaml.safe_dump(matrix, sort_keys=False), encoding="utf-8")
    (folder / "team").mkdir()
    (folder / "team" / "Dockerfile").write_text(TEAM_DOCKERFILE, encoding="utf-8")
    (folder / "team" / "requirements.txt").write_text(TEAM_REQUIREMENTS, encoding="utf-8")
    return folder / "matrix.yaml"


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """The wall time of a run that did its work: exit 0 or 1 (a finding); a usage or internal error is no time."""
    start = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=60)
    wall = time.monotonic() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall


def bytecode(folder: Path) -> dict[str, str]:
    """The environment of an installed refenv: its modules' bytecode compiled once, as `pip install` compiles a
    wheel's, here under a cache prefix in `folder` so the checkout gets no __pycache__. Without it (a shell with
    PYTHONDONTWRITEBYTECODE=1 and an editable install) every run compiles refenv's modules from source again."""
    prefix = folder / ".pycache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "refenv"), str(ROOT / "harness")],
                   env=env, check=True, capture_output=True, timeout=600)
    return env


def timing(folder: Path, rounds: int) -> tuple[float, float, float, float]:
    """Medians over every Dockerfile and round: `refenv check DOCKERFILE` with its bytecode compiled (as installed)
    and as this shell runs it (where PYTHONDONTWRITEBYTECODE=1 is set, compiled from source each time), and
    `python -c pass`; and the team's Dockerfile (as installed) over as many runs."""
    installed = bytecode(folder / "timing")
    check, source, bare, team = [], [], [], []
    for _ in range(rounds):
        for name in DOCKERFILES:
            check.append(timed([*REFENV, "check", f"{name}/Dockerfile"], folder, installed))
            source.append(timed([*REFENV, "check", f"{name}/Dockerfile"], folder))
            bare.append(timed([sys.executable, "-c", "pass"], folder))
            team.append(timed([*REFENV, "check", "team/Dockerfile"], folder, installed))
    return statistics.median(check), statistics.median(source), statistics.median(bare), statistics.median(team)


def torchvision_wheel() -> Path | None:
    """torchvision 0.28.0 (built for torch 2.13.0) from refenv's wheelhouse, as the docker tier takes it."""
    try:
        from tests.docker.support import wheel
    except ImportError:
        return None
    return Path(wheel("torchvision==0.28.0"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timing-only", action="store_true", help="time the check; build and run nothing")
    parser.add_argument("--keep", type=Path, help="copy the check's JSON and the matrix's cells.json here")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="refenv-check-bench-") as tmp:
        folder = Path(tmp)
        matrix = project(folder, None if args.timing_only else torchvision_wheel(), default_images())
        median, source, bare, team = timing(folder, args.rounds)
        print(f"refenv check per Dockerfile: median {median:.2f} s over {args.rounds} x {len(DOCKERFILES)} runs, "
              f"bytecode compiled as installed (python -c pass: {bare:.2f} s; compiled from source each run, as "
              f"with PYTHONDONTWRITEBYTECODE=1 set here: {source:.2f} s); the team's Dockerfile (install lines, a "
              f"requirements file, no engine): {team:.2f} s; target <= {TIME_TARGET_S:.1f} s; "
              f"load average {os.getloadavg()[0]:.1f}")
        failed |= max(median, team) > TIME_TARGET_S
        if args.timing_only:
            return 1 if failed else 0
        done = subprocess.run([*REFENV, "check", str(matrix), "--json"], cwd=folder, capture_output=True, text=True,
                              check=False)
        if done.returncode not in (0, 1):
            raise SystemExit(f"refenv check matrix.yaml --json exited {done.returncode}:\n{done.stderr[-2000:]}")
        check_doc = json.loads(done.stdout)
        subprocess.run([*REFENV, "matrix", "--matrix", str(matrix), "--results", str(folder / "results")],
                       cwd=folder, check=False)
        cells = json.loads((folder / "results" / "latest" / "cells.json").read_text(encoding="utf-8"))
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            (args.keep / "check.json").write_text(done.stdout, encoding="utf-8")
            (args.keep / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
        a = agreement(check_doc, cells)
        print(markdown(a))
        print(f"agreement: {a.compared - len(a.differing)}/{a.compared} = {a.share:.2%} (target >= "
              f"{SHARE_TARGET:.0%})")
        failed |= a.share < SHARE_TARGET
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
