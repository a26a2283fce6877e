"""`python -m harness memory`: text and the versioned JSON document, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.memory.params import count_params
from harness.memory.presets import preset
from harness.schema.memory_document import LedgerCheck, MemoryCase, MemoryVerification


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    rc = main(["memory", *argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_json_document_shape(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _json(capsys, "--model", "llama-2-7b", "--gpu", "H100-SXM", "--seq", "4096")
    assert (doc["schema"], doc["version"], doc["kind"]) == ("refenv.memory", 1, "train")
    ledgers = doc["ledgers"]
    assert isinstance(ledgers, dict)
    assert set(ledgers) == {"weights_bytes", "gradients_bytes", "optimizer_state_bytes", "master_weights_bytes",
                            "activations_bytes", "kv_cache_bytes", "total_bytes"}
    assert all(isinstance(v, int) for v in ledgers.values())
    params = count_params(preset("llama-2-7b")).total
    assert ledgers["weights_bytes"] == 2 * params and ledgers["master_weights_bytes"] == 4 * params
    budget = doc["budget"]
    assert isinstance(budget, dict) and budget["fits"] is False and rc == 1
    assert budget["required_bytes"] == doc["peak"]["peak_bytes"] > ledgers["total_bytes"]  # type: ignore[index]
    assert doc["peak"]["phase"] == "optimizer_step"  # type: ignore[index]
    assert budget["headroom_bytes"] == budget["usable_bytes"] - budget["required_bytes"]


def test_fit_plans_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _json(capsys, "--model", "llama-2-7b", "--gpu", "H100-SXM", "--seq", "4096", "--micro-batch", "8",
                    "--fit")
    plans = doc["plans"]
    assert isinstance(plans, list) and [p["rung"] for p in plans] == [1, 2, 3, 3]
    assert all(p["budget"]["required_bytes"] == p["peak"]["peak_bytes"] for p in plans)
    assert plans[-1]["fits"] is True and rc == 0
    assert all(isinstance(p["ledgers"]["total_bytes"], int) and p["cost"] for p in plans)


def test_params_only(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _json(capsys, "--params", "7e9")
    assert rc == 0 and doc["ledgers"]["total_bytes"] == 112_000_000_000  # type: ignore[index]
    assert doc["ledgers"]["activations_bytes"] is None  # type: ignore[index]


def test_inference_document(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _json(capsys, "--model", "llama-2-7b", "--mode", "infer", "--batch", "2", "--context", "4096",
                    "--budget", "24GiB")
    assert doc["kind"] == "infer"
    assert doc["ledgers"]["kv_cache_bytes"] == 2 * 4096 * 512 * 1024  # type: ignore[index]
    assert rc in (0, 1)


def test_config_file_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12}))
    assert main(["memory", "--config", str(cfg), "--regime", "bf16", "--optimizer", "sgd", "--budget", "80GB"]) == 0
    out = capsys.readouterr().out
    assert "0.124 B parameters" in out and "fits, with" in out and "optimizer state" in out


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--model", "llama-9"], "known models: deepseek-r1"),
    (["--params=-7e9"], "argument --params: must be >= 1, got '-7e9'"),
    (["--model", "gpt2", "--gpu", "Z80"], "known GPUs:"),
    (["--model", "gpt2", "--budget", "lots"], "--budget 'lots'"),
    (["--model", "gpt2", "--lora-rank", "8", "--lora-targets", "gate_proj"], "is not a Linear of gpt2"),
    (["--model", "gpt2", "--micro-batch", "0"], "must be >= 1"),
    (["--model", "gpt2", "--fit"], "--fit needs a --gpu or a --budget"),
    ([], "name a model"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and fragment in err and "\n" not in err


def test_bad_config_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"vocab_size": 10, "hidden_size": 64, "num_hidden_layers": 2,
                               "num_attention_heads": 8, "num_key_value_heads": 3, "intermediate_size": 8}))
    assert main(["memory", "--config", str(bad)]) == 2
    assert "num_key_value_heads (3) must divide" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["memory", "--config", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["memory", "--config", str(tmp_path / "absent.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_lists(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "--list", "models"]) == 0
    assert "llama-3-70b" in capsys.readouterr().out
    assert main(["memory", "--list", "gpus"]) == 0
    assert "H100-SXM" in capsys.readouterr().out


def test_output_names_the_implementation_it_models(capsys: pytest.CaptureFixture[str]) -> None:
    _, ds = _json(capsys, "--model", "llama-2-7b", "--sharding", "zero2", "--impl", "deepspeed", "--gpus", "8")
    _, paper = _json(capsys, "--model", "llama-2-7b", "--sharding", "zero2", "--gpus", "8")
    _, fsdp = _json(capsys, "--model", "llama-2-7b", "--sharding", "fsdp-full", "--gpus", "8")
    assert [d["setup"]["implementation"] for d in (ds, paper, fsdp)] == ["deepspeed", "paper", "torch"]  # type: ignore[index]
    assert ds["ledgers"]["gradients_bytes"] > paper["ledgers"]["gradients_bytes"]  # type: ignore[index]
    assert main(["memory", "--model", "llama-2-7b", "--sharding", "zero3", "--impl", "deepspeed", "--gpus", "8"]) == 0
    assert "as DeepSpeed implements it" in capsys.readouterr().out


def test_verify_json_writes_an_infinite_ratio_as_null(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # A ledger predicted 0 B and measured above it has ratio inf (verify.py); --json printed no document and
    # exited 3 (internal error) instead of reporting the failed verification.
    from harness.memory import verify

    ledger = LedgerCheck(0, 8, "FAIL", "within 5%", ratio=float("inf"))
    failed = MemoryVerification(device="cpu", status="FAIL", cases=(MemoryCase("c", "FAIL", {"activations": ledger}),))
    monkeypatch.setattr(verify, "run_verification", lambda quick, device: failed)
    rc, doc = _json(capsys, "--verify", "--device", "cpu")
    assert rc == 1 and doc["cases"] == [{"name": "c", "status": "FAIL", "ledgers": {"activations": {
        "predicted_bytes": 0, "measured_bytes": 8, "ratio": None, "status": "FAIL", "tolerance": "within 5%"}}}]


def test_a_reader_that_leaves_early_is_no_internal_error() -> None:
    """`python -m harness memory --list models | head -1`: the pipe closed under the writer ends it quietly,
    with a shell's status for SIGPIPE, not 'internal error ... please report this'."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run([sys.executable, "-m", "harness", "memory", "--list", "models"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")
