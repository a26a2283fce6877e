"""The harness's command line: one module per `python -m harness` command, named as the command.

Each exposes `register(subparsers)`, whose parser sets `func(args) -> int`; none imports torch at import time.
A command parses, calls the libraries beside it (the diagnosis, the probes, the memory model, the stack),
prints and returns its exit status.
"""
