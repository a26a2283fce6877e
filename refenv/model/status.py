"""A cell's status, the family it belongs to, and how every report shows it: the one table of both.

Statuses follow DCGM's and nvbandwidth's habit of a fixed vocabulary: a cell PASSes when the observed
verdict is the expected one, FAILs when it is not, and says why it could not tell otherwise. The
families are what a reader acts on: the prediction held (agreed), it did not (disagreed), the cell gave
no answer (an error, a timeout, an OOM kill, an image that did not build), or it was not run here
(skipped). Console, progress bar, HTML and JUnit all read their colours and classes from `LOOKS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.schema.outcomes import ERROR, FAIL, NOT_RUN, PASS

__all__ = [
    "AGREED", "ATTENTION_ORDER", "BAD", "BUILD_FAILED", "DISAGREED", "ERROR", "FAIL", "FAMILIES", "LOOKS", "NOT_RUN",
    "NO_ANSWER", "OOM_KILLED", "PASS", "SKIPPED", "STATUSES", "TIMEOUT", "UNKNOWN", "Look", "family", "is_bad", "look",
]

# A cell's statuses. PASS, FAIL, ERROR and NOT_RUN are the harness's outcomes (harness/schema/outcomes.py,
# DCGM's words), so a word means the same in a harness document and in a cell: ERROR, the harness ran but
# wrote no usable result; NOT_RUN, not runnable here (no NVIDIA runtime for `real`) or interrupted.
BUILD_FAILED = "BUILD_FAILED"  # the environment's image could not be built
TIMEOUT = "TIMEOUT"            # the container outlived its time limit and was killed
OOM_KILLED = "OOM_KILLED"      # the kernel killed the container for memory
STATUSES = (PASS, FAIL, ERROR, BUILD_FAILED, TIMEOUT, OOM_KILLED, NOT_RUN)

AGREED = "agreed"
DISAGREED = "disagreed"
NO_ANSWER = "no answer"
SKIPPED = "skipped"
FAMILIES = (AGREED, DISAGREED, NO_ANSWER, SKIPPED)


@dataclass(frozen=True)
class Look:
    """How one status reads everywhere: its family, the rich style, the HTML class, the JUnit element."""

    family: str
    style: str        # rich style on the console and in the progress bar
    css: str          # class of the HTML grid: agreement green, disagreement red, no answer amber,
                      # no image purple, not run grey
    junit: str        # "" (passed), "failure", "error" or "skipped"


LOOKS: dict[str, Look] = {
    PASS: Look(AGREED, "green", "pass", ""),
    FAIL: Look(DISAGREED, "bold red", "fail", "failure"),
    ERROR: Look(NO_ANSWER, "dark_orange", "error", "error"),
    TIMEOUT: Look(NO_ANSWER, "dark_orange", "error", "error"),
    OOM_KILLED: Look(NO_ANSWER, "dark_orange", "error", "error"),
    BUILD_FAILED: Look(NO_ANSWER, "magenta", "build", "error"),
    NOT_RUN: Look(SKIPPED, "bright_black", "notrun", "skipped"),
}
# A status this version does not know (a newer writer) reads as no answer: never as a pass.
UNKNOWN = Look(NO_ANSWER, "dark_orange", "error", "error")

# What makes a run fail: every status but agreement and a cell not runnable here.
BAD = tuple(s for s, look in LOOKS.items() if look.family in (DISAGREED, NO_ANSWER))
# The order a reader wants problems in: wrong answers first, then the runs that gave none, skipped last.
ATTENTION_ORDER = (*BAD, NOT_RUN)


def look(status: str | None) -> Look:
    """The presentation of `status`; an unknown one reads as no answer."""
    return LOOKS.get(status or "", UNKNOWN)


def family(status: str | None) -> str:
    return look(status).family


def is_bad(status: str | None) -> bool:
    """True when the status makes the run fail."""
    return family(status) in (DISAGREED, NO_ANSWER)
