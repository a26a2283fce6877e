"""Podman, the second local engine, driven through its CLI."""
