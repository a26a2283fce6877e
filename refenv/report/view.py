"""A tolerant reading of `cells.json` shared by every renderer: header, counts, grids, labels, fixes.

An interrupted run writes a partial document, and older or newer writers may leave keys out, so every
accessor here takes whatever it is given and answers "—" (or an empty list) for what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from refenv.report.formats import MISSING, as_dict, as_list, fmt_seconds, text
from refenv.results import BAD, NOT_RUN, PASS, STATUSES

NO_FIX = ("the harness recorded no remediation: the rules and the observation disagree, so compare the expected "
          "reason with the findings (a wrong rule, or a setting that did not reach the container)")
# The order a reader wants problems in: wrong answers first, then the runs that gave none.
ATTENTION_ORDER = (*BAD, NOT_RUN)


def run(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's `run` section (empty when absent)."""
    return as_dict(doc.get("run"))


def cells(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cell record that is a dict."""
    return [c for c in as_list(doc.get("cells")) if isinstance(c, dict)]


def status_of(cell: dict[str, Any]) -> str:
    """The cell's status, upper-cased; unknown statuses are kept as written."""
    return str(cell.get("status") or NOT_RUN).upper()


def status_counts(doc: dict[str, Any]) -> dict[str, int]:
    """Cells per status, counted from the cells themselves, every known status present."""
    counts = dict.fromkeys(STATUSES, 0)
    for cell in cells(doc):
        status = status_of(cell)
        counts[status] = counts.get(status, 0) + 1
    return counts


def outcome(doc: dict[str, Any]) -> str:
    """'PASSED', 'FAILED', 'INTERRUPTED' or 'EMPTY': the run's one-word answer."""
    counts = status_counts(doc)
    if run(doc).get("interrupted"):
        return "INTERRUPTED"
    if not cells(doc):
        return "EMPTY"
    if any(counts.get(s, 0) for s in BAD):
        return "FAILED"
    return "PASSED"


def _names(records: Any, from_cells: Iterable[str]) -> list[str]:
    names = [str(r["name"]) for r in as_list(records) if isinstance(r, dict) and r.get("name")]
    return names + sorted({n for n in from_cells if n and n not in names})


def environment_names(doc: dict[str, Any]) -> list[str]:
    """Environments in the document's order, then any that only cells name."""
    return _names(doc.get("environments"), (str(c.get("environment") or "") for c in cells(doc)))


def host_names(doc: dict[str, Any]) -> list[str]:
    """Hosts in the document's order, then any that only cells name."""
    return _names(doc.get("hosts"), (str(c.get("host") or "") for c in cells(doc)))


def scenario_names(doc: dict[str, Any]) -> list[str]:
    """Scenarios in the document's order, then any that only cells name."""
    return _names(doc.get("scenarios"), (str(c.get("scenario") or "") for c in cells(doc)))


def record(doc: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    """The environment, host or scenario record called `name` (empty when absent)."""
    for r in as_list(doc.get(section)):
        if isinstance(r, dict) and r.get("name") == name:
            return r
    return {}


def cell_id(cell: dict[str, Any]) -> str:
    """The cell's id, or env/host/scenario when it has none."""
    return str(cell.get("id") or f"{cell.get('environment')}/{cell.get('host')}/{cell.get('scenario')}")


@dataclass(frozen=True)
class Grid:
    """One scenario's grid: environments down, hosts across, the cell (or None) at each crossing."""

    scenario: str
    description: str
    hosts: tuple[str, ...]
    rows: tuple[tuple[str, tuple[dict[str, Any] | None, ...]], ...]


def grids(doc: dict[str, Any]) -> list[Grid]:
    """One grid per scenario, in the document's order."""
    index = {(c.get("environment"), c.get("host"), c.get("scenario")): c for c in cells(doc)}
    envs, hosts = environment_names(doc), host_names(doc)
    out = []
    for scenario in scenario_names(doc):
        rows = tuple((env, tuple(index.get((env, host, scenario)) for host in hosts)) for env in envs)
        out.append(Grid(scenario, str(record(doc, "scenarios", scenario).get("description") or ""),
                        tuple(hosts), rows))
    return out


def expected(cell: dict[str, Any]) -> dict[str, Any]:
    return as_dict(cell.get("expected"))


def observed(cell: dict[str, Any]) -> dict[str, Any]:
    return as_dict(cell.get("observed"))


def simulated(cell: dict[str, Any]) -> bool:
    """True when the observed verdict came from the simulated driver."""
    return bool(observed(cell).get("simulated"))


def cell_label(cell: dict[str, Any] | None) -> str:
    """'PASS OK', 'FAIL expected X / observed Y', 'TIMEOUT', '—' for a crossing with no cell."""
    if cell is None:
        return MISSING
    status = status_of(cell)
    exp, obs = expected(cell).get("verdict"), observed(cell).get("verdict")
    if status == PASS:
        return f"PASS {obs or exp or ''}".strip()
    if obs:
        return f"{status} expected {text(exp)} / observed {obs}"
    return status  # no observation: the status (BUILD_FAILED, TIMEOUT, ...) is the whole answer


def findings(cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The observed findings that are dicts."""
    return [f for f in as_list(observed(cell).get("findings")) if isinstance(f, dict)]


def fixes(cell: dict[str, Any]) -> list[str]:
    """Every remediation step of the cell's findings, errors first, each once."""
    rank = {"error": 0, "warning": 1}
    ordered = sorted(findings(cell), key=lambda f: rank.get(str(f.get("severity")), 2))
    seen: list[str] = []
    for finding in ordered:
        for step in as_list(finding.get("remediation")):
            if isinstance(step, str) and step and step not in seen:
                seen.append(step)
    return seen


def attention(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cell that did not PASS: FAIL first, then the ones that could not answer, NOT_RUN last."""
    rank = {s: i for i, s in enumerate(ATTENTION_ORDER)}
    bad = [c for c in cells(doc) if status_of(c) != PASS]
    return sorted(bad, key=lambda c: rank.get(status_of(c), len(rank)))


def build_failures(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Environments whose image failed to build."""
    return [e for e in as_list(doc.get("environments"))
            if isinstance(e, dict) and str(as_dict(e.get("build")).get("status")).upper() == "FAILED"]


def _selection(sel: dict[str, Any]) -> str:
    parts = []
    for key in ("env", "host", "scenario"):
        chosen = [str(v) for v in as_list(sel.get(key))]
        parts.append(f"{key}: {', '.join(chosen) if chosen else 'all'}")
    return "; ".join(parts)


def header_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The run header as (label, value) pairs: when, where, what was selected, how long."""
    r = run(doc)
    docker, machine = as_dict(r.get("docker")), as_dict(r.get("machine"))
    runtime = docker.get("nvidia_runtime")
    where = ", ".join(p for p in (text(machine.get("hostname")),
                                  f"{machine['cores']} cores" if machine.get("cores") else "",
                                  f"{machine['parallel']} cells at once" if machine.get("parallel") else "") if p)
    rows = [
        ("run", text(r.get("id"))),
        ("started", text(r.get("started"))),
        ("finished", text(r.get("finished")) + (" (interrupted)" if r.get("interrupted") else "")),
        ("wall time", fmt_seconds(r.get("wall_s"))),
        ("machine", where),
        ("docker", f"{text(docker.get('server_version'))}, NVIDIA runtime: "
                   f"{MISSING if runtime is None else text(bool(runtime))}"),
        ("matrix", text(r.get("matrix_file"))),
        ("selection", _selection(as_dict(r.get("selection")))),
        ("versions", f"refenv {text(r.get('refenv_version'))}, harness {text(r.get('harness_version'))}"),
    ]
    return rows


def counts_line(doc: dict[str, Any]) -> str:
    """'12 cells: 9 PASS, 1 FAIL, 2 NOT_RUN (3 cached)': only the statuses that occur."""
    counts = status_counts(doc)
    total = sum(counts.values())
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    cached = sum(1 for c in cells(doc) if c.get("cached"))
    line = f"{total} cell{'' if total == 1 else 's'}" + (": " + ", ".join(parts) if parts else "")
    return line + (f" ({cached} cached)" if cached else "")


@dataclass(frozen=True)
class Group:
    """Cells that did not pass for the same reason: told once, with every cell named."""

    status: str
    reason: str
    cells: tuple[dict[str, Any], ...]


def attention_groups(doc: dict[str, Any]) -> list[Group]:
    """`attention(doc)` with cells of one status and one reason gathered (a failed build fails every cell)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in attention(doc):
        groups.setdefault((status_of(cell), text(cell.get("reason"))), []).append(cell)
    return [Group(status, reason, tuple(members)) for (status, reason), members in groups.items()]


def gpus_text(host: dict[str, Any]) -> str:
    """'2× NVIDIA H100 80GB HBM3 (sm 9.0)': the host's GPUs, alike ones counted once."""
    counts: dict[str, int] = {}
    for g in map(as_dict, as_list(host.get("gpus"))):
        key = f"{text(g.get('name'))} (sm {text(g.get('compute_capability'))})"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n}× {k}" if n > 1 else k for k, n in counts.items()) or MISSING


def build_text(env: dict[str, Any]) -> str:
    """'BUILT 55 s', 'CACHED', 'FAILED 2 min 02 s', or '—'."""
    build = as_dict(env.get("build"))
    parts = [str(build["status"])] if build.get("status") else []
    if isinstance(build.get("wall_s"), (int, float)) and not isinstance(build.get("wall_s"), bool):
        parts.append(fmt_seconds(build["wall_s"]))
    return " ".join(parts) or MISSING
