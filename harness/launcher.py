"""refenv-diagnose: the harness as one file (`python3 refenv-diagnose.pyz [--json] [--from FILE]`).

`invoke zipapp` makes this module the archive's `__main__.py`. It prints a version line first, then runs
`python -m harness diagnose` (or the harness command named first). It is the one module kept readable by
Python 2.7 and 3.6 (no annotations, no f-strings, type comments for mypy), so that an interpreter too old
for the harness prints the version line and a one-line refusal instead of a SyntaxError from deep inside.
"""

import json
import pkgutil
import platform
import sys

OLDEST = (3, 8)
BUILD_INFO = "data/build.json"  # written into the archive by refenv.ship.pyz
NAME = "refenv-diagnose"


def build_info():
    # type: () -> dict[str, object]
    """The archive's version and commit; empty when run from a checkout (no build.json there)."""
    try:
        raw = pkgutil.get_data("harness", BUILD_INFO)
        info = json.loads(raw.decode("utf-8")) if raw else {}
    except (OSError, IOError, ValueError):  # noqa: UP024 (IOError is not OSError on Python 2.7)
        info = {}
    return info if isinstance(info, dict) else {}


def version_line():
    # type: () -> str
    """'refenv-diagnose 0.1.0 (a9d6a0c) on Python 3.9.18 (Linux x86_64)': first in every output."""
    info = build_info()
    version = str(info.get("version") or "unknown version")
    commit = str(info.get("commit") or "no commit")
    return (NAME + " " + version + " (" + commit + ") on Python " + platform.python_version()
            + " (" + platform.system() + " " + platform.machine() + ")")


def harness_argv(argv):
    # type: (list[str]) -> list[str]
    """The harness command line: `diagnose` unless a harness command is named first."""
    from harness.commands import COMMANDS

    if argv and argv[0] in COMMANDS:
        return list(argv)
    return ["diagnose"] + list(argv)  # noqa: RUF005 (unpacking in a list is a SyntaxError on Python 2.7)


def main(argv=None):
    # type: (list[str] | None) -> int
    words = list(sys.argv[1:] if argv is None else argv)
    sys.stdout.write(version_line() + "\n")
    sys.stdout.flush()
    if words in (["--version"], ["-V"]):
        return 0
    if sys.version_info < OLDEST:
        sys.stderr.write(NAME + ": needs Python 3.8 or newer; this is Python " + platform.python_version()
                         + " (" + sys.executable + "): run it with a newer python3\n")
        return 2
    from harness.__main__ import main as harness_main

    return harness_main(harness_argv(words))


if __name__ == "__main__":
    sys.exit(main())
