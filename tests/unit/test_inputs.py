"""harness.inputs: bounded reads, strict numbers, bounded JSON and anchored patterns."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import inputs
from harness.inputs import InputError


def test_read_bounded_refuses_a_device_whose_size_says_zero() -> None:
    with pytest.raises(InputError, match="longer than the 1024 bytes"):
        inputs.read_bounded("/dev/zero", "--config", cap=1024)


def test_read_stream_refuses_a_pipe_beyond_the_cap() -> None:
    assert inputs.read_stream(io.BytesIO(b"x" * 10), "stdin", cap=10) == b"x" * 10
    with pytest.raises(InputError, match="stdin: longer"):
        inputs.read_stream(io.BytesIO(b"x" * 11), "stdin", cap=10)


def test_read_bounded_names_missing_files_and_folders(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read .*: no such file"):
        inputs.read_bounded(tmp_path / "absent.json", "--probe")
    with pytest.raises(InputError, match="is a folder"):
        inputs.read_bounded(tmp_path, "--probe")


def test_decode_utf8_names_the_line_of_a_bad_byte() -> None:
    with pytest.raises(InputError, match=r"m.yaml: line 3: not UTF-8 text \(byte 0xff\)"):
        inputs.decode_utf8(b"a\nb\n\xff\n", "m.yaml")
    assert inputs.decode_utf8("\ufeffé".encode(), "x") == "é"


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "٢", "２", "1_000", "0x10", "", "1.5", " 7\n"])
def test_parse_int_refuses_what_is_not_ascii_decimal(text: str) -> None:
    with pytest.raises(InputError, match=r"^--gpus: "):
        inputs.parse_int(text, "--gpus")


def test_parse_int_refuses_too_many_digits_before_int_sees_them() -> None:
    with pytest.raises(InputError, match="more than 30 digits"):
        inputs.parse_int("7" * 5000, "GPU index")


def test_parse_int_ranges() -> None:
    assert inputs.parse_int("64", "n", lo=1, hi=64) == 64
    with pytest.raises(InputError, match="must be <= 64"):
        inputs.parse_int("65", "n", lo=1, hi=64)
    with pytest.raises(InputError, match="must be >= 1"):
        inputs.parse_int("0", "n", lo=1, hi=64)


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "Infinity", "1e400", "-1e999", "٣.٥", "７e9", "1e", "e9",
                                  "1.5.2", "0x1p3", "1" * 100])
def test_parse_float_refuses_non_finite_and_non_ascii(text: str) -> None:
    with pytest.raises(InputError, match=r"^--params: "):
        inputs.parse_float(text, "--params")


def test_parse_float_accepts_plain_decimals() -> None:
    assert inputs.parse_float("7e9", "p") == 7e9
    assert inputs.parse_float(".5", "p") == 0.5
    assert inputs.parse_float("-2.5E-3", "p") == -2.5e-3


def test_check_number_refuses_bools_nan_and_fractions() -> None:
    with pytest.raises(InputError):
        inputs.check_number(True, "x")
    with pytest.raises(InputError):
        inputs.check_number(math.nan, "x")
    with pytest.raises(InputError, match="expected an integer"):
        inputs.check_number(1.5, "x", integral=True)
    assert inputs.check_number(3.0, "x", integral=True) == 3.0


def test_loads_json_refuses_deep_nesting_without_a_traceback() -> None:
    for text in ("[" * 100_000, "[" * 65 + "]" * 65, '{"a":' * 70 + "1" + "}" * 70):
        with pytest.raises(InputError, match="nested deeper than 64"):
            inputs.loads_json(text, "config.json")
    assert inputs.loads_json("[" * 64 + "]" * 64, "x") is not None


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"hidden_size": -Infinity}', '{"hidden_size": 1e300000}',
                                  "7" * 5000])
def test_loads_json_refuses_what_json_cannot_say(text: str) -> None:
    with pytest.raises(InputError, match=r"^config\.json: "):
        inputs.loads_json(text, "config.json")


def test_dumps_json_never_prints_nan() -> None:
    with pytest.raises(ValueError):
        inputs.dumps_json({"x": math.inf})
    assert inputs.dumps_json({"x": 1.5}) == '{"x": 1.5}'


def test_require_uses_fullmatch_and_bounds_length() -> None:
    name = re.compile(r"[a-z]+")
    assert inputs.require(name, "torch", "name", "a-z") == "torch"
    with pytest.raises(InputError, match="not allowed"):
        inputs.require(name, "torch\n", "name", "a-z")
    with pytest.raises(InputError, match="longer than 200"):
        inputs.require(name, "a" * 201, "name", "a-z")
    assert not inputs.matches(name, "none\n")


def test_shorten_cuts_long_values() -> None:
    assert inputs.shorten("7" * 5000).endswith("(5002 characters)")
    assert len(inputs.shorten("7" * 5000)) < 90


@given(st.text(max_size=60))
def test_parse_float_is_a_finite_number_or_a_one_line_refusal(text: str) -> None:
    try:
        value = inputs.parse_float(text, "x")
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert math.isfinite(value)
        assert text.strip(" \t").isascii()


@given(st.text(max_size=60))
def test_parse_int_is_an_int_or_a_one_line_refusal(text: str) -> None:
    try:
        value = inputs.parse_int(text, "x", lo=0, hi=10**6)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert 0 <= value <= 10**6


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                            lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids,
                                                                                      max_size=4),
                            max_leaves=20)


@given(_json_values)
def test_loads_json_gives_valid_json_or_a_one_line_refusal(value: object) -> None:
    text = json.dumps(value)  # json.dumps writes NaN and Infinity, which loads_json must refuse
    try:
        parsed = inputs.loads_json(text, "doc")
    except InputError as exc:
        assert "\n" not in str(exc)
        assert any(w in text for w in ("NaN", "Infinity")) or "digits" in str(exc)
    else:
        inputs.dumps_json(parsed)


@given(st.binary(max_size=200))
def test_loads_json_of_random_bytes_never_raises_anything_else(data: bytes) -> None:
    try:
        inputs.loads_json(inputs.decode_utf8(data, "doc"), "doc")
    except InputError as exc:
        assert "\n" not in str(exc)


def test_finite_or_null_writes_what_is_not_finite_as_null() -> None:
    doc = {"a": [1.0, math.nan, {"b": math.inf}], "c": (-math.inf, "x"), "d": 3}
    assert inputs.dumps_json(inputs.finite_or_null(doc)) == '{"a": [1.0, null, {"b": null}], "c": [null, "x"], "d": 3}'


def test_the_diagnose_document_is_strict_json() -> None:
    from harness.document import dumps

    text = dumps({"probes": {"gbps_median": math.nan, "tflops": [math.inf]}})
    assert "NaN" not in text and "Infinity" not in text and json.loads(text)["probes"]["gbps_median"] is None
