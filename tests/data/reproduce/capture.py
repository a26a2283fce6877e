"""Capture the collect_env dumps in this folder: real torch, real CUDA runtime, simulated host driver.

Each case runs a short shell transcript inside a container of a default-matrix environment image on a
simulated host, with the driver injected as `refenv.run.toolkit` says (the same mounts, device nodes and
linker cache a matrix cell gets), and saves what it printed, stdout and stderr together.

    .venv/bin/python tests/data/reproduce/capture.py [CASE...]

The images come from `invoke matrix` (built here if missing). The transcript's `$ ...` lines are
printed by the script just before it runs each command, except where a case's `before` says otherwise
(see README.md).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from refenv.builder import simdriver  # noqa: E402
from refenv.builder.environment import build_environment  # noqa: E402
from refenv.engines.docker.engine import DockerEngine  # noqa: E402
from refenv.engines.docker.sdk import Engine  # noqa: E402
from refenv.model import profiles  # noqa: E402
from refenv.model.matrix import Scenario  # noqa: E402
from refenv.model.matrix_yaml import load  # noqa: E402
from refenv.run import expect, prepare, toolkit  # noqa: E402
from refenv.run.containers import cell_spec  # noqa: E402

HERE = Path(__file__).resolve().parent
TRY = 'python -c "import torch; print(torch.cuda.is_available()); torch.zeros(1).cuda()"'
COLLECT = "python -m torch.utils.collect_env"


@dataclasses.dataclass(frozen=True)
class Case:
    environment: str
    profile: str
    gpus: str = "all"
    env: tuple[tuple[str, str], ...] = ()
    commands: tuple[str, ...] = (TRY, COLLECT)
    before: str = ""       # text written above the transcript by this script (not run in the container)


CASES = {
    "cu130-on-r570": Case("torch-2.14.1-cu130", "r570"),
    "cu128-on-r470": Case("torch-2.10.0-cu128", "r470"),
    "cpu-wheel-on-r580": Case("torch-2.13.0-cpu", "r580"),
    "mismatch-r580": Case("torch-2.14.1-cu130", "r580-mismatch", commands=("nvidia-smi", TRY, COLLECT)),
    "cuinit-999-r580": Case("torch-2.10.0-cu128", "r580-cuinit-999"),
    "cvd-empty-r580": Case("torch-2.14.1-cu130", "r580", env=(("CUDA_VISIBLE_DEVICES", ""),),
                           commands=('export CUDA_VISIBLE_DEVICES=""', TRY, COLLECT)),
    "no-gpu-access-r580": Case("torch-2.14.1-cu130", "r580", gpus="none",
                               before="$ docker run --rm -it {image} bash\n"),
}


def transcript(commands: tuple[str, ...]) -> str:
    """A shell script that prints each command as a prompt line, then runs it with stderr into stdout."""
    lines = ["exec > /out/report.txt 2>&1", "cd /home/refenv"]
    for command in commands:
        lines += [f"printf '%s\\n' {shlex.quote('$ ' + command)}", command]
    return "\n".join(lines) + "\n"


def capture(engine: Engine, name: str, case: Case) -> Path:
    matrix = load(ROOT / "matrix.yaml")
    env = matrix.environment(case.environment)
    build = build_environment(engine, matrix, env, lambda _e, line: None)
    assert build.tag is not None, build.error
    driver = simdriver.build()
    scenario = Scenario(name, case.gpus, case.env)
    work = Path(tempfile.mkdtemp(prefix=f"refenv-capture-{name}-"))
    try:
        os.chmod(work, 0o777)
        out = work / "out"
        out.mkdir()
        os.chmod(out, 0o777)
        injection = toolkit.inject(profiles.get(case.profile), driver, scenario.env_dict,
                                   gpu_access=scenario.gpu_access, config_host_path=str(work / "sim.conf"),
                                   gpus=expect.selection(scenario))
        if injection.config_text is not None:
            (work / "sim.conf").write_text(injection.config_text, encoding="utf-8")
        libs = {f"{toolkit.LIB_DIR}/libcuda.so.1": str(driver.libcuda),
                f"{toolkit.LIB_DIR}/libnvidia-ml.so.1": str(driver.libnvidia_ml)}
        image_id = engine.image_id(build.tag) or build.tag
        ldcache = prepare.prepare_ldcache(DockerEngine(engine), build.tag, image_id, libs, driver.digest, "capture")
        spec = cell_spec(build.tag, f"capture/{name}", "capture", str(out), scenario, matrix.run, injection, ldcache)
        spec = dataclasses.replace(spec, entrypoint=("sh", "-c"), command=(transcript(case.commands),))
        outcome = engine.run(spec, timeout=300)
        text = (out / "report.txt").read_text(encoding="utf-8")
        if outcome.timed_out or "Collecting environment information" not in text:
            raise SystemExit(f"{name}: the capture failed (exit {outcome.exit_code}):\n{outcome.logs}\n{text}")
        target = HERE / f"{name}.txt"
        target.write_text(case.before.format(image=build.tag) + text, encoding="utf-8")
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    wanted = argv or list(CASES)
    unknown = [n for n in wanted if n not in CASES]
    if unknown:
        print(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    engine = Engine.connect()
    for name in wanted:
        print(f"{name}: {capture(engine, name, CASES[name])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
