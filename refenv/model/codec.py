"""refenv's door to the one codec (harness/schema/jsondata.py): JSON to frozen dataclasses and back.

The harness writes its documents with that codec and refenv reads them with it, as it reads and writes its
own run document: a new field on a record is declared once, in its class. A key missing from the JSON takes
the field's default, an unknown key is ignored, and a value of the wrong type is a DecodeError naming where
it sits (`cells[3].expected.verdict`) — here a RefenvError, so a command reports it as bad input.
"""

from __future__ import annotations

from typing import Any, TypeVar

from harness.schema import jsondata
from refenv.errors import RefenvError

T = TypeVar("T")
encode = jsondata.encode


class DecodeError(RefenvError):
    """The JSON does not fit the class: the message names the place and what was expected there."""


def decode(cls: type[T], data: object, where: str = "") -> T:
    """`data` (parsed JSON) as an instance of the dataclass `cls`; DecodeError says what does not fit."""
    try:
        return jsondata.decode(cls, data, where)
    except jsondata.DecodeError as exc:
        raise DecodeError(str(exc)) from exc


def decode_value(hint: Any, data: object, where: str = "") -> Any:
    """`data` read as the type `hint` (a union of records, say); DecodeError says what does not fit."""
    try:
        return jsondata.decode_value(hint, data, where)
    except jsondata.DecodeError as exc:
        raise DecodeError(str(exc)) from exc
