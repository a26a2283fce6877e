"""Where cells run: the seam the runner talks to, and the Docker, Slurm and Kubernetes engines behind it."""
