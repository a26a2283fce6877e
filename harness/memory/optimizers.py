"""What each optimizer keeps per parameter tensor, in bytes (torch.optim and bitsandbytes semantics)."""

from __future__ import annotations

from harness.memory.shape import MemoryInputError

ADAMW = "adamw"
SGD = "sgd"
ADAFACTOR = "adafactor"
ADAMW_8BIT = "adamw8bit"
OPTIMIZERS = (ADAMW, SGD, ADAFACTOR, ADAMW_8BIT)

DESCRIPTIONS = {
    ADAMW: "AdamW: exp_avg and exp_avg_sq in the state dtype",
    SGD: "SGD with momentum: one momentum buffer",
    ADAFACTOR: "Adafactor (torch.optim.Adafactor): factored second moment, no first moment",
    ADAMW_8BIT: "8-bit AdamW (bitsandbytes): 1-byte states with an fp32 absmax per block",
}

# torch.optim keeps `step` as a 0-dim fp32 tensor per parameter tensor on the *host* unless
# fused/capturable (torch/optim/adam.py, _init_group), so it is host memory, not GPU memory.
STEP_SCALAR_BYTES = 4
# bitsandbytes: tensors under min_8bit_size = 4096 elements keep 32-bit states; the blockwise
# absmax is one fp32 per block (2048 in older releases, 256 in newer: arXiv 2110.02861 and facts).
MIN_8BIT_SIZE = 4096
DEFAULT_8BIT_BLOCK = 256
# Its two quantization maps (256 fp32 entries each) are shared by all tensors on a device.
QMAP_BYTES = 2 * 256 * 4


def check(optimizer: str) -> str:
    """The optimizer's name, or a clear error listing the known ones."""
    if optimizer not in OPTIMIZERS:
        raise MemoryInputError(f"--optimizer {optimizer!r} is unknown; expected one of {', '.join(OPTIMIZERS)}")
    return optimizer


def state_bytes(shape: tuple[int, ...], optimizer: str, dtype_bytes: int, *,
                block: int = DEFAULT_8BIT_BLOCK, step_scalars: bool = False) -> int:
    """Optimizer state of one parameter tensor of `shape` whose states are `dtype_bytes` wide."""
    numel = 1
    for d in shape:
        numel *= d
    step = STEP_SCALAR_BYTES if step_scalars else 0
    if optimizer == ADAMW:
        return 2 * numel * dtype_bytes + step
    if optimizer == SGD:
        return numel * dtype_bytes  # momentum_buffer = clone of the gradient; no step counter
    if optimizer == ADAFACTOR:
        if len(shape) < 2:
            return numel * dtype_bytes + step  # vectors keep a full `variance`
        rows = numel // shape[-1]                # row_var: shape[:-1] + (1,)
        cols = (numel // (shape[-1] * shape[-2])) * shape[-1]  # col_var: shape[:-2] + (1, shape[-1])
        return (rows + cols) * dtype_bytes + step
    if optimizer == ADAMW_8BIT:
        if numel < MIN_8BIT_SIZE:
            return 2 * numel * 4  # 32-bit fallback: fp32 states whatever the parameter dtype
        return 2 * numel + 2 * 4 * -(-numel // block)  # bitsandbytes counts steps in Python, no tensor
    raise MemoryInputError(f"unknown optimizer {optimizer!r}; expected one of {', '.join(OPTIMIZERS)}")


def shared_bytes(optimizer: str) -> int:
    """State shared by all tensors (8-bit AdamW's quantization maps)."""
    return QMAP_BYTES if optimizer == ADAMW_8BIT else 0
