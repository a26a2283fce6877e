"""How the work was started, as facts: a container or a cluster job, and whether it asked for a GPU.

A container gets a GPU only when its start asks for one, and a batch job only when it requests one; what asks
differs by tool (the sources below). This reader finds the start in the report -- a `docker run`, `podman run`
or `nerdctl run` command, a Compose service, a Kubernetes pod spec, a Slurm `srun`/`sbatch` line or `#SBATCH`
directives -- and records in `visibility`:

- `launch`: which kind of start it is ('docker run', 'podman run', 'nerdctl run', 'compose', 'pod', 'slurm');
- `gpu_requested`: whether it asks for a GPU;
- `launch_fix`: where it does not, the same start corrected, in the report's own syntax (its command with the
  flag added, the YAML key the service or container lacks, the directive the script lacks).

Sources: Docker's `docker run --gpus` and Compose's "GPU support" (deploy.resources.reservations.devices with
driver nvidia and capabilities [gpu]); NVIDIA Container Toolkit, CDI (`--device nvidia.com/gpu=all`, Podman's
way); Kubernetes "Schedule GPUs" (resources.limits nvidia.com/gpu) and the GPU Operator's runtimeClassName
nvidia; Slurm's sbatch/srun `--gres=gpu:N` and `--gpus`.
"""

from __future__ import annotations

import re

from harness.intake.parsed import Builder, Line

# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"docker|podman|nerdctl|services:|containers:|srun|sbatch")
_RUN_RE = re.compile(r"(?:^|(?<=[\s$#>;&(]))(?:sudo\s{1,4})?(?P<tool>docker|podman|nerdctl)\s{1,4}"
                     r"(?:container\s{1,4})?run\b")
_CONTINUED = ("\\", "`", "^")
_RUN_GPU_RE = re.compile(r"--gpus[\s=]|--runtime[\s=]{1,3}nvidia\b|"
                         r"--device[\s=]{1,3}['\"]?(?:nvidia\.com/gpu|/dev/nvidia)|"
                         r"--hooks-dir|NVIDIA_VISIBLE_DEVICES=(?!void|none)")
# The flag each tool takes: Podman has no --gpus before 5.0 and reads CDI device names instead.
_RUN_FLAG = {"docker": "--gpus all", "nerdctl": "--gpus all", "podman": "--device nvidia.com/gpu=all"}
_SERVICES_RE = re.compile(r"^services:\s*$")
_SERVICE_RE = re.compile(r"^(?P<indent>\s{1,8})(?P<name>[A-Za-z0-9][\w.-]{0,62}):\s*$")
_COMPOSE_GPU_RE = re.compile(r"capabilities:|driver:\s{0,3}['\"]?nvidia|runtime:\s{0,3}nvidia|^\s{0,12}gpus:|"
                             r"nvidia\.com/gpu", re.I)
_COMPOSE_FIX = ("deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, "
                "capabilities: [gpu]}]}}}")
_CONTAINERS_RE = re.compile(r"^\s{0,12}containers:\s*$")
_CONTAINER_NAME_RE = re.compile(r"^\s{0,14}-\s{1,4}name:\s{0,3}['\"]?(?P<name>[a-z0-9][a-z0-9.-]{0,62})")
_POD_FIX = "resources: {limits: {nvidia.com/gpu: 1}}"
_SLURM_CMD_RE = re.compile(r"(?:^|(?<=[\s$#>;&(]))(?P<tool>srun|sbatch|salloc)\b(?P<rest>[^\n]{0,300})")
_SBATCH_RE = re.compile(r"^#SBATCH\s")
# A partition named for GPUs is not a request: its nodes give a job only the GPUs it asks for with --gres/--gpus.
_SLURM_GPU_RE = re.compile(r"--gres[= ]{1,3}['\"]?gpu|--gpus(?:-per-[a-z]{1,8})?[= ]|(?:^|\s)-G\s{0,2}\d", re.I)


def read(b: Builder, lines: list[Line]) -> None:
    """The first start the report shows, and whether it asks for a GPU (a later one does not overwrite it)."""
    for reader in (_run, _compose, _pod, _slurm):
        if reader(b, lines):
            return


def _put(b: Builder, line: Line, kind: str, requested: bool, fix: str | None) -> bool:
    if not b.put("visibility.launch", kind, line):
        return False
    if kind != "slurm":
        b.put("visibility.in_container", True, line)
    b.put("visibility.gpu_requested", requested, line)
    if fix:
        b.put("visibility.launch_fix", fix, line)
        b.note(f"line {line.number}: the {kind} start " + ("asks for a GPU, but" if requested else "asks for no GPU;")
               + f" corrected: {fix}")
    return True


def _run(b: Builder, lines: list[Line]) -> bool:
    for i, line in enumerate(lines):
        m = _RUN_RE.search(line.text) if " run" in line.text else None
        if not m:
            continue
        command = line.text[m.start():]
        j = i
        while command.endswith(_CONTINUED) and j + 1 < len(lines):  # a command split over lines
            j += 1
            command = command[:-1].rstrip() + " " + lines[j].text.strip()
        tool = m.group("tool")
        requested = bool(_RUN_GPU_RE.search(command))
        run_end = m.end() - m.start()
        fixed = f"{command[:run_end]} {_RUN_FLAG[tool]}{command[run_end:]}"
        return _put(b, line, f"{tool} run", requested, None if requested else fixed)
    return False


def _compose(b: Builder, lines: list[Line]) -> bool:
    start = next((i for i, ln in enumerate(lines) if _SERVICES_RE.match(ln.raw)), None)
    if start is None:
        return False
    body = lines[start + 1:start + 200]
    service = next((m for m in (_SERVICE_RE.match(ln.raw) for ln in body) if m), None)
    if service is None:
        return False
    requested = any(_COMPOSE_GPU_RE.search(ln.raw) for ln in body)
    fix = None if requested else f"under the service '{service.group('name')}': `{_COMPOSE_FIX}`"
    return _put(b, lines[start], "compose", requested, fix)


def _pod(b: Builder, lines: list[Line]) -> bool:
    start = next((i for i, ln in enumerate(lines) if _CONTAINERS_RE.match(ln.raw)), None)
    if start is None:
        return False
    body = lines[start + 1:start + 200]
    container = next((m for m in (_CONTAINER_NAME_RE.match(ln.raw) for ln in body) if m), None)
    if container is None:
        return False
    text = "\n".join(ln.raw for ln in lines)
    gpu = "nvidia.com/gpu" in text
    runtime = re.search(r"runtimeClassName:\s{0,3}['\"]?nvidia", text) is not None
    if gpu and not runtime:
        # The GPU was asked for and still no driver reached it: where the NVIDIA runtime is not the node's
        # default, the pod names its runtime class (the GPU Operator installs one called nvidia).
        return _put(b, lines[start], "pod", True, "under the pod's spec: `runtimeClassName: nvidia`")
    return _put(b, lines[start], "pod", gpu, None if gpu else f"under the container '{container.group('name')}': "
                f"`{_POD_FIX}`")


def _slurm(b: Builder, lines: list[Line]) -> bool:
    directives = [ln for ln in lines if _SBATCH_RE.match(ln.raw.lstrip())]
    command = next(((ln, m) for ln in lines for m in [_SLURM_CMD_RE.search(ln.text)] if m and (
        m.group("rest").strip().startswith("-") or m.group("rest").strip().endswith((".sh", ".py", ".sbatch"))
        or not m.group("rest").strip())), None)
    if not directives and command is None:
        return False
    requested = any(_SLURM_GPU_RE.search(ln.raw) for ln in directives) or (
        command is not None and bool(_SLURM_GPU_RE.search(command[1].group(0))))
    if command is not None and not (directives and command[1].group("tool") == "sbatch"):
        line, m = command
        fix = f"{m.group('tool')} --gres=gpu:1{m.group('rest').rstrip()}"
    else:
        line, fix = directives[0], "`#SBATCH --gres=gpu:1` beside the script's other #SBATCH lines"
    return _put(b, line, "slurm", requested, None if requested else fix)
