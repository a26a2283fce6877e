"""JSON to frozen dataclasses and back, driven by the classes' own annotations: the one codec of every document.

One generic reader means a new field on a record is declared once, in its class: the reader and the writer
follow. A key missing from the JSON takes the field's default (a partial or older document of the same
version), an unknown key is ignored (a newer writer), and a value of the wrong type is an error naming where
it sits (`cells[3].expected.verdict`). A class with its own `from_dict` / `to_dict` (a `Remedy`, whose
parameters are the keys beside its kind) is read and written through them; a TypedDict (the facts) is read
key by key. A field declared with `optional_key()` is left out of the JSON while it is None, so a record
writes the keys its document always had and no others.

The harness writes and reads its documents with it, and refenv reads them and its run document with it
(refenv/model/codec.py), so the two sides cannot drift. Standard library only, and Python 3.8-safe: the
records it reads in the harness annotate with typing.Optional / Tuple / Dict, which 3.8 can evaluate.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union, cast

T = TypeVar("T")
R = TypeVar("R", bound="Record")
_MISSING = dataclasses.MISSING
_READER = "from_dict"  # a class that reads itself is read through it
_WRITER = "to_dict"    # ... and written through its own writer, so the two stay each other's inverse
_OMIT = "refenv.omit_none"
# `X | Y` is types.UnionType from Python 3.10; before that every union is typing.Union.
_UNIONS = (Union, getattr(types, "UnionType", Union))


class DecodeError(ValueError):
    """The JSON does not fit the class: the message names the place and what was expected there."""


def optional_key(default: Any = None) -> Any:
    """A field whose key the JSON leaves out while its value is None (a section only some documents have)."""
    return dataclasses.field(default=default, metadata={_OMIT: True})


def _fail(where: str, expected: str, got: object) -> DecodeError:
    shown = repr(got)
    return DecodeError(f"{where or 'the document'}: expected {expected}, got {shown[:80]}")


def _is_typeddict(hint: object) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def _scalar(hint: object, value: object, where: str) -> object:
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
    if not isinstance(value, str):
        raise _fail(where, "a string", value)
    return value


def _decode(hint: Any, value: object, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return value
    if origin in _UNIONS:
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in (o for o in options if o is not type(None)):
            try:
                return _decode(option, value, where)
            except DecodeError as exc:
                errors.append(str(exc))
        # The option that read furthest into the value says best what is wrong with it.
        raise DecodeError(max(errors, key=lambda e: len(e.split(": ")[0]))) if errors else _fail(where, str(hint),
                                                                                                value)
    if hint is type(None):
        if value is not None:
            raise _fail(where, "null", value)
        return None
    if hint in (bool, int, float, str):
        return _scalar(hint, value, where)
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise _fail(where, "a list", value)
        args = typing.get_args(hint)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):  # a pair, a triple: fixed length
            if len(value) != len(args):
                raise _fail(where, f"a list of {len(args)}", value)
            return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))  # noqa: B905
        items = [_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise _fail(where, "an object", value)
        item = typing.get_args(hint)[1]
        return {str(k): _decode(item, v, f"{where}.{k}") for k, v in value.items()}
    if _is_typeddict(hint):
        return _typeddict(hint, value, where)
    if isinstance(hint, type):
        return decode(hint, value, where)
    raise DecodeError(f"{where}: cannot read a value of type {hint!r}")  # a model the codec does not know


def _typeddict(cls: type, value: object, where: str) -> dict[str, object]:
    """A TypedDict: the keys it declares, each read by its annotation; others are left out (a newer writer)."""
    if not isinstance(value, dict):
        raise _fail(where, f"an object ({cls.__name__})", value)
    hints = typing.get_type_hints(cls)
    return {k: _decode(hints[k], v, f"{where}.{k}" if where else k) for k, v in value.items() if k in hints}


def decode(cls: type[T], data: object, where: str = "") -> T:
    """`data` (parsed JSON) as an instance of the dataclass `cls`; DecodeError says what does not fit."""
    if not isinstance(data, dict):
        raise _fail(where, f"an object ({cls.__name__})", data)
    if _READER in vars(cls):
        try:
            return cast(T, getattr(cls, _READER)(data))
        except (KeyError, ValueError, TypeError) as exc:
            raise DecodeError(f"{where or cls.__name__}: {exc}") from exc
    return decode_fields(cls, data, where)


def decode_fields(cls: type[T], data: Mapping[str, object], where: str = "") -> T:
    """The dataclass `cls` read field by field from `data` (what a class's own `from_dict` builds on)."""
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
    try:
        return cast(T, cls(**kwargs))
    except (ValueError, TypeError) as exc:  # the record's own checks (a verdict it does not know)
        raise DecodeError(f"{where or cls.__name__}: {exc}") from exc


def decode_value(hint: Any, data: object, where: str = "") -> Any:
    """`data` read as the type `hint` (a union of records, a tuple of them, a mapping): what a field of that
    type would hold."""
    return _decode(hint, data, where)


def decode_optional(cls: type[T], data: object, where: str = "") -> T | None:
    """As `decode`, with null read as None (an optional section of a document)."""
    return None if data is None else decode(cls, data, where)


def encode(value: object) -> Any:
    """A dataclass (or tuple, dict, scalar) as plain JSON data; tuples become lists."""
    if _WRITER in vars(type(value)):
        return getattr(value, _WRITER)()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.metadata.get(_OMIT) and getattr(value, f.name) is None)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


class Record:
    """A record that callers write and read by itself: `record.to_dict()` and `Cls.from_dict(data)`, both
    this codec's (the codec itself reads only a class's own from_dict/to_dict, never these inherited ones)."""

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = encode(self)
        return data

    @classmethod
    def from_dict(cls: type[R], data: object) -> R:
        return decode(cls, data)

