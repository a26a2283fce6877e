"""Where cells run besides the local Docker engine: a Slurm cluster (`slurm/`) and Kubernetes (`kubernetes/`)."""
