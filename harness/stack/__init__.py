"""The rest of the CUDA stack in an environment: every distribution that ships CUDA code or pins torch.

`inventory` finds them by what they ship (shared objects with CUDA fatbins, a `Requires-Dist` on torch, the
`nvidia-*` runtime wheels, what torch itself pins), reads what each was built for (the torch it requires,
the CUDA of its build, the GPU architectures compiled into its shared objects, read from their ELF
`.nv_fatbin` sections without any CUDA tool) and imports each in a child process. `judge` turns that into
findings against a host (its GPUs' compute capabilities, its driver's CUDA version). Standard library only;
torch is imported only in the child.
"""
