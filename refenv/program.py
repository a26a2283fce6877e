"""The `refenv` program (and `./go invoke`): invoke's own program over refenv's task collection, whose usage errors
exit 2. refenv.cli is its entry, with a quick door for `refenv check` that never imports invoke.

`refenv` runs the collection the package carries (refenv/tasks/), in whatever folder it is typed; `./go invoke`
in refenv's checkout loads the checkout's tasks.py, which is that collection plus the checkout's `test`.

Exit codes mean the same everywhere (tasks.py): 1 is a result that is not good (cells that disagree, a run
that did not go as planned), 2 is bad input. invoke's own program exits 1 on every parser error, so a CI
would read `invoke matrix --engine` (no value) as a failed matrix. This program is invoke's `Program`
(pyinvoke docs, "Reusing Invoke's CLI module as a distinct binary") with two changes: a parser error (an
unknown flag or task, a flag without its value, a value for a flag that takes none, a missing positional
argument) exits 2 with the task's usage line, and a flag given twice in one task is such an error too
(invoke keeps the last of a switch silently, and reads a second value as a task); flags that take a list
(`--env a --env b`) may repeat.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from invoke import __version__ as invoke_version
from invoke.collection import Collection
from invoke.exceptions import Exit, ParseError
from invoke.parser.argument import Argument
from invoke.parser.context import ParserContext
from invoke.parser.parser import Parser, ParseResult
from invoke.program import Program as InvokeProgram
from invoke.tasks import Task

USAGE_ERROR = 2
# Tasks whose one positional argument may be left out (`refenv check` checks ./matrix.yaml, else ./Dockerfile):
# invoke takes a positional argument only while its value is None, so one with a default is never given by position,
# and one without is required; left out, it is given as '' and the task chooses.
OPTIONAL_POSITIONAL = frozenset({"check"})
# invoke's parser names a flag by its repr ('Flag <Argument: engine (n)> needed value ...').
_ARGUMENT = re.compile(r"<\w*Argument: ([\w-]+)[^>]*>")


def flag_name(name: str) -> str:
    """'--dry-run' for the argument dry_run, '-e' for a one-letter name (invoke's own spelling of them)."""
    dashed = name.replace("_", "-")
    return f"-{dashed}" if len(dashed) == 1 else f"--{dashed}"


def _message(exc: ParseError) -> str:
    """invoke's parser message, its flags named as they are typed ('--engine', not '<Argument: engine (n)>')."""
    text = _ARGUMENT.sub(lambda m: flag_name(m.group(1)), str(exc))
    text = text.removeprefix("Flag ")
    return text.replace("needed value and was not given one!", "needs a value").rstrip("!")


def _lookup(flags: Any, flag: str) -> Argument | None:
    """The argument a flag names, its aliases ('-n' for '--engine') included (invoke's Lexicon resolves them on
    indexing, not on get)."""
    if flag not in flags:
        return None
    found = flags[flag]
    return found if isinstance(found, Argument) else None


def _walk(tokens: list[str],
          contexts: dict[str, ParserContext]) -> Iterator[tuple[ParserContext, str, Argument | None]]:
    """Each token of a task's part of the command line with its task and the flag it names (None for a value or
    a name that is no flag), as invoke reads them: a task's positional arguments are filled before a word names
    the next task, a flag's value (`--engine docker`) is no token of its own, and everything after `--` is the
    task's own. Joined short flags (-jn) name their first letter's flag."""
    current: ParserContext | None = None
    unfilled = 0
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token == "--":
            return
        if not token.startswith("-") or token == "-":
            if unfilled:
                unfilled -= 1
            elif token in contexts:
                current = contexts[token]
                unfilled = len(current.positional_args)
                continue
            if current is not None:
                yield current, token, None
            continue
        if current is None:
            continue
        flag = token.split("=", 1)[0] if token.startswith("--") else token[:2]
        argument = _lookup(current.flags, flag) or _lookup(current.inverse_flags, flag)
        yield current, token, argument
        skip = argument is not None and argument.takes_value and not argument.optional and token == flag \
            and flag in current.flags


def repeated(tokens: list[str], contexts: dict[str, ParserContext]) -> tuple[str, str] | None:
    """(task, flag) for the first flag given twice in one task's part of the command line, where the flag takes
    one value or none (invoke would keep the last, or read the second's value as a task); None when none is.
    A list flag (--env a --env b) repeats freely."""
    seen: set[tuple[int, int]] = set()
    for context, token, argument in _walk(tokens, contexts):
        if argument is None or argument.kind is list or argument.incrementable:
            continue
        if (id(context), id(argument)) in seen:
            return str(context.name), token.split("=", 1)[0]
        seen.add((id(context), id(argument)))
    return None


def unknown_flag(tokens: list[str], contexts: dict[str, ParserContext]) -> tuple[str, str] | None:
    """(task, token) for the first token that looks like a flag of a task taking positional arguments but is none
    of its flags: invoke would fill the positional argument with it (`refenv check --bogus` read --bogus as the
    file to check)."""
    for context, token, argument in _walk(tokens, contexts):
        if argument is None and token.startswith("-") and token != "-" and context.positional_args:
            return str(context.name), token
    return None


def help_asked(tokens: list[str], contexts: dict[str, ParserContext]) -> str | None:
    """The task whose part of the command line asks for help (`refenv check --help`, `refenv compare -h`), or None.

    invoke reads `-h`/`--help` after a task as the task's help only while the task still has no positional
    argument to fill; a task with one (check's FILE, compare's OLD NEW) took `--help` as that value. A task
    defining its own `-h`/`--help` keeps it; everything after `--` is the task's own."""
    current: ParserContext | None = None
    for token in tokens:
        if token == "--":
            return None
        if token in contexts:
            current = contexts[token]
        elif current is not None and token in ("-h", "--help") and token not in current.flags:
            return str(current.name)
    return None


def _tasks(collection: Collection) -> Iterator[Task[Any]]:
    yield from collection.tasks.values()
    for sub in collection.collections.values():
        yield from _tasks(sub)


@contextlib.contextmanager
def help_kept(collection: Collection) -> Iterator[None]:
    """Every task's flag help as it was, whatever reads the tasks' arguments inside: invoke's Task.arg_opts pops
    each argument's help out of the task's own `help` dict as it makes the argument (invoke 3.0.3,
    invoke/tasks.py), so a second parser, or the command reference made after one, would show no flag's help."""
    kept = [(task, dict(task.help)) for task in _tasks(collection)]
    try:
        yield
    finally:
        for task, help in kept:
            task.help = help


def task_contexts(collection: Collection, ignore_unknown_help: bool | None) -> list[ParserContext]:
    """The collection's parser contexts, every task's help kept for the next reader."""
    with help_kept(collection):
        return list(collection.to_contexts(ignore_unknown_help=ignore_unknown_help))


class Program(InvokeProgram):
    """invoke's program, its parser errors exiting 2 with the usage line of the task they are in, its version read
    only when asked (the distribution's metadata takes a tenth of a second to import and read)."""

    def print_version(self) -> None:
        print(f"{self.name} {version()}")

    def _make_parser(self) -> Parser:
        return Parser(initial=self.initial_context,
                      contexts=task_contexts(self.collection, self.config.tasks.ignore_unknown_help))

    def _usage(self, name: str | None, message: str) -> Exit:
        where = f"{self.binary} {name}" if name else self.binary
        usage = (f"Usage: {self.binary} [--core-opts] {name} [--options] (`{self.binary} --help {name}` lists them)"
                 if name else f"Usage: {self.binary} [--core-opts] TASK [--options] (`{self.binary} --list` lists "
                 "the tasks)")
        return Exit(f"{where}: {message}\n{usage}", code=USAGE_ERROR)

    def parse_core(self, argv: list[str] | None) -> None:
        try:
            super().parse_core(argv)
        except ParseError as exc:
            raise self._usage(getattr(exc.context, "name", None), _message(exc)) from None

    def parse_tasks(self) -> None:
        contexts: dict[str, ParserContext] = {}
        for context in task_contexts(self.collection, self.config.tasks.ignore_unknown_help):
            contexts.update({name: context for name in (context.name, *context.aliases) if name})
        asked = help_asked(list(self.core.unparsed), contexts)
        if asked is not None:  # parse_cleanup prints the task's help, as for `refenv --help TASK`
            self.parser = self._make_parser()
            self.args.help.value = asked
            self.tasks = ParseResult()
            return
        twice = repeated(list(self.core.unparsed), contexts)
        if twice is not None:
            raise self._usage(twice[0], f"{twice[1]} is given twice; give it once")
        unknown = unknown_flag(list(self.core.unparsed), contexts)
        if unknown is not None:
            raise self._usage(unknown[0], f"No idea what {unknown[1]!r} is")
        try:
            super().parse_tasks()
        except ParseError as exc:
            name = getattr(exc.context, "name", None)
            if name in OPTIONAL_POSITIONAL and "did not receive required positional arguments" in str(exc):
                tokens = list(self.core.unparsed)
                at = tokens.index(name) + 1 if name in tokens else len(tokens)
                self.core.unparsed = [*tokens[:at], "", *tokens[at:]]
                self.parse_tasks()
                return
            raise self._usage(name, _message(exc)) from None


def version() -> str:
    """refenv's version as installed (its distribution's metadata), with invoke's."""
    from importlib import metadata

    try:
        mine = metadata.version("refenv")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        mine = "(not installed)"
    return f"{mine} (invoke {invoke_version})"


def run(argv: list[str] | None, binary: str) -> None:
    """`refenv`: the program over the package's own task collection, in any folder."""
    from refenv.tasks import ns

    quiet_on_closed_pipe(Program(name="refenv", binary=binary, namespace=ns).run, argv)


def run_checkout(argv: list[str], binary: str) -> None:
    """`./go invoke`: the program over the tasks.py of the working folder (or a parent), as invoke finds it."""
    quiet_on_closed_pipe(Program(name="refenv", binary=binary).run, argv)


def quiet_on_closed_pipe(run: Any, argv: list[str] | None) -> None:
    """`refenv --help | head`: a reader that stops early is no error (Python's own advice for SIGPIPE, in the
    signal module's documentation: point stdout at devnull and exit)."""
    try:
        run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
