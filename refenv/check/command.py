"""`refenv check`'s whole run, shared by its task and the program's quick door (refenv.cli): check, print, and the
exit status. It imports no invoke, no engine library, no templates: the quick door runs it in editors and
pre-commit hooks in well under a second."""

from __future__ import annotations

import json

GOOD, NOT_GOOD = 0, 1


def run(path: str, drivers: str = "", as_json: bool = False, no_inspect: bool = False) -> int:
    """Check `path` (a Dockerfile or a matrix.yaml; '' for ./matrix.yaml, else ./Dockerfile), print the text or the
    refenv.check JSON document, and return 1 on an error finding or where torch would get a GPU on no host."""
    from refenv.check import checker, report

    checked = checker.check(path, drivers, use_engine=not no_inspect)
    print(json.dumps(report.document(checked), indent=2) if as_json else report.text(checked))
    return GOOD if all(x.good for x in checked) else NOT_GOOD
