"""JSON to frozen dataclasses and back, driven by the classes' own annotations.

One generic reader means a new field on a record is declared once, in its class: the reader and the
writer follow. A key missing from the JSON takes the field's default (a partial or older document of
the same version), an unknown key is ignored (a newer writer), and a value of the wrong type is an
error naming where it sits (`cells[3].expected.verdict`). A class with its own `from_dict` (the
harness's `Finding`) is read through it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union, cast

from refenv.errors import RefenvError

T = TypeVar("T")
_MISSING = dataclasses.MISSING
_READER = "from_dict"  # a class that reads itself (harness/schema.py) is read through it
_WRITER = "to_dict"    # ... and written through its own writer, so the two stay each other's inverse


class DecodeError(RefenvError):
    """The JSON does not fit the class: the message names the place and what was expected there."""


def _fail(where: str, expected: str, got: object) -> DecodeError:
    shown = repr(got)
    return DecodeError(f"{where or 'the document'}: expected {expected}, got {shown[:80]}")


def _decode(hint: Any, value: object, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in (o for o in options if o is not type(None)):
            try:
                return _decode(option, value, where)
            except DecodeError as exc:
                errors.append(str(exc))
        raise DecodeError(errors[0]) if errors else _fail(where, str(hint), value)
    if hint is type(None):
        if value is not None:
            raise _fail(where, "null", value)
        return None
    if hint is bool:
        if not isinstance(value, bool):
            raise _fail(where, "true or false", value)
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _fail(where, "an integer", value)
        return value
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _fail(where, "a number", value)
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _fail(where, "a string", value)
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise _fail(where, "a list", value)
        item = typing.get_args(hint)[0]
        return tuple(_decode(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise _fail(where, "an object", value)
        item = typing.get_args(hint)[1]
        return {str(k): _decode(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type):
        return decode(hint, value, where)
    raise DecodeError(f"{where}: cannot read a value of type {hint!r}")  # a model the codec does not know


def decode(cls: type[T], data: object, where: str = "") -> T:
    """`data` (parsed JSON) as an instance of the dataclass `cls`; DecodeError says what does not fit."""
    if not isinstance(data, dict):
        raise _fail(where, f"an object ({cls.__name__})", data)
    if _READER in vars(cls):
        try:
            return cast(T, getattr(cls, _READER)(data))
        except (KeyError, ValueError, TypeError) as exc:
            raise DecodeError(f"{where or cls.__name__}: {exc}") from exc
    if not dataclasses.is_dataclass(cls):
        raise DecodeError(f"{where}: {cls.__name__} is not a record type")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        place = f"{where}.{f.name}" if where else f.name
        if f.name not in data:
            if f.default is _MISSING and f.default_factory is _MISSING:
                raise DecodeError(f"{place}: missing")
            continue
        kwargs[f.name] = _decode(hints[f.name], data[f.name], place)
    return cls(**kwargs)


def encode(value: object) -> Any:
    """A dataclass (or tuple, dict, scalar) as plain JSON data; tuples become lists."""
    if _WRITER in vars(type(value)):
        return getattr(value, _WRITER)()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value
