"""The peak of a training step, phase by phase: forward, backward, optimizer step.

The ledgers say what is held; the peak is what must fit. Sources, torch 2.x: gradients are freed by
`zero_grad(set_to_none=True)` (the default) before the next forward unless micro-batches accumulate; the
mixed-precision step works on fp32 copies of the 16-bit gradients (4 B/param beside them) for the fp32
master weights; foreach AdamW (torch's default on CUDA, torch/optim/adam.py `_multi_tensor_adam`) makes
`exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)`, one temporary as large as the second moment.
Forward ends at the head with the logits and their fp32 copy alive beside every activation. Backward
starts with every activation alive and the gradient of the logits (the loss's backward, then log-softmax's)
or, under full checkpointing, a recomputed layer, and ends with every gradient alive; its peak is the
larger of the two ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory import optimizers

PHASES = ("forward", "backward", "optimizer_step")


@dataclass(frozen=True)
class PhasePeaks:
    """Bytes per GPU at the high point of each phase, and the transients behind them."""

    forward: int
    backward: int
    optimizer_step: int
    logits_bytes: int              # forward's transient at the head: the logits and their fp32 copy
    logits_grad_bytes: int         # backward's first transient: d(log-softmax) and d(logits)
    recompute_bytes: int           # full checkpointing: the layer recomputed during backward
    fp32_grad_copy_bytes: int      # the mixed-precision step's fp32 gradients
    optimizer_temp_bytes: int      # foreach AdamW's sqrt of the second moment

    @property
    def peak(self) -> int:
        return max(self.forward, self.backward, self.optimizer_step)

    @property
    def phase(self) -> str:
        """The phase where the peak falls."""
        values = (self.forward, self.backward, self.optimizer_step)
        return PHASES[values.index(max(values))]


def optimizer_temp_bytes(optimizer: str, optimizer_state_bytes: int, eps_out_of_place: bool = False) -> int:
    """Temporaries of one optimizer step: foreach AdamW's sqrt of exp_avg_sq, half its two equal states (and,
    where torch adds eps out of place, its sum as well: torch 1.13, see harness/memory/torch_traits.py).

    None for SGD (its foreach momentum update is in place, torch/optim/sgd.py) or 8-bit AdamW
    (bitsandbytes updates its states in one fused kernel); Adafactor's are not modelled (0).
    """
    return optimizer_state_bytes // 2 * (2 if eps_out_of_place else 1) if optimizer == optimizers.ADAMW else 0


def training_peaks(*, weights: int, gradients: int, optimizer_state: int, master_weights: int, activations: int,
                   logits_bytes: int, logits_grad_bytes: int, recompute_bytes: int, fp32_grad_copy_bytes: int,
                   optimizer_temp_bytes: int, grads_persist: bool) -> PhasePeaks:
    """Forward, backward and step peaks from the ledgers and the transients of each phase."""
    held = weights + optimizer_state + master_weights + (gradients if grads_persist else 0)
    forward = held + activations + logits_bytes
    # A recomputed layer's backward makes gradients as large as what it recomputed: 2x is the upper estimate
    # `memory --verify` brackets (measured between 1x and 2x on the probe).
    backward = held + max(activations + max(logits_grad_bytes, 2 * recompute_bytes),
                          0 if grads_persist else gradients)
    step = weights + optimizer_state + master_weights + gradients + fp32_grad_copy_bytes + optimizer_temp_bytes
    return PhasePeaks(forward=forward, backward=backward, optimizer_step=step, logits_bytes=logits_bytes,
                      logits_grad_bytes=logits_grad_bytes, recompute_bytes=recompute_bytes,
                      fp32_grad_copy_bytes=fp32_grad_copy_bytes, optimizer_temp_bytes=optimizer_temp_bytes)
