"""Several environments in one report, told apart: a working env1 beside a broken env2, a second Python, a
new torch after an upgrade, a command run directly and under a launcher.

A line marks its environment by the Python its site-packages belong to, a conda or virtual environment's
name (in a path, a prompt, `conda activate`), the torch version it shows, or the launcher a `python` command
runs under (`srun`, `mpirun`, `docker run`). The report is cut where a marker changes, and the pieces with
the same markers are one environment. Lines before the first marker (a title, the question) are the
report's preamble: they go with the environment the answer is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.intake.parsed import Line

_SITE_RE = re.compile(r"python(?P<v>3\.?\d{1,2}|2\.7)[\\/](?:lib[\\/])?(?:site|dist)-packages", re.I)
_VENV_RE = re.compile(r"[\\/]envs[\\/](?P<n>[\w.-]{1,60})[\\/]|\bconda activate (?P<a>[\w.-]{1,60})")
_PROMPT_VENV_RE = re.compile(r"^\((?P<n>[\w.-]{1,60})\)")
_TORCH_RE = re.compile(r"\bPyTorch version:\s{0,3}(?P<v>\d[\w.]{0,30})|(?:^|\s)(?:py)?torch\s{1,40}"
                       r"(?P<row>\d{1,2}\.\d{1,2}\.\d{1,3}[\w.]{0,20})(?:\+\S{1,20})?(?:\s|$)")
_VERSION_LINE_RE = re.compile(r"^'?(?P<v>\d{1,2}\.\d{1,2}\.\d{1,3}(?:\.dev\d{1,12})?)(?:\+\S{1,20})?'?$")
_LAUNCH_RE = re.compile(r"^(?:(?P<l>srun|mpirun|mpiexec|torchrun|docker (?:run|exec)|kubectl exec|singularity exec|"
                        r"apptainer exec|ray job submit)\b[^|;&]{0,300}?\s)?python\d?(?:\.\d{1,2})?\s")
MAX_ENVIRONMENTS = 6  # a report compares a few environments; more marks are noise
MAX_PIECES = 18       # ... and switches between them a few times, not at every line of a log
MAX_LINES = 4_000     # a log longer than this is read as one environment


@dataclass(frozen=True)
class Environment:
    """One environment of a report: what marks it, and the logical lines that are its."""

    marks: tuple[tuple[str, str], ...]
    lines: tuple[int, ...]
    preamble: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        said = {"python": "Python {}", "venv": "environment '{}'", "torch": "torch {}", "launcher": "run {}"}
        return ", ".join(said[kind].format(value) for kind, value in self.marks)


def marks(line: Line, previous: Line | None) -> dict[str, str]:
    """The environment marks one line carries."""
    text = line.text
    found: dict[str, str] = {}
    site = _SITE_RE.search(text)
    if site:
        v = site.group("v").replace(".", "")
        found["python"] = f"{v[0]}.{v[1:]}"
    venv = _VENV_RE.search(text) or _PROMPT_VENV_RE.match(line.prompt)
    if venv:
        found["venv"] = next(g for g in venv.groups() if g)
    torch = _TORCH_RE.search(text)
    answer = _VERSION_LINE_RE.match(text) if previous is not None and "torch.__version__" in previous.text else None
    if answer:
        found["torch"] = answer.group("v")
    elif torch:
        found["torch"] = next(g for g in torch.groups() if g).split("+")[0]
    launch = _LAUNCH_RE.match(text)
    if launch:
        found["launcher"] = f"under {launch.group('l')}" if launch.group("l") else "directly"
    return found


def split(lines: list[Line]) -> list[Environment]:
    """The report's environments (one when nothing tells several apart)."""
    one = [Environment((), tuple(range(len(lines))))]
    if len(lines) > MAX_LINES:
        return one
    pieces: list[tuple[dict[str, str], list[int]]] = []
    current: dict[str, str] = {}
    preamble: list[int] = []
    previous = None
    last = -1
    for i, line in enumerate(lines):
        found = marks(line, previous) if line.text else {}
        answer = previous is not None and "torch.__version__" in previous.text and "torch" in found
        if found and any(current.get(k, v) != v for k, v in found.items()):
            current = {}
        if found and not current:
            pieces.append((current, []))
            if answer and last >= 0:  # the expression a version answers opens the environment with it
                (pieces[-2][1] if len(pieces) > 1 else preamble).remove(last)
                pieces[-1][1].append(last)
        current.update(found)
        (pieces[-1][1] if pieces else preamble).append(i)
        if line.text:
            previous, last = line, i
    if len(pieces) > MAX_PIECES:
        return one
    merged: list[tuple[dict[str, str], list[int]]] = []
    for marked, members in pieces:
        same = next((m for m in merged if all(m[0].get(k, v) == v for k, v in marked.items())
                     and any(m[0].get(k) == v for k, v in marked.items())), None)
        if same is None:
            merged.append((dict(marked), list(members)))
        else:
            same[0].update(marked)
            same[1].extend(members)
    if len(merged) < 2 or len(merged) > MAX_ENVIRONMENTS:
        return one
    order = ("python", "venv", "torch", "launcher")
    return [Environment(tuple((k, m[k]) for k in order if k in m), tuple(sorted(members)), tuple(preamble))
            for m, members in merged]
