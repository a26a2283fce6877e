"""The harness's command line: one module per `python -m harness` command, named as the command.

Each exposes `register(subparsers)`, whose parser sets `func(args) -> int`; none imports torch at import time.
A command parses, calls the libraries beside it (the diagnosis, the probes, the memory model, the stack),
prints and returns its exit status.
"""

# The commands in the order `python -m harness --help` lists them; each is the module of its name here.
COMMANDS = ("diagnose", "stack", "probe", "roofline", "memory", "cell", "measure", "bot")


def module_of(command: str) -> str:
    """The module that registers `command` ('harness.commands.diagnose')."""
    return f"{__name__}.{command}"
