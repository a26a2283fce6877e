"""`python -m harness roofline` under hostile input: exit 2 with one line, or an answer (exit 0) whose
--json is strict JSON. Each case of issue 14 on this surface is here; the properties generate the rest."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.__main__ import main
from harness.probe import bands, results
from harness.schema import encode
from harness.schema.probe_document import DeviceInfo


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in --json output")
    return json.loads(text, parse_constant=refuse)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["roofline", *argv])
    assert rc in (0, 2), (argv, rc, err.getvalue())
    if rc == 2:
        assert err.getvalue().count("\n") == 1 and len(err.getvalue()) < 600, err.getvalue()
    elif "--json" in argv:
        strict_json(out.getvalue())
    return rc, out.getvalue(), err.getvalue()


def probe_doc() -> dict[str, Any]:
    """A probe document as `probe --out` writes it."""
    doc = dataclasses.replace(results.new_document("full", "cuda"), device_info=DeviceInfo(name="NVIDIA H200"),
                              measurements=tuple(
        results.measured(mid, unit=unit, work=value * (1e9 if unit == "gbps" else 1e12), seconds=[1.0, 1.0],
                          convention="", reference=None, params={}, judgement=bands.judge(value, None, None))
        for mid, unit, value in (("memory.copy", "gbps", 4300.0), ("gemm.bf16", "tflops", 788.0))))
    written: dict[str, Any] = encode(doc)
    return written


BASE = {"matmul": ["matmul", "4096", "4096", "4096"],
        "elementwise": ["elementwise", "--numel", "1e9", "--bytes-per-element", "8"],
        "decode": ["decode", "--params", "7e9", "--batch", "1"]}


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "٣", "-1", "1e30"])
@pytest.mark.parametrize(("operation", "option"), [
    ("decode", "--params"), ("decode", "--batch"), ("decode", "--kv-bytes"), ("decode", "--measured-ms"),
    ("elementwise", "--numel"), ("elementwise", "--bytes-per-element"), ("elementwise", "--flops-per-element"),
    ("matmul", "--measured-ms"),
])
def test_every_number_option_refuses_what_is_not_finite(operation: str, option: str, value: str) -> None:
    rc, _, err = run(*BASE[operation], f"{option}={value}", "--gpu", "H100-SXM", "--json")
    assert rc == 2 and option in err


@pytest.mark.parametrize("operation", list(BASE))
def test_a_measured_time_too_small_to_give_a_finite_rate_is_refused(operation: str) -> None:
    # 1e-300 ms passed the positive check and made the bandwidth inf: --json was an internal error (exit 3).
    rc, _, err = run(*BASE[operation], "--measured-ms", "1e-300", "--gpu", "H100-SXM", "--json")
    assert rc == 2 and "--measured-ms" in err


@pytest.mark.parametrize("dims", [("0", "1", "1"), ("nan", "1", "1"), ("9" * 5000, "1", "1"), ("１", "1", "1")])
def test_matmul_dimensions(dims: tuple[str, str, str]) -> None:
    assert run("matmul", *dims, "--gpu", "H100-SXM")[0] == 2


def test_decode_params_inf_no_longer_prints_intensity_nan() -> None:
    rc, out, _ = run("decode", "--params", "inf", "--batch", "1", "--gpu", "H100-SXM")
    assert rc == 2 and "nan" not in out


def test_probe_from_a_device_is_refused_without_reading_it_whole() -> None:
    rc, _, err = run(*BASE["matmul"], "--probe", "/dev/zero")  # endless: an answer at all says the read was bounded
    assert rc == 2 and "longer than" in err


@pytest.mark.parametrize(("change", "phrase"), [
    (lambda d: d.update(measurements=[5]), "measurements[0]"),
    (lambda d: d["measurements"][0].update(gbps_median=-4300.0), "positive"),
    (lambda d: d["measurements"][0].update(gbps_median=True), "positive"),
    (lambda d: d["measurements"][0].update(id=7), ".id"),
    (lambda d: d.update(device_info=[]), "device_info"),
    (lambda d: d.update(device_info={"name": 5}), "device_info"),
    (lambda d: d.update(measurements={"a": 1}), "measurements"),
])
def test_probe_documents_of_the_wrong_shape(tmp_path: Path, change: Any, phrase: str) -> None:
    doc = probe_doc()
    change(doc)
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(doc))
    rc, _, err = run(*BASE["matmul"], "--probe", str(path))
    assert rc == 2 and phrase in err


@pytest.mark.parametrize(("text", "phrase"), [
    (b"[" * 20_000, "nested"), (b'{"schema": "caf\xe9"}', "not UTF-8"), (b'{"a": NaN}', "NaN"), (b"", "line 1"),
])
def test_probe_files_that_are_not_json(tmp_path: Path, text: bytes, phrase: str) -> None:
    path = tmp_path / "probe.json"
    path.write_bytes(text)
    rc, _, err = run(*BASE["matmul"], "--probe", str(path))
    assert rc == 2 and phrase in err


def test_a_good_probe_answers(tmp_path: Path) -> None:
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(probe_doc()))
    rc, out, _ = run(*BASE["matmul"], "--probe", str(path), "--json")
    assert rc == 0 and strict_json(out)["bound"] == "compute"


def test_a_time_beyond_the_floats_is_null_in_json(tmp_path: Path) -> None:
    # Measured roofs near zero (positive, finite) over the largest operation allowed: the least time is inf.
    doc = probe_doc()
    for record in doc["measurements"]:
        for key in ("gbps_median", "tflops_median"):
            if record.get(key):
                record[key] = 1e-300
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(doc))
    rc, out, _ = run("decode", "--params", "1e15", "--batch", "1", "--kv-bytes", "1e18", "--probe", str(path), "--json")
    assert rc == 0 and strict_json(out)["attainable_ms"] is None


_values = st.one_of(st.integers(-3, 10**20).map(str), st.floats().map(str), st.text(max_size=10),
                    st.sampled_from(["nan", "inf", "1e400", "٣", "0", "1e-300", "1e308"]))


@given(st.sampled_from(list(BASE)), st.lists(st.tuples(
    st.sampled_from(["--params", "--batch", "--kv-bytes", "--numel", "--bytes-per-element", "--flops-per-element",
                     "--measured-ms", "--dtype", "--model", "--context", "--kv-dtype", "--weights", "--config"]),
    _values | st.sampled_from(["llama-3-8b", "gpt2", "nf4", "fp8", ""])), max_size=3), st.booleans())
def test_any_options_give_an_answer_or_one_line(operation: str, options: list[tuple[str, str]], as_json: bool) -> None:
    argv = [*BASE[operation], *(f"{o}={v}" for o, v in options), "--gpu", "H100-SXM"]
    run(*argv, *(["--json"] if as_json else []))


@given(st.lists(_values, min_size=3, max_size=3))
def test_any_matmul_dimensions(dims: list[str]) -> None:
    run("matmul", *dims, "--gpu", "H100-SXM", "--json")


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                     max_leaves=12)


@given(st.dictionaries(st.sampled_from(["id", "gbps_median", "tflops_median", "unit"]), _json, max_size=4),
       st.sampled_from(["measurements", "device_info", "device", "schema", "version"]), _json)
def test_any_probe_document_gives_an_answer_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                        record: dict[str, Any], key: str, value: Any) -> None:
    doc = probe_doc()
    doc["measurements"].append(record)
    doc[key] = value
    path = tmp_path_factory.mktemp("probe") / "probe.json"
    path.write_text(json.dumps(doc))
    run(*BASE["decode"], "--probe", str(path), "--json")


def test_decode_takes_memorys_model_flags_and_its_kv_cache() -> None:
    # "Is decoding llama-3-8b at batch 8 and 4k context memory-bound on an H100?" in one command.
    rc, out, _ = run("decode", "--model", "llama-3-8b", "--batch", "8", "--context", "4096", "--gpu", "H100-SXM",
                     "--json")
    assert rc == 0
    doc = json.loads(out)
    from harness.memory.estimate import InferSetup, estimate_inference
    from harness.memory.presets import preset

    est = estimate_inference(preset("llama-3-8b"), InferSetup(batch=8, context=4096))
    assert doc["bytes"] == est.ledgers.weights + est.ledgers.kv_cache  # the same figures as `memory`
    assert doc["bound"] == "memory" and "llama-3-8b" in doc["operation"]


@pytest.mark.parametrize("argv", [("--model", "llama-3-8b", "--kv-bytes", "1e9"), ("--model", ""),
                                  ("--model", "no-such-model"), ("--config", "/dev/zero"), ("--context", "٤٠٩٦"),
                                  ("--params", "7e9", "--model", "gpt2")])
def test_decode_model_flags_are_refused_in_one_line(argv: tuple[str, ...]) -> None:
    full = argv if any(a in ("--params", "--model", "--config") for a in argv) else ("--model", "gpt2", *argv)
    rc, _, err = run("decode", *full, "--gpu", "H100-SXM")
    assert rc == 2 and err.count("\n") == 1, err
