"""`python -m harness memory` under hostile input: exit 2 with one line, or a result (0 fits, 1 does not);
never a traceback, never 1 from a crash, never NaN in --json. Each case of issue 14 on this surface is here."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.__main__ import main
from harness.commands import memory as memory_cli

CONFIG = {"vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
          "intermediate_size": 11008}


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in --json output")
    return json.loads(text, parse_constant=refuse)


def outcome(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["memory", *argv])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2), (rc, err)
    if rc == 2:
        assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < 600, err
    elif "--json" in argv:
        strict_json(out)
    return rc, out, err


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "٧e9", "７e9", "0", "-7e9", "1e16", "7" * 5000])
def test_params_must_be_a_finite_count(capsys: pytest.CaptureFixture[str], value: str) -> None:
    rc, _, err = outcome(capsys, "--params", value)
    assert rc == 2 and "--params" in err and len(err) < 200


@pytest.mark.parametrize("value", ["1e400GB", "nanGB", "infGiB", "٢٤GiB", "２４GiB", "1e30GB", "24GiB\n"])
def test_budget_must_be_finite_ascii(capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert outcome(capsys, "--params", "7e9", "--budget", value)[0] == 2


@pytest.mark.parametrize("option", ["--gpus", "--micro-batch", "--seq", "--grad-accum", "--batch", "--context",
                                    "--lora-rank", "--adam8bit-block"])
@pytest.mark.parametrize("value", ["nan", "1e12", "٣", "-1", "9" * 5000])
def test_every_count_is_bounded_ascii(capsys: pytest.CaptureFixture[str], option: str, value: str) -> None:
    assert outcome(capsys, "--model", "gpt2", option, value)[0] == 2


def test_config_from_a_device_is_refused_without_reading_it_whole(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = outcome(capsys, "--config", "/dev/zero")  # endless: an answer at all says the read was bounded
    assert rc == 2 and "longer than" in err


def config_rc(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes, *extra: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    rc, _, err = outcome(capsys, "--config", str(path), *extra)
    return rc, err


@pytest.mark.parametrize(("text", "phrase"), [
    ("[" * 20_000 + "]" * 20_000, "nested deeper"),
    (json.dumps({**CONFIG, "extra": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}),
     "nested deeper"),
    (json.dumps({**CONFIG, "hidden_size": 1e300}), "hidden_size"),
    (json.dumps({**CONFIG, "num_hidden_layers": 1e12}), "num_hidden_layers"),
    (json.dumps({**CONFIG, "num_hidden_layers": 10**12}), "num_hidden_layers"),
    (json.dumps(CONFIG).replace("4096", "NaN"), "NaN"),
    (json.dumps(CONFIG).replace("4096", "Infinity"), "Infinity"),
    (json.dumps(CONFIG).replace("4096", "1e400"), "beyond the finite"),
    (json.dumps(CONFIG).replace("4096", "7" * 5000), "digits"),
    (b'{"vocab_size": 32000, "name": "caf\xe9"}', "not UTF-8"),
    (json.dumps({**CONFIG, "attention_dropout": "x" * 5000}), "attention_dropout"),
])
def test_hostile_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes,
                             phrase: str) -> None:
    rc, err = config_rc(tmp_path, capsys, text)
    assert rc == 2 and phrase in err


def test_json_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = outcome(capsys, "--model", "llama-2-7b", "--budget", "24GiB", "--fit", "--json")
    assert rc in (0, 1) and strict_json(out)["schema"]


def test_a_crash_exits_3_in_one_line_not_1(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise ZeroDivisionError("float division by zero")
    monkeypatch.setattr(memory_cli, "estimate_training", broken)
    assert main(["memory", "--model", "gpt2"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: ZeroDivisionError") and err.count("\n") == 1


_numbers = st.one_of(st.integers(-10, 10**7).map(str), st.floats().map(str), st.text(max_size=12),
                     st.sampled_from(["nan", "inf", "1e400", "٣", "0", "1e12", "7e9", "24GiB", "1e-300"]))
_OPTIONS = ["--gpus", "--micro-batch", "--seq", "--grad-accum", "--batch", "--context", "--lora-rank",
            "--adam8bit-block", "--budget", "--params"]


@given(st.lists(st.tuples(st.sampled_from(_OPTIONS), _numbers), max_size=4), st.booleans(), st.booleans(),
       st.sampled_from(["train", "infer"]))
def test_any_options_give_a_result_or_one_line(options: list[tuple[str, str]], fit: bool, as_json: bool,
                                               mode: str) -> None:
    argv = ["memory", "--mode", mode]
    if not any(o == "--params" for o, _ in options):
        argv += ["--model", "gpt2"]
    for option, value in options:
        argv += [f"{option}={value}"]
    argv += (["--fit"] if fit else []) + (["--json"] if as_json else [])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    assert rc in (0, 1, 2), (argv, err.getvalue())
    if rc == 2:
        assert err.getvalue().count("\n") == 1, err.getvalue()
    elif as_json:
        strict_json(out.getvalue())


_config_values = st.one_of(st.integers(-5, 10**13), st.floats(), st.text(max_size=8), st.none(), st.booleans(),
                           st.lists(st.integers(), max_size=3))


@given(st.dictionaries(st.sampled_from([*CONFIG, "num_key_value_heads", "head_dim", "tie_word_embeddings",
                                        "num_local_experts", "num_experts_per_tok", "attention_dropout", "n_embd",
                                        "n_layer", "n_head"]), _config_values, max_size=5))
def test_any_config_gives_a_result_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                               changes: dict[str, Any]) -> None:
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps({**CONFIG, **changes}))  # json.dumps writes NaN/Infinity for such floats
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["memory", "--config", str(path), "--budget", "80GB", "--json"])
    assert rc in (0, 1, 2), err.getvalue()
    if rc == 2:
        assert err.getvalue().count("\n") == 1, err.getvalue()
    else:
        strict_json(out.getvalue())


@pytest.mark.parametrize("option", ["--gpu", "--model", "--lora-targets"])
def test_long_names_are_not_echoed_whole(capsys: pytest.CaptureFixture[str], option: str) -> None:
    argv = ["--model", "gpt2"] if option != "--model" else []
    rc, _, err = outcome(capsys, *argv, option, "A" * 5000 + "\n")
    assert rc == 2 and len(err) < 300


@pytest.mark.parametrize("option", ["--budget", "--gpu", "--model", "--config", "--lora-targets", "--params"])
@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_an_empty_value_is_refused_not_taken_as_left_out(capsys: pytest.CaptureFixture[str], option: str,
                                                         value: str) -> None:
    argv = [] if option in ("--model", "--config", "--params") else ["--model", "llama-2-7b"]
    rc, _, err = outcome(capsys, *argv, f"{option}={value}", *(["--lora-rank", "8"] if "lora" in option else []))
    assert rc == 2 and option in err, err


@pytest.mark.parametrize("what", ["gpus", "models"])
def test_lists_are_json_with_json(capsys: pytest.CaptureFixture[str], what: str) -> None:
    rc, out, _ = outcome(capsys, "--list", what, "--json")
    doc = strict_json(out)
    assert rc == 0 and doc["schema"] == "refenv.memory.list" and doc["kind"] == what and doc[what]
    names = [row["name"] for row in doc[what]]
    assert ("H100-SXM" if what == "gpus" else "llama-3-8b") in names
    assert all(isinstance(row.get("memory_bytes", row.get("params")), int) for row in doc[what])


MOE = {**CONFIG, "model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 512}
DS = {**CONFIG, "model_type": "deepseek_v3", "n_routed_experts": 8, "num_experts_per_tok": 2, "kv_lora_rank": 64,
      "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32, "q_lora_rank": None}


@pytest.mark.parametrize(("config", "key"), [
    ({**CONFIG, "hidden_size": 4000, "num_attention_heads": 48}, "num_attention_heads"),
    ({**CONFIG, "num_key_value_heads": 5}, "num_key_value_heads"),
    ({**CONFIG, "hidden_size": -4096}, "hidden_size"),
    ({k: v for k, v in CONFIG.items() if k != "intermediate_size"}, "intermediate_size"),
    ({**MOE, "moe_intermediate_size": -1}, "moe_intermediate_size"),
    ({**MOE, "num_experts": 8, "num_local_experts": 4}, "disagree"),
    ({**MOE, "num_experts_per_tok": 9}, "num_experts_per_tok"),
    ({**MOE, "mlp_only_layers": [0, 99]}, "mlp_only_layers"),
    ({**MOE, "mlp_only_layers": "all"}, "mlp_only_layers"),
    ({**MOE, "decoder_sparse_step": 0}, "decoder_sparse_step"),
    ({**DS, "qk_rope_head_dim": None}, "qk_rope_head_dim"),
    ({**DS, "model_type": "my_mla", "qk_nope_head_dim": None}, "qk_nope_head_dim"),
    ({**DS, "n_shared_experts": -1}, "n_shared_experts"),
    ({**CONFIG, "model_type": "gemma2", "sliding_window": None}, "sliding_window"),
    ({**CONFIG, "model_type": "gemma2", "sliding_window": 0}, "sliding_window"),
    ({**CONFIG, "model_type": "gemma3_text", "sliding_window_pattern": 0}, "sliding_window_pattern"),
    ({**CONFIG, "model_type": "gpt_oss", "layer_types": ["sliding_attention"] * 3}, "layer_types"),
    ({**CONFIG, "model_type": "qwen3", "layer_types": ["linear_attention"] * 32}, "linear_attention"),
    ({**CONFIG, "model_type": "gpt_oss", "num_hidden_layers": 2, "layer_types": [[1], {"a": 1}]}, "layer_types"),
    ({**MOE, "num_experts": {"a": 1}}, "num_experts"),
    ({**CONFIG, "quantization_config": {"quant_method": ["gptq"]}}, "quant_method"),
    ({**CONFIG, "model_type": "mistral", "use_bidirectional_attention": True, "sliding_window": 4096,
      "layer_types": None}, None),
    ({**CONFIG, "quantization_config": {"quant_method": "hqq"}}, "quantization_config.quant_method"),
    ({**CONFIG, "quantization_config": {"quant_method": "gptq", "bits": 5}}, "quantization_config.bits"),
    ({"model_type": "gemma3", "text_config": "gemma"}, "text_config"),
    ({"model_type": "gemma3", "text_config": CONFIG,
      "vision_config": {"model_type": "siglip_vision_model", "image_size": 900, "patch_size": 14}}, "image_size"),
])
def test_a_config_whose_fields_disagree_is_refused_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  config: dict[str, Any], key: str | None) -> None:
    rc, err = config_rc(tmp_path, capsys, json.dumps(config))
    if key is None:  # a key that changes nothing for this family: a result, not an error
        assert rc in (0, 1), err
        return
    assert rc == 2 and key in err, err


@pytest.mark.parametrize(("config", "noted"), [
    ({**CONFIG, "model_type": "mistral", "sliding_window": 8192, "max_position_embeddings": 4096},
     "sliding_window 8192 is larger than max_position_embeddings 4096"),
    ({**CONFIG, "model_type": "llama", "sliding_window": 4096}, "sliding_window (4096) ignored"),
    ({**CONFIG, "model_type": "llama", "kv_lora_rank": 512}, "kv_lora_rank (512) ignored"),
    ({**MOE, "n_shared_experts": 2}, "n_shared_experts (2) ignored"),
    ({**DS, "num_nextn_predict_layers": 1}, "num_nextn_predict_layers 1"),
    ({**CONFIG, "model_type": "brand_new"}, "model_type 'brand_new' is not one refenv knows"),
    ({**CONFIG, "quantization_config": {"quant_method": "awq", "modules_to_not_convert": ["layers.3.mlp"]}},
     "names one layer"),
])
def test_what_the_reader_assumed_is_said_in_the_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       config: dict[str, Any], noted: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    rc, out, err = outcome(capsys, "--config", str(path), "--mode", "infer")
    assert rc == 0 and noted in out, (err, out)
    rc, out, _ = outcome(capsys, "--config", str(path), "--json")
    assert noted in " ".join(strict_json(out)["model"]["notes"])


@pytest.mark.parametrize(("argv", "phrase"), [
    (["--model", "llama-3-8b", "--mode", "infer", "--ep", "2"], "--ep 2: expert parallelism needs a MoE model"),
    (["--model", "mixtral-8x7b", "--mode", "infer", "--ep", "16"], "more expert-parallel ranks than the 8"),
    (["--model", "mixtral-8x7b", "--gpus", "6", "--ep", "4"], "--ep 4 must divide --gpus 6"),
    (["--model", "gpt2", "--json", "--format", "svg"], "--json and --format svg disagree"),
    (["--verify", "--format", "html"], "--verify prints text or json"),
    (["--list", "models", "--format", "svg"], "--list prints text or json"),
    (["--model", "gpt2", "--weights", "int3"], "--weights"),
])
def test_bad_options_of_the_new_arithmetic(capsys: pytest.CaptureFixture[str], argv: list[str], phrase: str) -> None:
    rc = main(["memory", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and phrase in err and err.count("\n") == 1, err


_MORE_KEYS = ["model_type", "num_experts", "n_routed_experts", "moe_intermediate_size", "n_shared_experts",
              "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers", "decoder_sparse_step", "kv_lora_rank",
              "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "sliding_window", "layer_types",
              "sliding_window_pattern", "use_sliding_window", "quantization_config", "text_config", "vision_config"]
_families = st.sampled_from(["llama", "qwen3_moe", "deepseek_v3", "gemma3_text", "gemma3", "gpt_oss", "qwen2",
                             "mixtral", "phi3", "x"])


@given(st.dictionaries(st.sampled_from(_MORE_KEYS), _config_values, max_size=5), _families)
def test_any_new_key_gives_a_result_or_one_line(tmp_path_factory: pytest.TempPathFactory, changes: dict[str, Any],
                                                family: str) -> None:
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps({**CONFIG, "model_type": family, **changes}))
    for mode in ("train", "infer"):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["memory", "--config", str(path), "--mode", mode, "--budget", "80GB", "--json"])
        assert rc in (0, 1, 2), err.getvalue()
        if rc == 2:
            assert err.getvalue().count("\n") == 1, err.getvalue()
        else:
            strict_json(out.getvalue())
