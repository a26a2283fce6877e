"""refenv's in-container harness: diagnose the GPU stack, probe it, and check memory arithmetic.

Runs on any machine with Python 3.8+: the standard library only, torch imported lazily,
the NVML bindings (nvidia-ml-py) used when present.
"""

__version__ = "0.1.0"
