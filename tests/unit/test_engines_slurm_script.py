"""The Slurm job scripts and sbatch arguments, as text: hardening, the cell's environment only, placement."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import cast

import pytest

from refenv.engines.docker.sdk import create_kwargs
from refenv.engines.seam import CellEngine
from refenv.engines.slurm import script
from refenv.engines.slurm.client import Commands
from refenv.engines.slurm.engine import SlurmEngine
from refenv.errors import RefenvError
from refenv.model.matrix import RunSettings, Scenario
from refenv.model.placement import SlurmPlacement
from refenv.run.containers import ContainerSpec, cell_spec

FILES = script.JobFiles("/r/cells/e/h/s/job.sh", "/r/cells/e/h/s/job.log", "/r/cells/e/h/s/job-outcome.json")


def _spec(gpus: str = "all", env: tuple[tuple[str, str], ...] = (("CUDA_VISIBLE_DEVICES", "1"),),
          real: bool = False) -> ContainerSpec:
    return cell_spec("refenv/env-x:abc", "e/h/s", "run-1", "/r/cells/e/h/s", Scenario("s", gpus, env),
                     RunSettings(memory="2g", pids=256), real_host=real)


def test_docker_argv_carries_the_local_engines_hardening() -> None:
    spec = _spec()
    argv = script.docker_argv(spec, "refenv-cell-x")
    kwargs = create_kwargs(spec)
    joined = " ".join(argv)
    assert "--read-only" in argv and kwargs["read_only"]
    assert argv[argv.index("--network") + 1] == kwargs["network_mode"] == "none"
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--security-opt") + 1] == "no-new-privileges"
    assert argv[argv.index("--pids-limit") + 1] == str(kwargs["pids_limit"]) == "256"
    assert argv[argv.index("--memory") + 1] == argv[argv.index("--memory-swap") + 1] == "2g"
    assert "type=bind,source=/r/cells/e/h/s,target=/out" in joined
    assert argv[-len(spec.command) - 1:] == [spec.image, *spec.command]
    for key, value in spec.labels:
        assert f"{key}={value}" in argv


def test_the_container_gets_exactly_the_cells_variables() -> None:
    argv = script.docker_argv(_spec(env=(("CUDA_VISIBLE_DEVICES", "1"),)), "n")
    given = [argv[i + 1] for i, a in enumerate(argv) if a == "--env"]
    assert "CUDA_VISIBLE_DEVICES=1" in given
    assert all("=" in g for g in given), "a bare --env NAME would copy the job's variable"
    without = script.docker_argv(_spec(env=()), "n")
    assert not [a for a in without if a.startswith("CUDA_VISIBLE_DEVICES")], "Slurm's own value must not leak in"


def test_the_docker_script_traps_term_and_removes_its_container_by_name(tmp_path: Path) -> None:
    spec = _spec()
    text = script.docker_script(spec, FILES)
    name = script.container_name(spec)
    assert f"name={name}" in text
    assert "trap 'gone; exit 143' TERM" in text
    assert 'docker rm -f "$name"' in text
    assert " &\nwait $!\n" in text, "the container runs in the background so the trap can fire"
    # Each docker command is a process and a round trip: `rm` (in gone) and `run` always, `kill` and `inspect`
    # only on a time limit or a kill (exit 137).
    assert re.findall(r"\bdocker (rm|run|kill|inspect|wait|logs|start)\b", text) == ["rm", "run", "kill", "inspect"]
    assert "if [ $code = 137 ]; then" in text
    limited = script.docker_script(spec, FILES, 240)
    assert "timeout -s KILL 240 docker run " in limited and "-ge 240000000 ]" in limited
    assert '"timed_out": %s' in limited
    assert text.rstrip().endswith("exit 0"), "the job's exit status is not the cell's outcome"
    path = tmp_path / "job.sh"
    path.write_text(text, encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0


def test_a_real_host_gets_the_jobs_gpus_not_every_gpu() -> None:
    text = script.docker_script(_spec(env=(), real=True), FILES)
    assert 'gpus=(--gpus "device=$SLURM_JOB_GPUS")' in text
    assert '"${gpus[@]}"' in text


def test_container_names_differ_by_cell_and_run() -> None:
    a = script.container_name(_spec())
    b = script.container_name(cell_spec("img", "e/h/t", "run-1", "/o", Scenario("t"), RunSettings()))
    c = script.container_name(cell_spec("img", "e/h/s", "run-2", "/o", Scenario("s"), RunSettings()))
    assert len({a, b, c}) == 3 and all(n.startswith("refenv-cell-") for n in (a, b, c))


def test_time_limits_round_up_to_whole_minutes() -> None:
    assert [script.time_limit(t) for t in (1, 59, 60, 61, 240)] == ["1", "1", "1", "2", "4"]


def test_sbatch_argv_names_the_run_and_the_placement() -> None:
    spec = _spec()
    argv = script.sbatch_argv(spec, FILES, 90, SlurmPlacement(constraint="driver_r535&h100", gres="gpu:1",
                                                             partition="gpu", account="ml", nodelist="n7"))
    assert argv[:2] == ["sbatch", "--parsable"]
    assert "--job-name=refenv-run-1" in argv and "--time=2" in argv and "--mem=2G" in argv
    assert {"--constraint=driver_r535&h100", "--gres=gpu:1", "--partition=gpu", "--account=ml",
            "--nodelist=n7"} <= set(argv)
    assert f"--output={FILES.log}" in argv and argv[-1] == FILES.script
    bare = script.sbatch_argv(spec, FILES, 90, SlurmPlacement())
    assert not [a for a in bare if a.startswith(("--constraint", "--gres", "--partition", "--account"))]


def test_pyxis_and_oci_scripts_start_the_container_through_srun() -> None:
    spec = _spec()
    pyxis = script.pyxis_script(spec, FILES)
    line = next(ln for ln in pyxis.splitlines() if ln.startswith("srun"))
    words = shlex.split(line)
    assert "--container-image=dockerd://refenv/env-x:abc" in words
    assert "--container-mounts=/r/cells/e/h/s:/out" in words
    assert "env" in words and "-i" in words, "the cell's process gets exactly its variables"
    assert "CUDA_VISIBLE_DEVICES=1" in words
    real = script.pyxis_script(_spec(env=(), real=True), FILES)
    assert "export NVIDIA_VISIBLE_DEVICES=all\n" in real, "pyxis's GPU hook reads srun's environment"
    assert "export NVIDIA_VISIBLE_DEVICES" not in script.pyxis_script(_spec(gpus="none", env=()), FILES)
    oci = script.oci_script(spec, FILES, "/bundles/cell")
    assert "srun --export=NONE --container=/bundles/cell" in oci
    for text in (pyxis, oci):
        assert "$outcome" in text and text.rstrip().endswith("exit 0")


def test_cells_sharing_their_options_go_in_one_pack_started_by_srun(tmp_path: Path) -> None:
    from refenv.engines.slurm import packs

    spec = _spec()
    files = [script.JobFiles(str(tmp_path / f"c{i}.sh"), str(tmp_path / f"c{i}.log"), str(tmp_path / f"c{i}.json"))
             for i in range(3)]
    argvs = [script.sbatch_argv(spec, f, 90, SlurmPlacement()) for f in files]
    assert len({script.pack_key(a) for a in argvs}) == 1, "only the log and the script differ"
    other = script.sbatch_argv(spec, files[0], 90, SlurmPlacement(constraint="driver_r535"))
    assert script.pack_key(other) != script.pack_key(argvs[0])
    argv = packs.srun_argv(script.pack_key(argvs[0]), packs.Pack((0, 1, 2), 2), "/c/pack.log", "/c/pack.sh")
    assert argv[0] == "srun" and "--parsable" not in argv and "--no-requeue" not in argv
    assert "--cpus-per-task=2" in argv and "--export=NIL" in argv and argv[-2:] == ["--output=/c/pack.log", "/c/pack.sh"]


def test_a_launcher_whose_scripts_are_only_rendered_is_refused_before_any_job() -> None:
    """pyxis and oci scripts are rendered and tested as text; the engine runs the docker launcher only."""
    def no_sinfo() -> str:
        raise AssertionError("nothing may be asked of the cluster")

    with pytest.raises(RefenvError, match="'pyxis': refenv renders its job scripts but does not run them yet"):
        SlurmEngine(cast(CellEngine, None), (), "pyxis", Commands(sinfo_json=no_sinfo))
