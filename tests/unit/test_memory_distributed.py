"""`memory --verify --full` on the CPU: every case, sharding as torch implements it measured per rank over
gloo, the KV cache grown token by token, and what it names but cannot measure here."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.memory import run_verification
from harness.memory.verify_dist import judge_sharding
from harness.memory.verify_infer import run_kv_verification
from harness.schema import decode, encode
from harness.schema.memory_document import RankCounts

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def full_doc() -> dict[str, Any]:
    doc: dict[str, Any] = encode(run_verification(quick=False, device="cpu"))  # as the harness writes it
    return doc


@pytest.fixture(scope="module")
def dist_doc(full_doc: dict[str, Any]) -> dict[str, Any]:
    sharding: dict[str, Any] = full_doc["sharding"]
    return sharding


@pytest.mark.slow
def test_full_cpu_verification_passes(full_doc: dict[str, Any]) -> None:
    assert len(full_doc["cases"]) == 62 and full_doc["status"] == "PASS", [
        c["name"] for c in full_doc["cases"] if c["status"] != "PASS"]
    regimes = {c["regime"] for c in full_doc["cases"]}
    assert regimes == {"fp32-adamw", "bf16-adamw", "sgd-momentum", "mixed-adamw", "lora", "adafactor", "amp-adamw",
                       "peft-lora"}


@pytest.mark.slow
def test_full_verification_names_what_it_cannot_measure(full_doc: dict[str, Any]) -> None:
    missing = full_doc["not_measured"]
    for what in ("optimizer adamw8bit", "qlora / weights nf4", "impl deepspeed", "zero2", "zero3"):
        assert missing.get(what), what


@pytest.mark.slow
def test_every_rank_holds_what_the_cli_says(dist_doc: dict[str, Any]) -> None:
    failing = [c for c in dist_doc["checks"] if c["status"] != "PASS"]
    assert dist_doc["error"] is None and failing == [] and dist_doc["status"] == "PASS"
    assert {c["name"].split(" rank")[0] for c in dist_doc["checks"]} == {"ddp", "zero1", "fsdp-full", "fsdp-grad-op"}


@pytest.mark.slow
def test_fsdp_keeps_the_root_unit_gathered_after_forward(dist_doc: dict[str, Any]) -> None:
    # torch's fully_shard default: the blocks reshard after forward, the root (embeddings, final norm, head) not.
    for rank in dist_doc["ranks"]:
        assert rank["fsdp-full"]["gathered_names"] == ["embed_tokens.weight", "final_norm.weight", "lm_head.weight"]
        assert rank["fsdp-grad-op"]["gathered_after_forward"] == rank["ddp"]["weights"]


@pytest.mark.slow
def test_a_rank_holding_more_fails(dist_doc: dict[str, Any]) -> None:
    written = copy.deepcopy(dist_doc["ranks"])
    written[1]["fsdp-full"]["optimizer_state"] *= 2  # the optimizer state not sharded after all
    ranks = [{mode: decode(RankCounts, counts) for mode, counts in rank.items()} for rank in written]
    bad = [c.name for c in judge_sharding(ranks) if c.status != "PASS"]
    assert bad == ["fsdp-full rank 1 optimizer_state"]


def test_kv_cache_grown_token_by_token_is_the_arithmetic() -> None:
    doc = encode(run_kv_verification())
    assert doc["status"] == "PASS" and len(doc["checks"]) == 3
    assert all(c["measured_bytes"] == c["predicted_bytes"] > 0 for c in doc["checks"])


@pytest.mark.slow
def test_activation_model_matches_transformers_llama(full_doc: dict[str, Any]) -> None:
    # transformers is a dev dependency: its own LlamaForCausalLM, built from a small config, no download.
    hf = full_doc["transformers"]
    assert hf["status"] == "PASS" and len(hf["checks"]) == 4
    assert {c["name"].split()[1] for c in hf["checks"]} == {"sdpa", "eager"}
    assert all(abs(c["ratio"] - 1) <= 0.05 for c in hf["checks"])
