"""Job scripts and sbatch arguments for one cell (pure text).

Three launchers put the cell's container on a node:
- `docker`: the node's Docker engine. A plain `docker run` in a job outlives `scancel` (the container
  belongs to dockerd, not to the job), so the script names the container, runs it in the background,
  traps TERM and removes it by name (facts/cluster.md: cancel took 0.9 s, container gone).
- `pyxis`: `srun --container-image` (NVIDIA pyxis + enroot), the image from the node's engine (`dockerd://`).
- `oci`: Slurm's own OCI support, `srun --container=BUNDLE` with oci.conf on the nodes.
Each gives the container exactly the cell's environment and nothing of the job's: Slurm exports its own
CUDA_VISIBLE_DEVICES, and refenv's scenarios *are* those variables.
"""

from __future__ import annotations

import hashlib
import math
import shlex
from dataclasses import dataclass

from refenv.engines.seam import ContainerSpec
from refenv.model.placement import SlurmPlacement


@dataclass(frozen=True)
class JobFiles:
    """The files of one cell's job, beside its result: the script, its log, and the outcome it writes."""

    script: str
    log: str
    outcome: str


def container_name(spec: ContainerSpec) -> str:
    """A name unique to the run and cell, valid for Docker (the cell id has slashes)."""
    labels = dict(spec.labels)
    key = f"{labels.get('refenv.run', '')}/{labels.get('refenv.cell', spec.image)}"
    return f"refenv-cell-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def job_name(spec: ContainerSpec) -> str:
    """The job's name carries the run id, so `squeue` and `scancel --name` find all of a run."""
    return f"refenv-{dict(spec.labels).get('refenv.run', 'run')}"


def time_limit(timeout_s: float) -> str:
    """Slurm counts time limits in whole minutes: round up, at least one."""
    return str(max(1, math.ceil(timeout_s / 60)))


def docker_argv(spec: ContainerSpec, name: str) -> list[str]:
    """`docker run` with the same hardening as the local engine's container (engines/docker/sdk.create_kwargs)."""
    argv = ["docker", "run", "--name", name]
    for key, value in spec.labels:
        argv += ["--label", f"{key}={value}"]
    if spec.read_only:
        argv.append("--read-only")
    argv += ["--network", spec.network]
    for cap in spec.cap_drop:
        argv += ["--cap-drop", cap]
    for opt in spec.security_opt:
        argv += ["--security-opt", opt]
    argv += ["--pids-limit", str(spec.pids_limit), "--memory", spec.mem_limit, "--memory-swap", spec.mem_limit]
    for path, options in spec.tmpfs:
        argv += ["--tmpfs", f"{path}:{options}"]
    for source, target, ro in spec.binds:
        argv += ["--mount", f"type=bind,source={source},target={target}" + (",readonly" if ro else "")]
    for device in spec.devices:
        argv += ["--device", device]
    if spec.user is not None:
        argv += ["--user", spec.user]
    if spec.cpus is not None:
        argv += ["--cpus", f"{spec.cpus:g}"]
    if spec.runtime is not None:
        argv += ["--runtime", spec.runtime]
    if spec.gpu_request is not None:
        argv += ["--gpus", "all" if spec.gpu_request == "all" else f"device={spec.gpu_request}"]
    # Exactly the cell's variables: `-e K=V` never inherits the job's environment.
    for key, value in spec.environment:
        argv += ["--env", f"{key}={value}"]
    command = list(spec.command)
    if spec.entrypoint is not None:
        argv += ["--entrypoint", spec.entrypoint[0]]
        command = [*spec.entrypoint[1:], *command]
    return [*argv, spec.image, *command]


def _gpu_line(spec: ContainerSpec) -> str:
    """With a GPU GRES the job's GPUs are the ones Slurm gave it, not every GPU of the node."""
    if spec.gpu_request != "all":
        return ""
    return 'if [ -n "${SLURM_JOB_GPUS:-}" ]; then gpus=(--gpus "device=$SLURM_JOB_GPUS"); else gpus=(); fi\n'


def docker_script(spec: ContainerSpec, files: JobFiles) -> str:
    """The docker launcher's job script: the container by name in the background, removed on TERM."""
    name = container_name(spec)
    argv = docker_argv(spec, name)
    gpu = _gpu_line(spec)
    if gpu:
        at = argv.index("--gpus")
        run = shlex.join(argv[:at]) + ' "${gpus[@]}" ' + shlex.join(argv[at + 2:])
    else:
        run = shlex.join(argv)
    q = shlex.quote
    return (
        "#!/bin/bash\n"
        f"# refenv cell {dict(spec.labels).get('refenv.cell', '')} (docker launcher)\n"
        f"name={q(name)}\n"
        f"outcome={q(files.outcome)}\n"
        'gone() { docker rm -f "$name" >/dev/null 2>&1; }\n'
        # scancel sends TERM: the container is dockerd's, not the job's, so remove it by name.
        "trap 'gone; exit 143' TERM INT\n"
        "gone\n"
        + gpu +
        f"{run} &\n"
        "wait $!\n"
        "code=$?\n"
        "oom=$(docker inspect -f '{{.State.OOMKilled}}' \"$name\" 2>/dev/null || echo false)\n"
        "gone\n"
        'printf \'{"exit_code": %d, "oom_killed": %s}\\n\' "$code" "$oom" > "$outcome.tmp"\n'
        'mv "$outcome.tmp" "$outcome"\n'
        # The job's own exit status is not the cell's outcome (the harness exits 1 on a failing verdict).
        "exit 0\n"
    )


def _env_file_lines(spec: ContainerSpec) -> str:
    """`env -i` then exactly the cell's variables, so nothing of the job's environment leaks in."""
    return " ".join(shlex.quote(f"{k}={v}") for k, v in spec.environment)


def pyxis_script(spec: ContainerSpec, files: JobFiles) -> str:
    """The pyxis launcher: `srun --container-image` from the node's Docker engine (enroot's dockerd://).

    pyxis's GPU hook reads the toolkit's variables: NVIDIA_VISIBLE_DEVICES unset means no GPU, and
    NVIDIA_DRIVER_CAPABILITIES defaults to `utility` (the cell's environment sets both when it has a GPU).
    """
    mounts = ",".join(f"{s}:{t}" + (":ro" if ro else "") for s, t, ro in spec.binds)
    command = [*(spec.entrypoint or ("python", "-m", "harness")), *spec.command]
    srun = ["srun", "--export=ALL", f"--container-image=dockerd://{spec.image}", f"--container-mounts={mounts}",
            "--no-container-mount-home", "--container-remap-root" if spec.user == "0" else "--no-container-remap-root"]
    # The GPU hook reads the toolkit's variables from srun's environment (values may hold commas, which
    # --export=VAR=... cannot carry); the cell's own process then gets exactly its variables (env -i).
    hook = {k: v for k, v in spec.environment if k in ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")}
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in hook.items())
    return (
        "#!/bin/bash\n"
        f"# refenv cell {dict(spec.labels).get('refenv.cell', '')} (pyxis launcher)\n"
        f"outcome={shlex.quote(files.outcome)}\n"
        "unset NVIDIA_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES\n" + exports +
        f"{shlex.join(srun)} env -i {_env_file_lines(spec)} {shlex.join(command)}\n"
        "code=$?\n"
        'printf \'{"exit_code": %d, "oom_killed": false}\\n\' "$code" > "$outcome.tmp"\n'
        'mv "$outcome.tmp" "$outcome"\n'
        "exit 0\n"
    )


def oci_script(spec: ContainerSpec, files: JobFiles, bundle: str) -> str:
    """Slurm's OCI launcher: `srun --container=BUNDLE`; the bundle's config.json carries the cell's
    environment, mounts and hardening (Slurm kills and deletes the container on cancel: no trap needed)."""
    return (
        "#!/bin/bash\n"
        f"# refenv cell {dict(spec.labels).get('refenv.cell', '')} (oci launcher)\n"
        f"outcome={shlex.quote(files.outcome)}\n"
        f"srun --export=NONE --container={shlex.quote(bundle)}\n"
        "code=$?\n"
        'printf \'{"exit_code": %d, "oom_killed": false}\\n\' "$code" > "$outcome.tmp"\n'
        'mv "$outcome.tmp" "$outcome"\n'
        "exit 0\n"
    )


def sbatch_argv(spec: ContainerSpec, files: JobFiles, timeout_s: float, placement: SlurmPlacement) -> list[str]:
    """`sbatch --parsable` for one cell: its name, time limit, CPUs, memory, placement, log."""
    argv = ["sbatch", "--parsable", f"--job-name={job_name(spec)}", f"--time={time_limit(timeout_s)}",
            f"--cpus-per-task={max(1, math.ceil(spec.cpus or 1))}", f"--mem={spec.mem_limit.upper()}",
            f"--output={files.log}", "--export=NONE", "--no-requeue"]
    for flag, value in (("constraint", placement.constraint), ("gres", placement.gres),
                        ("partition", placement.partition), ("account", placement.account),
                        ("nodelist", placement.nodelist)):
        if value:
            argv.append(f"--{flag}={value}")
    return [*argv, files.script]


def array_key(argv: list[str]) -> tuple[str, ...]:
    """What cells must share to go in one job array: every sbatch option but the log and the script."""
    return tuple(a for a in argv[:-1] if not a.startswith("--output="))


def array_script(tasks: list[JobFiles]) -> str:
    """A job array's script: task i runs cell i's own job script, its output in that cell's log."""
    q = shlex.quote
    return (
        "#!/bin/bash\n"
        "# refenv job array: one cell per task\n"
        f"scripts=({' '.join(q(t.script) for t in tasks)})\n"
        f"logs=({' '.join(q(t.log) for t in tasks)})\n"
        # exec: the cell's script receives scancel's TERM itself and removes its container.
        'exec bash "${scripts[$SLURM_ARRAY_TASK_ID]}" > "${logs[$SLURM_ARRAY_TASK_ID]}" 2>&1\n'
    )


def array_argv(key: tuple[str, ...], count: int, path: str) -> list[str]:
    """sbatch for `count` cells sharing `key` as one array (tasks 0..count-1)."""
    return [*key, f"--array=0-{count - 1}", "--output=/dev/null", path]
