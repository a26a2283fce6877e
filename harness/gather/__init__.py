"""I/O: gather the facts of this machine, layer by layer (see harness.facts for the shape)."""
