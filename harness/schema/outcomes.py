"""The outcome of a check, one vocabulary for the harness and the host side: DCGM's.

DCGM's diagnostics answer PASS, WARN, FAIL, SKIP (not applicable here, with the reason) or NOT_RUN, and
nvbandwidth's test cases pass, are waived or error; ERROR is a check that could not give an answer (it
raised, or what it needs could not run), which is never a disagreement. Every status the harness writes
(a probe, a sweep, a memory ledger, a verification section) is one of these; refenv's cell statuses
(refenv/model/status.py) add its own ways for a container to end (a timeout, an OOM kill, an image that did
not build). A finding's severity (`SEVERITY_ERROR`, harness/schema/verdicts.py) is another word.
"""

from __future__ import annotations

from collections.abc import Iterable

PASS = "PASS"
WARN = "WARN"
FAIL = "FAIL"
SKIP = "SKIP"          # not applicable here (waived, not modelled), with the reason beside it
ERROR = "ERROR"        # no answer: the check raised, or what it needs could not run
NOT_RUN = "NOT_RUN"    # not attempted (interrupted, or not runnable where it was asked)
OUTCOMES = (PASS, WARN, FAIL, SKIP, ERROR, NOT_RUN)

# How bad each is when several are summed into one (a document's status is its worst part's): an answer
# that disagrees outranks one that could not be given, which outranks a warning; nothing run is SKIP.
_RANK = {SKIP: 0, NOT_RUN: 0, PASS: 1, WARN: 2, ERROR: 3, FAIL: 4}


def worst(statuses: Iterable[str]) -> str:
    """FAIL over ERROR over WARN over PASS over SKIP; SKIP when there is nothing."""
    out = SKIP
    for status in statuses:
        if status not in _RANK:
            raise ValueError(f"unknown status {status!r}; expected one of {', '.join(OUTCOMES)}")
        if _RANK[status] > _RANK[out]:
            out = status
    return out

