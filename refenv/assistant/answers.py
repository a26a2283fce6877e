"""What the MCP server's tools answer: refenv's own functions called with the tool's arguments, their results as
plain JSON data, every string through the one redaction boundary (harness/answer/redact.py).

No judgement lives here: the diagnosis is harness.diagnosis's, the stack harness.stack's, the memory ledgers
harness.memory's, the release table harness.compat's (refenv.releases), the readiness refenv.report's. A bad
argument raises `BadArgument` naming it; the server turns that into the tool's error.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.answer.redact import redact, secrets_in

RESULTS_FILE = "cells.json"


class BadArgument(ValueError):
    """An argument the tool cannot use: which one, and what it expects."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


def redacted(value: Any, known: frozenset[str] = frozenset()) -> Any:
    """Every string in a JSON value through `redact` (keys too), with the secrets of its sources as `known`."""
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, dict):
        return {redact(str(k), known): redacted(v, known) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v, known) for v in value]
    return value


def _out(answer: dict[str, Any], known: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The answer as it leaves: redacted."""
    return {redact(k, known): redacted(v, known) for k, v in answer.items()}


def _findings(doc: Any) -> list[dict[str, Any]]:
    diag = doc.diagnosis
    return [{"title": f.title, "severity": f.severity, "verdict": f.verdict, "evidence": list(f.evidence),
             "fix": list(f.remediation)} for f in (diag.findings if diag else ())]


def _fix(doc: Any) -> list[str]:
    """The remedies of the failing findings, in the order they are examined (the primary verdict's first)."""
    from harness.schema import SEVERITY_ERROR

    diag = doc.diagnosis
    out: list[str] = []
    for f in diag.findings if diag else ():
        if f.severity == SEVERITY_ERROR:
            out += [r for r in f.remediation if r not in out]
    return out


def diagnose_machine(torch_timeout: float = 180.0) -> dict[str, Any]:
    """This machine's diagnosis, gathered now: verdict, findings with evidence and fix, what is not known."""
    from harness.answer.text import public_text
    from harness.diagnosis.live import diagnose_live

    doc = diagnose_live(torch_timeout)
    diag = doc.diagnosis
    answer = {"verdict": diag.verdict if diag else None, "simulated": bool(diag and diag.simulated),
              "findings": _findings(doc), "fix": _fix(doc), "unknowns": list(diag.unknowns if diag else ()),
              "probe_errors": list(doc.probe_errors or ()), "text": public_text(doc)}
    return _out(answer, secrets_in(doc))


def diagnose_report(text: str) -> dict[str, Any]:
    """A pasted report judged: verdict (none at low confidence), confidence, the report's lines it rests on, the
    fix, what to ask the reporter for, and the answer as an issue comment."""
    from harness.answer.comment import evidence_lines, render, states_verdict
    from harness.diagnosis.report import judge_report
    from harness.intake import ReportError
    from harness.intake.source import parse_text

    if not text.strip():
        raise BadArgument("text", "empty; paste the report: `python -m torch.utils.collect_env` output, torch's "
                                  "error, nvidia-smi, or the issue's text")
    try:
        doc = judge_report(parse_text(text), "<pasted>")
    except ReportError as exc:
        raise BadArgument("text", str(exc)) from None
    diag = doc.diagnosis
    a = diag.assessment if diag else None
    answer = {
        "verdict": diag.verdict if diag and states_verdict(doc) else None,
        "confidence": a.confidence if a else None,
        "why": a.why if a else None,
        "not_ruled_out": list(a.competing) if a else [],
        "evidence": [{"line": n, "text": t, "rests_on": r} for n, t, r in evidence_lines(doc)],
        "fix": _fix(doc),
        "ask_for": list(a.ask) if a else [],
        "findings": _findings(doc),
        "comment": render(doc),
    }
    return _out(answer, secrets_in(doc, text))


_CAPABILITY = re.compile(r"^\d{1,2}\.\d$")
_CUDA = re.compile(r"^\d{1,2}\.\d{1,2}$")


def stack(image: str | None = None, capabilities: Sequence[str] = (), driver_cuda: str | None = None,
          imports: bool = True) -> dict[str, Any]:
    """The CUDA stack of this environment (or of an image, read in a container as `refenv matrix` reads it):
    torch and every extension with its CUDA, architectures and import, judged against the GPUs and driver named."""
    from harness import compat
    from harness.schema import encode
    from harness.stack.section import host_from, judged
    from harness.stack.text import render_stack

    for cc in capabilities:
        if not _CAPABILITY.match(cc):
            raise BadArgument("capabilities", f"{cc!r} is not a compute capability; give one such as 8.9")
    if driver_cuda is not None and not _CUDA.match(driver_cuda):
        raise BadArgument("driver_cuda", f"{driver_cuda!r} is not a CUDA version; give one such as 12.8")
    host = host_from(None, tuple(capabilities), compat.cuda_to_int(driver_cuda) if driver_cuda else None)
    if image is None:
        from harness.stack.inventory import inventory

        found = inventory(imports=imports)
        where = "this environment"
    else:
        found, where = _image_inventory(image), f"image {image}"
    section = judged(found, host)
    answer = {"of": where, "ready": section.ready, "stack": encode(section),
              "text": render_stack(section, f"refenv stack ({where})")}
    return _out(answer, secrets_in(answer))


def _image_inventory(image: str) -> Any:
    """The image's inventory, probed in a container by refenv's image reader (cached by image id)."""
    from refenv import paths
    from refenv.builder.images import tree_digest
    from refenv.engines.connect import local_engine
    from refenv.errors import RefenvError
    from refenv.run import imagefacts

    if not image.strip() or any(c.isspace() for c in image) or len(image) > 500:
        raise BadArgument("image", f"{image!r} is not an image reference; give one such as "
                                   "nvcr.io/nvidia/pytorch:25.01-py3")
    try:
        engine = local_engine("docker")
        labels = engine.image_labels(image)
    except RefenvError as exc:
        raise BadArgument("image", f"the Docker engine cannot be asked about it: {exc}") from None
    if labels is None:
        raise BadArgument("image", f"{image} is not on this Docker engine; pull or build it first")
    facts = imagefacts.read_image(engine, labels, image, "python3", tree_digest(paths.harness_dir()), "mcp")
    if facts.stack is None:
        raise BadArgument("image", f"{image}: {facts.error or 'its stack could not be read'}")
    return facts.stack


MEMORY_MODES = ("train", "infer")


def memory_fit(model: str | None = None, config: str | None = None, mode: str = "train", regime: str = "mixed",
               gpus: int = 1, gpu: str | None = None, budget: str | None = None, seq: int | None = None,
               micro_batch: int | None = None, fit: bool = True) -> dict[str, Any]:
    """The memory ledgers of training or serving a model, whether they fit a GPU or a budget, and the ladder of
    changes that make them fit: harness.memory's `memory` command with these options."""
    from harness.commands import memory as command
    from harness.inputs import InputError, finite_or_null
    from harness.memory.budget import judge
    from harness.memory.estimate import TrainSetup, estimate_inference, estimate_training
    from harness.memory.flags import model_of
    from harness.memory.ladder import ladder
    from harness.memory.output import render_text
    from harness.memory.prediction import document
    from harness.memory.shape import MemoryInputError
    from harness.schema import encode

    if (model is None) == (config is None):
        raise BadArgument("model", "name a model (e.g. llama-3-8b) or give config (a config.json path), one of them")
    if gpu is not None and budget is not None:
        raise BadArgument("gpu", "give a GPU or a budget, not both")
    parser = argparse.ArgumentParser(add_help=False)
    command.register(parser.add_subparsers())
    args = parser.parse_args(["memory"])
    values = {"model": model, "config": config, "mode": mode, "regime": regime, "gpus": gpus, "gpu": gpu,
              "budget": budget, "fit": fit}
    values.update({k: v for k, v in (("seq", seq), ("micro_batch", micro_batch)) if v is not None})
    args = argparse.Namespace(**{**vars(args), **values})
    try:
        command._check_text_options(args)
        m = model_of(args)
        setup = command._setup(args, m)
        est = estimate_training(m, setup) if isinstance(setup, TrainSetup) else estimate_inference(m, setup)
        limit = command._budget(args)
        verdict = judge(est.peak_bytes, limit) if limit else None
        plans = ladder(m, setup, limit) if fit and limit else None
    except (MemoryInputError, InputError) as exc:
        raise BadArgument(_argument_of(str(exc)), str(exc)) from None
    # As asked, and at the ladder's last rung (the change that makes it fit, where one does); None without a budget.
    answer = {"fits": None if verdict is None else verdict.fits,
              "fits_after_ladder": None if not plans else plans[-1].fit.fits,
              "prediction": finite_or_null(encode(document(est, verdict, plans))),
              "text": render_text(est, verdict, plans)}
    return _out(answer)


def _argument_of(message: str) -> str:
    """The tool argument a memory error names ('--gpu: ...' -> 'gpu'); 'model' when it names none."""
    m = re.match(r"--([a-z-]+)", message)
    return m.group(1).replace("-", "_") if m else "model"


def compat(release: str) -> dict[str, Any]:
    """A torch release's builds, each with its CUDA, minimum drivers, architectures and install line."""
    from refenv.releases import UnknownRelease, release_facts

    try:
        return _out(release_facts(release))
    except UnknownRelease as exc:
        raise BadArgument("release", str(exc)) from None


def _run(argument: str, folder: str) -> Any:
    from refenv.errors import RefenvError
    from refenv.model.rundoc import load_run

    path = Path(folder)
    if not path.exists():
        raise BadArgument(argument, f"{folder} does not exist; give a results folder (it holds {RESULTS_FILE}) or "
                                    "its cells.json")
    try:
        return load_run(path)
    except RefenvError as exc:
        raise BadArgument(argument, str(exc)) from None


def matrix_readiness(results: str, against: str | None = None) -> dict[str, Any]:
    """A matrix run's readiness: per environment, where torch gets a GPU, where not and the smallest fix; and
    with `against` (another run), what changed from that run to this one."""
    from refenv.report import diff as run_diff
    from refenv.report import ready

    doc = _run("results", results)
    answer: dict[str, Any] = {
        "run": doc.run.id,
        "environments": [dataclasses.asdict(s) for s in ready.sections(doc)],
        "changes": None,
    }
    if against is not None:
        d = run_diff.diff(_run("against", against), doc)
        answer["changes"] = {"regressed": d.regressed, "lost": [dataclasses.asdict(m) for m in d.lost],
                             "gained": [dataclasses.asdict(m) for m in d.gained], "broke": list(d.broke),
                             "text": "\n".join(run_diff.lines(d))}
    return _out(answer)
