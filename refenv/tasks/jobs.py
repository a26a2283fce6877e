"""The jobs over a run: reproduce a user's report, publish what a run proved, read a cluster's nodes."""

from __future__ import annotations

import sys
from pathlib import Path

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import guarded, load_matrix, stamp


@task(iterable=["env"], help={
    "partition": "the Slurm partition whose nodes to probe (default: every node)",
    "matrix": "the matrix whose environments are judged (default: matrix.yaml)",
    "env": "only these environments (repeat; default: all of the matrix)",
    "backend": "slurm (a probe job per node) or kubernetes (every GPU node, read from its GFD labels)",
    "results": "where the probes' documents go (default: results/fleet)",
})
@guarded
def fleet(c: Context, partition: str | None = None, matrix: str = "matrix.yaml", env: list[str] | None = None,
          backend: str = "slurm", results: str = "results/fleet") -> None:
    """Per node of the cluster: driver, GPUs, and which environments can use them, or what the node needs."""
    from refenv import fleet as fleet_view
    from refenv.engines.slurm.probe import probe_nodes

    if backend not in ("slurm", "kubernetes"):
        raise Exit(f"refenv: invoke fleet reads Slurm or Kubernetes nodes, not {backend!r}", code=2)
    m = load_matrix(matrix, env, None, None)
    if backend == "kubernetes":
        from refenv.engines.connect import kube_api
        from refenv.engines.kubernetes.nodes import node_probes

        probes = node_probes(kube_api())
    else:
        probes = probe_nodes(Path(results).resolve() / stamp(), partition)
    if not probes:
        raise Exit(f"refenv: no node is up{f' in partition {partition}' if partition else ''}", code=1)
    reports = [fleet_view.report(p, m.environments) for p in probes]
    for r in reports:
        print("\n".join(fleet_view.lines(r)) + "\n")
    for e in m.environments:
        print(f"{e.name} needs: " + "; ".join(fleet_view.needs(reports, e.name)))



@task(positional=["report"], iterable=["gpu"], help={
    "report": "a file holding what was pasted (`python -m torch.utils.collect_env`, torch's warnings and "
              "tracebacks, nvidia-smi, install commands, prose) or a saved `harness diagnose --json` document; '-' "
              "reads standard input; the word 'flags' describes the stack with --torch ...",
    "torch": "with REPORT 'flags': the torch build, e.g. 2.1.0+cu121 (or 2.1.0 for PyPI's default build)",
    "driver": "with --torch: the Linux driver version, e.g. 470.182.03 (none given: a host without a driver)",
    "gpu": "with --torch: a GPU name, e.g. 'Tesla T4' or '2 x NVIDIA A100-SXM4-80GB' (up to 16 of a name; repeat "
           "for more: at most 16 times, 64 GPUs in all)",
    "cuda-visible-devices": "with --torch: CUDA_VISIBLE_DEVICES as set on that machine (\"\" for empty)",
    "python": "with --torch: the Python, e.g. 3.10",
    "no-gpus": "with --torch: the container was started without GPU access",
    "fault": "with --torch: mismatch, not-loaded, stub, cuinit-3, cuinit-803, cuinit-804, cuinit-999 or cuinit-hang",
    "verify-fix": "apply the fix (wheel, driver or scenario) and show that the cell turns OK",
    "fix": "which fix of DRIVER_TOO_OLD to verify: auto (the driver), driver or wheel",
    "matrix": "the matrix whose environments and base a reproduction reuses (default: matrix.yaml)",
    "results": "where the runs' folders go (default: results/reproduce)",
    "rerun": "run the cells again instead of reusing results whose inputs did not change",
    "verbose": "stream every build log line",
})
@guarded
def reproduce(c: Context, report: str, torch: str | None = None, driver: str | None = None,
              gpu: list[str] | None = None, cuda_visible_devices: str | None = None, python: str | None = None,
              no_gpus: bool = False, fault: str | None = None, verify_fix: bool = False, fix: str = "auto",
              matrix: str = "matrix.yaml", results: str = "results/reproduce", rerun: bool = False,
              verbose: bool = False) -> None:
    """Rebuild a user's stack from their report (or flags), run it on a simulated host, show reported vs reproduced."""
    from harness.inputs import read_stream
    from harness.intake import ReportError, load_report
    from harness.intake.clean import MAX_CHARS
    from refenv.reproduce import ReproduceError, from_flags, infer
    from refenv.reproduce.account import render, succeeded
    from refenv.reproduce.execute import Settings
    from refenv.reproduce.execute import reproduce as run_reproduction
    from refenv.run.progress import ConsoleUI

    report_cap = MAX_CHARS * 4  # the bound load_report puts on a report file
    flags = report == "flags"
    if flags != bool(torch):
        raise Exit("refenv reproduce: give a REPORT file, or the word 'flags' with --torch VERSION (and --driver, "
                   "--gpu, ...): `invoke reproduce flags --torch 2.1.0+cu121 --driver 470.182.03`", code=2)
    if fix not in ("auto", "driver", "wheel"):
        raise Exit(f"refenv: --fix {fix!r}: expected auto, driver or wheel", code=2)
    try:
        if torch:
            inferred = from_flags(torch, driver, gpu or [], cuda_visible_devices, python, no_gpus, fault)
            source = "flags"
        else:
            # Bounded: a pipe reports no size, and `yes | invoke reproduce -` must not fill the memory.
            data = read_stream(sys.stdin.buffer, "standard input", report_cap) if report == "-" \
                else Path(report)
            inferred, source = infer(load_report(data)), "<stdin>" if report == "-" else report
        ui = ConsoleUI(verbose=verbose)
        settings = Settings(Path(matrix), Path(results).resolve(), verify_fix, fix, use_cache=not rerun)
        try:
            outcome = run_reproduction(inferred, source, settings, ui)
        finally:
            ui.close()
    except (ReportError, ReproduceError) as exc:
        raise Exit(f"refenv reproduce: {str(exc).splitlines()[0]}", code=2) from None
    print(render(outcome), end="")
    if not succeeded(outcome):
        raise Exit(code=1)



@task(iterable=["env"], help={
    "registry": "where to push: HOST[:PORT]/NAMESPACE, e.g. registry.example.com/ml (127.0.0.0/8 needs no TLS)",
    "env": "environments to publish (glob; default: every one the matrix defines)",
    "dry-run": "judge each environment and show what would be pushed, with its labels; push nothing",
    "repository": "one repository name for every environment (default: each environment's own name)",
    "no-pull-check": "skip pulling the release back by digest and re-running a ready cell from it",
    "matrix": "the matrix file (default: matrix.yaml)",
    "results": "where the matrix runs are, and where results/publish/<time>.json goes (default: results/)",
})
@guarded
def publish(c: Context, registry: str, env: list[str] | None = None, dry_run: bool = False,
            repository: str | None = None, no_pull_check: bool = False, matrix: str = "matrix.yaml",
            results: str = "results") -> None:
    """Push the environments a full matrix run proved, labelled with where torch gets a GPU.

    Credentials: REFENV_REGISTRY_USERNAME / REFENV_REGISTRY_PASSWORD, else the Docker config."""
    import os

    from refenv.publish import release
    from refenv.publish.run import Settings
    from refenv.publish.run import publish as run_publish

    settings = Settings(release.parse_registry(registry), load_matrix(matrix, env, None, None),
                        Path(results).resolve(), dry_run, not no_pull_check,
                        release.repository_name(repository) if repository else None)
    outcome = run_publish(settings, print, os.environ)
    if outcome.manifest:
        print(f"manifest: {outcome.manifest}")
    if not outcome.ok:
        raise Exit(f"{len(outcome.refused)} refused, {len(outcome.failed)} failed, "
                   f"{sum(not p.pull_check.held for p in outcome.published)} pull-back check(s) failed",
                   code=1)

