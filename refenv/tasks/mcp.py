"""`refenv mcp`: refenv's answers to an assistant, as a Model Context Protocol server on standard input and output."""

from __future__ import annotations

from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from refenv.tasks.guard import USAGE, guarded


@task
@guarded
def mcp(c: Context) -> None:
    """Serve refenv to an MCP client (an assistant) on stdin/stdout: diagnose_machine, diagnose_report, stack,
    memory_fit, compat, matrix_readiness. Needs the `mcp` extra: pip install 'refenv[mcp]'."""
    try:
        from refenv.assistant.server import main
    except ImportError as exc:
        raise Exit(f"refenv mcp: the MCP SDK is not installed ({exc}); pip install 'refenv[mcp]'", code=USAGE) from None
    main()
