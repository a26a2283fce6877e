"""A well-formed matrix.yaml that the matrix tests change one field of at a time."""

GOOD = """\
version: 1
environments:
  cu130:
    torch: "2.14.1"
    variant: cu130
hosts:
  r580: {kind: simulated, profile: r580}
  none: {kind: none}
scenarios:
  gpu: {gpus: all}
  hidden:
    gpus: all
    env: {CUDA_VISIBLE_DEVICES: ""}
"""
