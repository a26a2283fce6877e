"""`invoke reproduce`: a user's broken stack from a pasted report, rebuilt and run on a simulated host."""

from __future__ import annotations

from refenv.reproduce.flags import from_flags
from refenv.reproduce.infer import infer
from refenv.reproduce.values import FixPlan, Inferred, Reported, ReproduceError, Reproduction

__all__ = ["FixPlan", "Inferred", "Reported", "ReproduceError", "Reproduction", "from_flags", "infer"]
