"""refenv's host side: reference environments for the PyTorch GPU stack, and the proof that they work."""

__version__ = "0.1.0"
