"""Run cells as Slurm jobs through the Slurm CLI (sbatch, squeue, sinfo, scancel): no Python Slurm library.

`script` renders job scripts and sbatch arguments (pure), `state` reads squeue/sinfo JSON (pure),
`cli` runs the commands, `engine` is the runner's `CellEngine` on a cluster.
"""
