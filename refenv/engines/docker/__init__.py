"""The local Docker engine: the SDK wrapper (the one module that speaks to Docker) and the CellEngine on it."""
