"""refenv's in-container harness: diagnose the GPU stack, probe it, and check memory arithmetic.

Runs on any machine with Python 3.8+: the standard library only, torch imported lazily,
the NVML bindings (nvidia-ml-py) used when present.

Its rooms: `commands/` (one module per `python -m harness` command) over `diagnosis/` (the library every
answer calls); what runs inside an image (`gather/`, `classify/`, `probe/`, `memory/`, `stack/`) apart from
what only the host or a browser runs (`intake/`, the report reader; `answer/`, where answers are written);
the knowledge at the ground (`schema/` with the verdict table, `catalogue/`, `compat`, `gpus/`, `facts`).
tests/unit/test_layout.py holds their floors.
"""

__version__ = "0.1.0"
