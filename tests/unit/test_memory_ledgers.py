"""State ledgers against published figures: 16 B/param, the ZeRO paper's 7.5B on 64 GPUs, QLoRA's bits."""

from __future__ import annotations

import pytest

from harness.memory import optimizers, sharding
from harness.memory.estimate import Estimate, TrainSetup, estimate_training
from harness.memory.lora import NF4_BITS_PER_PARAM, LoraSpec, lora_tensors, nf4_bytes, resolve_targets
from harness.memory.params import LINEAR, count_params, largest_module_params, layer_tensors, param_tensors
from harness.memory.presets import preset
from harness.memory.shape import MemoryInputError, bare_model
from harness.memory.sharding import Units, shard
from harness.memory.training import bytes_per_param, state_ledgers


def _total(led: object) -> int:
    return sum(getattr(led, k) for k in ("weights", "gradients", "optimizer_state", "master_weights"))


def test_lesson_7b_is_112_gb_of_training_state() -> None:
    led = state_ledgers(bare_model(7e9), "mixed", "adamw")
    assert (led.weights, led.gradients, led.master_weights, led.optimizer_state) == (14e9, 14e9, 28e9, 56e9)
    assert _total(led) == 112_000_000_000


@pytest.mark.parametrize(("regime", "expected"), [("mixed", 16), ("amp", 16), ("fp32", 16), ("bf16", 8)])
def test_bytes_per_param_by_regime(regime: str, expected: int) -> None:
    assert bytes_per_param(regime) == expected


@pytest.mark.parametrize(("sharding", "gb"), [("ddp", 120.0), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9)])
def test_zero_paper_7_5b_on_64_gpus(sharding: str, gb: float) -> None:
    # Rajbhandari et al. 2019, fig. 1: 120 GB -> 31.4 GB -> 16.6 GB -> 1.9 GB per GPU.
    per_gpu = shard(state_ledgers(bare_model(7.5e9), "mixed", "adamw"), sharding, 64)
    assert round(_total(per_gpu) / 1e9, 1) == gb


def test_fsdp_full_shard_adds_two_gathered_blocks_and_the_root() -> None:
    led = state_ledgers(bare_model(8e9), "mixed", "adamw")
    plain = shard(led, "zero1", 8)
    units = Units(block_bytes=1000, root_bytes=300)
    fsdp = shard(led, "fsdp-full", 8, units)
    zero3 = shard(led, "zero3", 8, units)
    assert fsdp.weights - -(-led.weights // 8) == 2000 + 300
    assert zero3.weights - -(-led.weights // 8) == 2000  # ZeRO has no root unit kept whole
    assert fsdp.gradients == zero3.gradients < plain.gradients


def _estimate(model: str, shard_name: str, gpus: int, impl: str = "paper") -> Estimate:
    return estimate_training(preset(model), TrainSetup(sharding=shard_name, gpus=gpus, impl=impl))


def test_zero3_gathers_blocks_as_fsdp_does() -> None:
    # Issue: `--sharding zero3 --gpus 8` gave exactly 16 psi / 8, no gathered layer at all.
    cfg = preset("llama-3-8b")
    n = count_params(cfg).total
    zero3 = _estimate("llama-3-8b", "zero3", 8).ledgers
    block = 2 * sum(t.numel for t in layer_tensors(cfg, 0))
    assert zero3.weights == -(-2 * n // 8) + 2 * block
    state = zero3.weights + zero3.gradients + zero3.optimizer_state + zero3.master_weights
    assert state > 16 * n / 8


def test_fsdp_root_unit_stays_gathered() -> None:
    # Llama-3-8B's root: 2 x 128256 x 4096 + 4096 parameters, 2.10 GB in bf16, beside its shard.
    for model, root_gb in (("llama-3-8b", 2.10), ("llama-3-70b", 4.20)):
        fsdp = _estimate(model, "fsdp-full", 8).ledgers
        zero3 = _estimate(model, "zero3", 8).ledgers
        assert round((fsdp.weights - zero3.weights) / 1e9, 2) == root_gb


def test_deepspeed_zero2_is_its_own_estimator() -> None:
    # deepspeed estimate_zero2_model_states_mem_needs(cpu_offload=False): 4 psi + 16 psi / N.
    # Llama-2-7B on 8 GPUs: 40.4 GB, where the paper's 2 psi + 14 psi / N gives 25.3 GB.
    n = count_params(preset("llama-2-7b")).total
    ds = _estimate("llama-2-7b", "zero2", 8, "deepspeed").ledgers
    paper = _estimate("llama-2-7b", "zero2", 8).ledgers
    state = ds.total - (ds.activations or 0)
    assert abs(state - (4 * n + 16 * n // 8)) <= 8 and round(state / 1e9, 1) == 40.4
    assert round((paper.total - (paper.activations or 0)) / 1e9, 1) == 25.3


def test_deepspeed_zero3_gathers_the_largest_module() -> None:
    # estimate_zero3_model_states_mem_needs(cpu_offload=False): 4 x largest_layer_params + 18 psi / N.
    cfg = preset("llama-2-7b")
    n, largest = count_params(cfg).total, largest_module_params(cfg)
    assert largest == 32000 * 4096  # the embedding (and the head)
    ds = _estimate("llama-2-7b", "zero3", 8, "deepspeed").ledgers
    assert abs(ds.total - (ds.activations or 0) - (4 * largest + 18 * n // 8)) <= 8


def test_deepspeed_is_only_for_zero_and_the_output_says_which() -> None:
    with pytest.raises(MemoryInputError, match="--impl deepspeed applies to"):
        _estimate("gpt2", "fsdp-full", 8, "deepspeed")
    assert sharding.implementation("zero2", "deepspeed") == "deepspeed"
    assert sharding.implementation("fsdp-full") == "torch" and sharding.implementation("zero3") == "paper"


def test_qlora_bits_per_parameter() -> None:
    assert round(NF4_BITS_PER_PARAM, 3) == 4.127
    n = 64 * 256 * 1000  # a whole number of second-level blocks
    assert nf4_bytes(n) * 8 / n == NF4_BITS_PER_PARAM


def test_qlora_quantizes_linear_weights_only() -> None:
    cfg = preset("llama-2-7b")
    lora = LoraSpec(16, resolve_targets(cfg, "q_proj,v_proj"), qlora=True)
    led = state_ledgers(cfg, "mixed", "adamw", lora)
    linear = [t for t in param_tensors(cfg) if t.kind == LINEAR]
    other = count_params(cfg).total - sum(t.numel for t in linear)
    adapters = sum(t.numel for t in lora_tensors(cfg, lora))
    assert led.weights == sum(nf4_bytes(t.numel) for t in linear) + 2 * other + 4 * adapters
    assert led.trainable_params == adapters == 32 * 2 * 16 * (4096 + 4096)
    assert led.gradients == 4 * adapters and led.master_weights == 0
    assert led.optimizer_state == 8 * adapters


def test_lora_all_linear_on_gqa_uses_the_narrow_k_v() -> None:
    cfg = preset("llama-3-8b")
    adapters = lora_tensors(cfg, LoraSpec(8, resolve_targets(cfg, "all-linear")))
    per_layer = 8 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 2 * (4096 + 14336) + (14336 + 4096))
    assert sum(t.numel for t in adapters) == 32 * per_layer


def test_lora_targets_are_checked() -> None:
    with pytest.raises(MemoryInputError, match="gate_proj"):
        resolve_targets(preset("gpt2"), "gate_proj")


def test_adam_step_scalars_are_host_tensors_counted_only_on_request() -> None:
    cfg = preset("gpt2")
    n_tensors = len(param_tensors(cfg))
    host = state_ledgers(cfg, "fp32", "adamw", step_scalars=True).optimizer_state
    device = state_ledgers(cfg, "fp32", "adamw").optimizer_state
    assert host - device == optimizers.STEP_SCALAR_BYTES * n_tensors


def test_8bit_adam_keeps_small_tensors_in_32_bit() -> None:
    assert optimizers.state_bytes((4095,), "adamw8bit", 2) == 2 * 4095 * 4
    assert optimizers.state_bytes((4096,), "adamw8bit", 2, block=256) == 2 * 4096 + 2 * 4 * 16
    assert optimizers.state_bytes((4096,), "adamw8bit", 2, block=2048) == 2 * 4096 + 2 * 4 * 2
    assert bytes_per_param("mixed", "adamw8bit") - 8 == 2 + 8 / 256  # ~2.0 B/param for both states


def test_adafactor_factors_matrices_and_keeps_vectors() -> None:
    assert optimizers.state_bytes((6, 5), "adafactor", 4) == (6 + 5) * 4
    assert optimizers.state_bytes((2, 3, 4), "adafactor", 4) == (6 + 8) * 4
    assert optimizers.state_bytes((7,), "adafactor", 4, step_scalars=True) == 7 * 4 + 4


def test_sgd_momentum_is_one_buffer() -> None:
    assert bytes_per_param("fp32", "sgd") == 4 + 4 + 4


def test_unknown_names_are_errors() -> None:
    with pytest.raises(MemoryInputError, match="--regime"):
        state_ledgers(bare_model(1e9), "fp8", "adamw")
    with pytest.raises(MemoryInputError, match="--optimizer"):
        state_ledgers(bare_model(1e9), "mixed", "lion")
    with pytest.raises(MemoryInputError, match="needs a --sharding"):
        shard(state_ledgers(bare_model(1e9), "mixed", "adamw"), "none", 4)
