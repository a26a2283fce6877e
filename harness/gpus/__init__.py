"""The project's one GPU table (data/gpu_specs.json): spec sheets, the names NVML reports, and compute
capability by product line; read by the probes, the memory budget, the report reader, the simulated
hosts' profiles and reproduce."""
