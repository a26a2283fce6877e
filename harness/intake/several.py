"""The answer to a report of several environments: each is read and judged alone, and the one the report is
about answers, saying which it is.

A report shows a broken environment, often beside one that works: the answer is about one that fails.
Among those, a verdict resting on measured facts (the version arithmetic of 'found version 9010' against a
cu102 wheel) outweighs a generic symptom of another (a 'CUDA unknown error'); when two fail differently the
answer says so and is not given at high confidence, and when they are equally sure it is given at low. An
environment that works with torch built for an older CUDA than the failing one's says the driver is older
than the newer build needs.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable

from harness import compat
from harness.classify import classify
from harness.intake.assess import CONFLICT, TIE, assess_report
from harness.intake.environments import Environment
from harness.intake.parsed import Line, ParsedReport, ReportError
from harness.schema import CANNOT_TELL, HIGH, LOW, MEDIUM, OK, OTHER, Assessment
from harness.schema.envelope import ReportEnvironment

_RANK = {HIGH: 3, MEDIUM: 2, LOW: 1}
OLDER_CUDA = "works_with_older_cuda"


def answer(whole: ParsedReport, lines: list[Line], envs: list[Environment],
           read: Callable[[list[Line]], ParsedReport]) -> ParsedReport:
    """The report of the environment the answer is about, or the whole report's when none stands apart."""
    judged: list[tuple[Environment, ParsedReport, Assessment]] = []
    for env in envs:
        try:
            report = read([lines[i] for i in env.lines])
        except ReportError:
            continue
        judged.append((env, report, _assess(report)))
    verdicts = {a.verdict for _, _, a in judged}
    candidates = [j for j in judged if j[2].verdict != OK]
    if len(judged) < 2 or len(verdicts) < 2 or not candidates:
        return _noted(whole, judged)
    candidates.sort(key=lambda j: (j[2].verdict not in (CANNOT_TELL, OTHER), _RANK[j[2].confidence]), reverse=True)
    env, report, a = candidates[0]
    if env.preamble:  # the title and the question belong to the environment the answer is about
        with contextlib.suppress(ReportError):
            report = read([lines[i] for i in sorted({*env.preamble, *env.lines})])
    clues = dict(report.clues)
    rivals = [j for j in candidates[1:] if j[2].verdict not in (a.verdict, CANNOT_TELL, OTHER)]
    if rivals:
        clues[CONFLICT] = _first(lines, rivals[0][0])
        if _RANK[rivals[0][2].confidence] == _RANK[a.confidence]:
            clues[TIE] = _first(lines, rivals[0][0])
    older = _older_cuda(report, [j for j in judged if j[2].verdict == OK])
    if older is not None:
        clues[OLDER_CUDA] = _first(lines, older)
    notes = [f"the report holds {len(judged)} environments ({'; '.join(_where(lines, e) for e, _, _ in judged)}): "
             f"this answer is about {_where(lines, env)}",
             *(f"{_where(lines, e)}: {j.verdict} ({j.confidence})" for e, _, j in judged if e is not env),
             *report.notes]
    return dataclasses.replace(report, clues=clues, notes=tuple(dict.fromkeys(notes)), environment=env.name,
                               environments=_listed(lines, judged))


def _assess(report: ParsedReport) -> Assessment:
    return assess_report(report.facts, classify(report.facts), report.provenance, report.inferred, report.clues)


def _first(lines: list[Line], env: Environment) -> tuple[int, str]:
    line = next((lines[i] for i in env.lines if lines[i].text), lines[env.lines[0]])
    return line.number, line.raw


def _where(lines: list[Line], env: Environment) -> str:
    marked = [lines[i].number for i in env.lines if lines[i].text]
    return f"{env.name or 'unnamed'} (lines {marked[0]}-{marked[-1]})" if marked else env.name


def _listed(lines: list[Line],
            judged: list[tuple[Environment, ParsedReport, Assessment]]) -> tuple[ReportEnvironment, ...]:
    return tuple(ReportEnvironment(env.name, (lines[env.lines[0]].number, lines[env.lines[-1]].number), a.verdict,
                                   a.confidence) for env, _, a in judged)


def _noted(whole: ParsedReport, judged: list[tuple[Environment, ParsedReport, Assessment]]) -> ParsedReport:
    if len(judged) < 2:
        return whole
    names = "; ".join(env.name for env, _, _ in judged)
    return dataclasses.replace(whole, notes=(*whole.notes, f"the report holds {len(judged)} environments ({names}); "
                                             "they point the same way, so the answer reads them together"))


def _older_cuda(failing: ParsedReport, working: list[tuple[Environment, ParsedReport, Assessment]]) \
        -> Environment | None:
    """An environment that works with torch built for a CUDA the failing one's driver evidently supports,
    older than the failing build's: before CUDA 11 each release needed a newer driver, since then each major
    (facts/cuda-compat.md, minor-version compatibility)."""
    failed = failing.facts.get("torch", {}).get("cuda")
    if not failed or failing.facts.get("torch", {}).get("is_available") is not False:
        return None
    new = compat.parse_version(str(failed))[:2]
    for env, report, _ in working:
        worked = report.facts.get("torch", {}).get("cuda")
        if not worked:
            continue
        old = compat.parse_version(str(worked))[:2]
        if new[0] > old[0] or (old[0] < 11 and new > old):
            return env
    return None
