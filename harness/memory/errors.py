"""The memory arithmetic's one error: bad input, with a message that names the field and what is expected."""

from __future__ import annotations


class MemoryInputError(ValueError):
    """Bad input to the memory arithmetic; the message names the field and what is expected."""
