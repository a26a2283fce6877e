"""The `refenv` command's entry (and `./go invoke`'s): the program over refenv's task collection (refenv.program),
with a quick door for `refenv check`.

`refenv check` runs in editors and pre-commit hooks, where a second is the budget and Python's start is part of it.
invoke and the task collection take a fifth of that to import, so a `check` command line in its plain form
(`refenv check [PATH] [--drivers D] [--json] [--no-inspect]`, long or one-letter flags, each once) runs the check
directly. Any other form (core options, `--path`, joined short flags, `--help`, a flag given twice, a flag that
lacks its value) goes through the program, which explains it or refuses it with exit 2 exactly as before; the
door reads a command line as the program would or leaves it to the program (a unit test holds the two to the
same reading).
"""

from __future__ import annotations

import os
import sys

# The check task's flags as the program names them (invoke gives each its first free letter).
_SWITCHES = {"--json": "as_json", "-j": "as_json", "--no-inspect": "no_inspect", "-n": "no_inspect"}
_VALUED = {"--drivers": "drivers", "-d": "drivers"}


def quick_check(args: list[str]) -> dict[str, str | bool] | None:
    """The arguments of `refenv check` (path, drivers, as_json, no_inspect) when `args` (the command line after the
    program's name) is a check in its plain form; None for anything the program must read."""
    if args[:1] != ["check"]:
        return None
    found: dict[str, str | bool] = {}
    rest = args[1:]
    at = 0
    while at < len(rest):
        token = rest[at]
        flag, eq, value = token.partition("=")
        given: str | bool
        if token in _SWITCHES:
            key, given = _SWITCHES[token], True
        elif flag in _VALUED and eq:
            key, given = _VALUED[flag], value
        elif token in _VALUED and at + 1 < len(rest) and not rest[at + 1].startswith("-"):
            key, given = _VALUED[token], rest[at + 1]
            at += 1
        elif not token.startswith("-"):
            key, given = "path", token
        else:
            return None
        if key in found:
            return None
        found[key] = given
        at += 1
    return {"path": "", "drivers": "", "as_json": False, "no_inspect": False, **found}


def _check(arguments: dict[str, str | bool]) -> int:
    """The check through its shared body, its exceptions ending it as the program's guard ends every task."""
    from refenv.check import command
    from refenv.errors import exit_for

    try:
        code = command.run(str(arguments["path"]), str(arguments["drivers"]), as_json=bool(arguments["as_json"]),
                           no_inspect=bool(arguments["no_inspect"]))
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `refenv check | head`: a reader that stops early is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        message, code = exit_for(exc)
        print(message, file=sys.stderr)
        return code


def main(argv: list[str] | None = None, binary: str = "refenv") -> None:
    """`refenv`: the program over the package's own task collection, in any folder."""
    argv = sys.argv if argv is None else argv
    quick = quick_check(list(argv[1:]))
    if quick is not None:
        sys.exit(_check(quick))
    from refenv import program

    program.run(argv, binary)


if __name__ == "__main__":
    # `python -m refenv.cli [--as NAME] ...`: ./go runs it as `invoke`, so its usage lines say what was typed.
    from refenv import program

    args = sys.argv[1:]
    shown = "refenv"
    if args[:1] == ["--as"] and len(args) > 1:
        shown, args = args[1], args[2:]
    program.run_checkout([shown, *args], binary=shown)
