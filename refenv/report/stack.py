"""The stack beside torch in a run, worded for every report: each environment's extensions, and what of them
cannot run where (pure over the run document).

An environment's inventory was read once from its image (refenv/run/imagefacts.py); each cell judged it
against its host (refenv/run/stacks.py). A problem found on every host of the environment is the image's
own (an import, a pin, a CUDA major); one found on some hosts only is theirs (an architecture, a driver).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.schema import SEVERITY_ERROR as ERROR
from harness.schema import Finding
from harness.stack.text import distribution_line, read_line
from refenv.model.rundoc import EnvironmentRecord, RunDocument


@dataclass(frozen=True)
class Problem:
    title: str
    severity: str
    hosts: str                       # 'every host' or 'r535, r580'
    fixes: tuple[str, ...]
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class StackSection:
    environment: str
    origin: str                      # 'refenv recipe', 'image team/app:1', 'dockerfile /src/Dockerfile'
    lines: tuple[str, ...]           # one per distribution beside the CUDA library wheels
    libraries: str                   # '19 CUDA library wheels: nvidia-cublas 13.1.1.3, ...'
    read: str                        # what the inventory read, and how long it took
    problems: tuple[Problem, ...]
    error: str | None = None         # why the image could not be read

    @property
    def ready(self) -> bool:
        return self.error is None and not any(p.severity == ERROR for p in self.problems)


def _origin(e: EnvironmentRecord) -> str:
    if e.source == "recipe":
        return "refenv's recipe"
    what = f"dockerfile {e.dockerfile}, built as {e.image}" if e.dockerfile else f"image {e.image}"
    return what + (f", run with {e.interpreter}" if e.interpreter else "")


def _problems(doc: RunDocument, environment: str) -> tuple[Problem, ...]:
    cells = [c for c in doc.cells if c.environment == environment and c.stack is not None]
    hosts_of_env = list(dict.fromkeys(c.host for c in cells))
    found: dict[str, tuple[Finding, list[str]]] = {}
    for c in cells:
        assert c.stack is not None
        for f in c.stack.findings:
            entry = found.setdefault(f.title, (f, []))
            if c.host not in entry[1]:
                entry[1].append(c.host)
    out = [Problem(f.title, f.severity, "every host" if len(hosts) == len(hosts_of_env) else ", ".join(hosts),
                   tuple(f.remediation), tuple(f.evidence)) for f, hosts in found.values()]
    return tuple(sorted(out, key=lambda p: p.severity != ERROR))


def sections(doc: RunDocument) -> list[StackSection]:
    """Each environment whose stack was read (or whose image could not be), in the document's order."""
    out = []
    for e in doc.environments:
        if e.stack is None and e.image_error is None:
            continue
        dists = e.stack.distributions if e.stack else ()
        libs = [f"{d.name} {d.version}" for d in dists if d.kind == "cuda-library"]
        out.append(StackSection(
            e.name, _origin(e), tuple(distribution_line(d) for d in dists if d.kind != "cuda-library"),
            f"{len(libs)} CUDA library wheel(s): {', '.join(libs)}" if libs else "no CUDA library wheel",
            read_line(e.stack) if e.stack else "", _problems(doc, e.name), e.image_error))
    return out


def lines(doc: RunDocument) -> list[str]:
    """The sections as plain text, for the console: an environment, its distributions, its problems."""
    out = []
    for s in sections(doc):
        state = "every extension can run" if s.ready else "NOT every extension can run"
        out.append(f"{s.environment} ({s.origin}): {state}")
        if s.error:
            out.append(f"  the image could not be read: {s.error}")
        out += [f"  {line}" for line in s.lines]
        for p in s.problems:
            mark = "ERROR" if p.severity == ERROR else "warn"
            out.append(f"  [{mark}] {p.title} (on {p.hosts})")
            out += [f"      fix: {fix}" for fix in p.fixes[:2]]
    return out


def broken(doc: RunDocument, environment: str) -> dict[str, str]:
    """Distribution -> the first error it has in any cell of the environment."""
    out: dict[str, str] = {}
    for c in doc.cells:
        if c.environment == environment and c.stack is not None:
            for name, state in c.stack.status.items():
                if state == "broken" and name not in out:
                    out[name] = next((f.title for f in c.stack.errors if f.title.startswith(f"{name} ")), state)
    return out


def breaks(doc: RunDocument, old: str, new: str) -> list[str]:
    """'moving to torch 2.6.0 breaks xformers 0.0.28.post3: built for 2.5.1+cu121' for every distribution broken
    under `new` and not under `old` (the reason: the torch it was built for, the torch it requires, or its error)."""
    before, after = broken(doc, old), broken(doc, new)
    env = doc.environment(new)
    dists = {d.name: d for d in (env.stack.distributions if env and env.stack else ())}
    torch = (env.torch if env else None) or "?"
    out = []
    for name, title in after.items():
        if name in before:
            continue
        d = dists.get(name)
        built = d.built_for.torch if d else None
        wants = d.requires_torch() if d else None
        why = f"built for {built}" if built else f"requires torch{wants}" if wants else title
        out.append(f"moving to torch {torch} breaks {name} {d.version if d else ''}: {why}".replace("  ", " "))
    return out
