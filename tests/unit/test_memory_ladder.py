"""The OOM ladder: rungs in the lesson's order, each cumulative, stopping at the first plan that fits."""

from __future__ import annotations

import pytest

from harness.memory.budget import gpu_budget, judge, parse_budget
from harness.memory.estimate import InferSetup, TrainSetup, estimate_training
from harness.memory.ladder import ladder
from harness.memory.presets import preset
from harness.memory.shape import MemoryInputError, bare_model


def test_nothing_to_do_when_it_fits() -> None:
    assert ladder(preset("gpt2"), TrainSetup(seq_len=1024), gpu_budget("H100-SXM")) == ()


def test_halving_the_micro_batch_is_tried_first_and_keeps_the_effective_batch() -> None:
    cfg, setup = preset("gpt2"), TrainSetup(micro_batch=64, seq_len=1024)
    budget = parse_budget("24GiB")
    assert not judge(estimate_training(cfg, setup).ledgers.total, budget).fits
    plans = ladder(cfg, setup, budget)
    assert [p.rung for p in plans] == [1] and plans[0].fit.fits
    chosen = plans[0].estimate.setup
    assert isinstance(chosen, TrainSetup)
    assert chosen.micro_batch < 64 and chosen.effective_batch == 64


def test_llama_7b_on_an_h100_climbs_to_the_optimizer_rung() -> None:
    plans = ladder(preset("llama-2-7b"), TrainSetup(micro_batch=8, seq_len=4096), gpu_budget("H100-SXM"))
    # The peak is the mixed-precision step: 16 B/param + fp32 gradient copies + foreach temporaries, so
    # neither smaller micro-batches nor checkpointing nor 8-bit states (still 14 B/param at the step) fit.
    assert [p.rung for p in plans] == [1, 2, 3, 3]
    assert [p.fit.fits for p in plans] == [False, False, False, True]
    assert [p.title for p in plans][2:] == ["8-bit AdamW", "LoRA r=16"]
    last = plans[-1].estimate.setup
    assert isinstance(last, TrainSetup) and last.checkpointing == "full" and last.effective_batch == 8
    totals = [p.estimate.ledgers.total for p in plans]
    assert totals == sorted(totals, reverse=True)


def test_70b_needs_lora_or_fsdp() -> None:
    plans = ladder(preset("llama-3-70b"), TrainSetup(seq_len=4096), gpu_budget("H100-SXM"))
    assert plans[-1].fit.fits
    assert plans[-1].title.startswith(("QLoRA", "LoRA", "FSDP"))
    assert "8-bit AdamW" in [p.title for p in plans]


def test_bare_count_skips_lora_and_reaches_fsdp() -> None:
    plans = ladder(bare_model(7e9), TrainSetup(), parse_budget("24GiB"))
    assert plans[-1].title.startswith("FSDP") and plans[-1].fit.fits
    setup = plans[-1].estimate.setup
    assert isinstance(setup, TrainSetup) and setup.gpus >= 2


def test_inference_ladder_quantizes_then_splits() -> None:
    plans = ladder(preset("llama-3-70b"), InferSetup(batch=4, context=8192), gpu_budget("RTX-4090"))
    titles = [p.title for p in plans]
    assert "int8 weights" in titles and "int4 weights" in titles and plans[-1].fit.fits
    assert titles.index("int8 weights") < titles.index("int4 weights")


def test_ladder_needs_a_budget() -> None:
    with pytest.raises(MemoryInputError, match="--fit needs"):
        ladder(preset("gpt2"), TrainSetup(), None)


def test_fit_shards_over_the_gpus_the_user_has_before_8bit_adam() -> None:
    # Issue: `--model llama-2-7b --gpus 8 --gpu H100-SXM --fit` recommended 8-bit AdamW although FSDP over
    # the user's 8 GPUs fits with room to spare.
    plans = ladder(preset("llama-2-7b"), TrainSetup(sharding="ddp", gpus=8), gpu_budget("H100-SXM"))
    assert plans[-1].fit.fits and plans[-1].title == "FSDP FULL_SHARD across your 8 GPUs"
    last = plans[-1].estimate.setup
    assert isinstance(last, TrainSetup) and last.gpus == 8 and last.optimizer == "adamw"
    assert "8-bit" not in " ".join(p.title for p in plans)


def test_fit_never_proposes_fewer_gpus_than_the_user_has() -> None:
    plans = ladder(preset("llama-3-70b"), TrainSetup(sharding="ddp", gpus=8, seq_len=4096), gpu_budget("H100-SXM"))
    assert plans[-1].fit.fits
    assert all(isinstance(p.estimate.setup, TrainSetup) and p.estimate.setup.gpus >= 8 for p in plans)
    titles = [p.title for p in plans]
    assert "8-bit AdamW with FSDP across your 8 GPUs" in titles  # 8-bit Adam is tried with FSDP
    assert not plans[-1].title.startswith("QLoRA")


def test_more_gpus_start_from_the_users_count() -> None:
    plans = ladder(bare_model(70e9), TrainSetup(sharding="ddp", gpus=8), gpu_budget("H100-SXM"))
    last = plans[-1].estimate.setup
    assert isinstance(last, TrainSetup) and last.gpus >= 16 and plans[-1].fit.fits
