"""One key of a config.json read and checked: its type, its bounds, the error naming it."""

from __future__ import annotations

from collections.abc import Mapping

from harness.inputs import shorten
from harness.memory.errors import MemoryInputError

# Upper bounds of a config.json's sizes: far beyond any published model (the largest have ~200 layers,
# hidden sizes of ~30k and vocabularies of ~1M), small enough that per-layer loops and products stay quick
# ("num_hidden_layers": 1e12 would loop for hours; "hidden_size": 1e300 is not a model).
MAXIMA = {"num_hidden_layers": 10_000, "n_layer": 10_000, "num_attention_heads": 65_536, "n_head": 65_536,
          "num_key_value_heads": 65_536, "num_local_experts": 65_536, "num_experts": 65_536,
          "n_routed_experts": 65_536, "num_experts_per_tok": 65_536, "experts_per_token": 65_536,
          "n_shared_experts": 65_536, "decoder_sparse_step": 10_000, "moe_layer_freq": 10_000,
          "first_k_dense_replace": 10_000, "max_window_layers": 10_000, "sliding_window_pattern": 10_000}
MAX_SIZE = 1 << 26  # hidden, intermediate, head_dim, vocab, positions and windows: 67M


def int_key(d: Mapping[str, object], key: str, where: str, *, minimum: int = 1) -> int:
    """An integer key within its bounds (a float that is a whole number is taken)."""
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            value = int(value)
        else:
            raise MemoryInputError(f"{where}: {key!r} must be an integer, got {shorten(value)}")
    if value < minimum:
        raise MemoryInputError(f"{where}: {key!r} must be >= {minimum}, got {value}")
    maximum = MAXIMA.get(key, MAX_SIZE)
    if value > maximum:
        raise MemoryInputError(f"{where}: {key!r} must be <= {maximum}, got {shorten(value)}")
    return value


def opt_int(d: Mapping[str, object], key: str, where: str, default: int, *, minimum: int = 1) -> int:
    """An integer key, or `default` where it is absent or null."""
    return default if d.get(key) is None else int_key(d, key, where, minimum=minimum)


def probability(d: Mapping[str, object], keys: tuple[str, ...], where: str) -> float:
    """The first of `keys` present, a probability in [0, 1) (dropout); 0 when none is."""
    for key in keys:
        value = d.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise MemoryInputError(f"{where}: {key!r} must be a probability in [0, 1), got {shorten(value)}")
        return float(value)
    return 0.0


def bool_key(d: Mapping[str, object], key: str, where: str, default: bool) -> bool:
    """true or false, or `default` where absent or null."""
    value = d.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise MemoryInputError(f"{where}: {key!r} must be true or false, got {shorten(value)}")
    return value


def layer_list(d: Mapping[str, object], key: str, where: str, below: int) -> frozenset[int]:
    """A list of layer indices, each below `below` (num_hidden_layers)."""
    value = d.get(key)
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise MemoryInputError(f"{where}: {key!r} must be a list of layer indices, got {shorten(value)}")
    bad = [v for v in value if not 0 <= v < below]
    if bad:
        raise MemoryInputError(f"{where}: {key!r} has layer {bad[0]}, outside 0..{below - 1} (num_hidden_layers)")
    return frozenset(value)
