"""The peak of a step: forward, backward and optimizer-step high points; `--fit` judges the peak."""

from __future__ import annotations

from harness.memory.budget import CUDA_CONTEXT_BYTES, FRAGMENTATION, judge, parse_budget
from harness.memory.estimate import TrainSetup, estimate_training
from harness.memory.ladder import ladder
from harness.memory.params import count_params
from harness.memory.peak import optimizer_temp_bytes, training_peaks
from harness.memory.presets import preset


def test_mixed_step_counts_fp32_gradient_copies_and_foreach_temporaries() -> None:
    cfg = preset("llama-2-7b")
    n = count_params(cfg).total
    est = estimate_training(cfg, TrainSetup(seq_len=1024))
    ph = est.phases
    assert ph is not None
    assert ph.fp32_grad_copy_bytes == 4 * n          # one fp32 copy of every bf16 gradient
    assert ph.optimizer_temp_bytes == 4 * n          # foreach sqrt(exp_avg_sq), fp32
    assert ph.optimizer_step == 24 * n               # 16 B/param held + 4 + 4
    assert est.peak_bytes == ph.optimizer_step > est.ledgers.total - (est.ledgers.activations or 0)
    assert ph.phase == "optimizer_step"


def test_activations_peak_in_backward_when_large() -> None:
    est = estimate_training(preset("gpt2"), TrainSetup(micro_batch=32, seq_len=1024, attention="eager"))
    ph = est.phases
    assert ph is not None and ph.phase == "backward"
    assert ph.backward - ph.forward == ph.logits_grad_bytes - ph.logits_bytes
    assert ph.logits_grad_bytes == 2 * 4 * 32 * 1024 * 50257  # fp32, twice


def test_accumulation_keeps_gradients_through_forward() -> None:
    one = estimate_training(preset("gpt2"), TrainSetup(seq_len=1024)).phases
    acc = estimate_training(preset("gpt2"), TrainSetup(seq_len=1024, grad_accum=4)).phases
    assert one is not None and acc is not None
    assert acc.forward - one.forward == 2 * count_params(preset("gpt2")).total


def test_peak_arithmetic() -> None:
    ph = training_peaks(weights=10, gradients=10, optimizer_state=40, master_weights=20, activations=100,
                        logits_bytes=3, logits_grad_bytes=5, recompute_bytes=0, fp32_grad_copy_bytes=20,
                        optimizer_temp_bytes=20, grads_persist=False)
    assert (ph.forward, ph.backward, ph.optimizer_step) == (173, 175, 120)
    ckpt = training_peaks(weights=10, gradients=10, optimizer_state=40, master_weights=20, activations=100,
                          logits_bytes=3, logits_grad_bytes=5, recompute_bytes=30, fp32_grad_copy_bytes=0,
                          optimizer_temp_bytes=0, grads_persist=False)
    assert ckpt.backward == 70 + 100 + 2 * 30  # the recomputed layer and its backward
    assert optimizer_temp_bytes("adamw", 80) == 40 and optimizer_temp_bytes("sgd", 80) == 0
    assert optimizer_temp_bytes("adamw8bit", 80) == 0


def test_fit_judges_the_peak_not_the_sum() -> None:
    # A budget whose usable part lies between the ledgers' sum and the step's peak: "fits" by the sum
    # (the old verdict), not by the peak.
    cfg, setup = preset("gpt2"), TrainSetup(seq_len=256)
    est = estimate_training(cfg, setup)
    middle = (est.ledgers.total + est.peak_bytes) // 2
    budget = parse_budget(str(round((middle + CUDA_CONTEXT_BYTES) / (1 - FRAGMENTATION))))
    assert judge(est.ledgers.total, budget).fits and not judge(est.peak_bytes, budget).fits
    plans = ladder(cfg, setup, budget)
    assert plans and plans[-1].fit.required_bytes == plans[-1].estimate.peak_bytes
