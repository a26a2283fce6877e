"""Named models (`--model llama-3-8b`): published configs with their sources, and config files."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import datafiles
from harness.inputs import InputError, label, load_json_file
from harness.memory.hf_config import from_hf_config
from harness.memory.shape import MemoryInputError, ModelConfig

CONFIG_CAP = 1 << 20  # an HF config.json is 1-3 kB

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "model_presets.json"
_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)([MB])$")


@dataclass(frozen=True)
class Preset:
    """A named model: its config, where the config came from, and the size its publisher states."""

    name: str
    config: ModelConfig
    source: str
    published_params: str
    published_params_source: str
    published_active_params: str = ""


def parse_published(text: str) -> tuple[float, float]:
    """'6.74B' -> (6.74e9, 0.005e9): the value and half a unit of its last stated digit."""
    m = _SIZE_RE.match(text)
    if not m:
        raise MemoryInputError(f"{DATA_FILE.name}: published size {text!r} is not like '6.74B' or '124M'")
    digits, unit = m.groups()
    scale = 1e9 if unit == "B" else 1e6
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits) * scale, 0.5 * 10.0 ** -decimals * scale


@lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def presets() -> dict[str, Preset]:
    """All presets, validated at load (a malformed entry names itself)."""
    doc = json.loads(datafiles.read(DATA_FILE.name))
    if doc.get("schema") != "refenv.model_presets" or doc.get("version") != 1:
        raise MemoryInputError(f"{DATA_FILE}: expected schema refenv.model_presets version 1")
    out: dict[str, Preset] = {}
    for name, entry in doc["presets"].items():
        source = str(entry["source"])
        cfg = from_hf_config(entry["config"], name, source=source)
        preset = Preset(name=name, config=cfg, source=source,
                        published_params=str(entry["published_params"]),
                        published_params_source=str(entry["published_params_source"]),
                        published_active_params=str(entry.get("published_active_params", "")))
        parse_published(preset.published_params)
        out[name] = preset
    return out


def preset(name: str) -> ModelConfig:
    """The config of a named model; an unknown name lists the known ones."""
    known = presets()
    key = name.strip().lower()
    if key not in known:
        raise MemoryInputError(f"unknown model {name!r}; known models: {', '.join(sorted(known))}")
    return known[key].config


def load_config_file(path: str) -> ModelConfig:
    """Read an HF-style config.json from disk; errors name the file."""
    p = Path(path)
    try:
        # Bounded (a device or pipe reports size 0), nesting bounded, NaN/Infinity and 1e400 refused.
        data: Any = load_json_file(p, f"--config {label(path)}", cap=CONFIG_CAP)
    except InputError as exc:
        raise MemoryInputError(str(exc)) from None
    name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    return from_hf_config(data, name, source=str(path))
