"""`refenv mcp`: refenv as a Model Context Protocol server on standard input and output, on the official `mcp`
SDK's MCPServer (`pip install 'refenv[mcp]'`).

Each tool is one of refenv's answers (refenv/assistant/answers.py) with a typed, described input schema (the
SDK builds it from these annotations) and a JSON object as its result. An argument the schema refuses comes back
as the SDK's argument-validation error, which names the field; one the answer refuses as a ToolError naming the
argument; an unforeseen failure as the SDK's bare `Error executing tool NAME`, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from refenv.assistant import answers

INSTRUCTIONS = """refenv knows the PyTorch GPU stack (driver, CUDA runtime, torch and the extensions beside it).
Ask it why torch.cuda.is_available() is False on this machine (diagnose_machine) or in a pasted report
(diagnose_report), what CUDA stack an environment or image holds (stack), whether a model trains or serves in
the GPU memory at hand (memory_fit), what a torch release's builds need (compat), and where a matrix run's
environments get a GPU (matrix_readiness)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def _answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return call()
    except answers.BadArgument as exc:
        raise ToolError(str(exc)) from None


def diagnose_machine(
    torch_timeout: Annotated[float, Field(ge=1, le=3600, description="seconds to wait for torch to import and "
                                                                     "answer on this machine")] = 180.0,
) -> dict[str, Any]:
    """Diagnose THIS machine now: why torch.cuda.is_available() is False (or that CUDA works), with the verdict,
    each finding's evidence and fix, and what could not be known. Runs refenv's harness (driver libraries, NVML,
    torch in a child process)."""
    return _answer(lambda: answers.diagnose_machine(torch_timeout))


def diagnose_report(
    text: Annotated[str, Field(min_length=1, max_length=1_000_000,
                               description="the pasted report: `python -m torch.utils.collect_env` output, torch's "
                                           "error or warning, nvidia-smi, pip/conda lines, or a bug report's text")],
) -> dict[str, Any]:
    """Diagnose a machine you cannot touch from what its user pasted: the verdict (withheld at low confidence),
    the confidence, the report's lines it rests on, the fix, and the commands to ask the reporter for."""
    return _answer(lambda: answers.diagnose_report(text))


def stack(
    image: Annotated[str | None, Field(description="an image on this machine's Docker engine to read (e.g. "
                                                   "nvcr.io/nvidia/pytorch:25.01-py3); omit it for the "
                                                   "environment refenv runs in")] = None,
    capabilities: Annotated[list[str] | None, Field(max_length=16, description="compute capabilities of the GPUs "
                                                                               "to judge against, e.g. ['8.9', "
                                                                               "'9.0']")] = None,
    driver_cuda: Annotated[str | None, Field(description="the CUDA version the driver supports, e.g. '12.8'")] = None,
    imports: Annotated[bool, Field(description="also import each distribution in a child process (slower; "
                                               "this environment only)")] = False,
) -> dict[str, Any]:
    """The CUDA stack of this environment or of an image: torch and every extension (torchvision, xformers,
    flash-attn, vllm, ...) with its CUDA, the GPU architectures in its shared objects and, optionally, its
    import, judged against the GPUs and driver named."""
    return _answer(lambda: answers.stack(image, capabilities or (), driver_cuda, imports))


def memory_fit(
    model: Annotated[str | None, Field(max_length=200, description="a named model, e.g. llama-3-8b, "
                                                                   "llama-3-70b, qwen2.5-7b")] = None,
    config: Annotated[str | None, Field(max_length=4096, description="instead of model: the path of a "
                                                                     "Hugging Face config.json")] = None,
    mode: Annotated[Literal["train", "infer"], Field(description="training or serving")] = "train",
    regime: Annotated[Literal["fp32", "amp", "mixed", "bf16"], Field(
        description="training precision regime (harness/memory/training.py: fp32; amp, autocast over fp32 "
                    "weights; mixed, 16-bit weights with fp32 master weights; bf16, pure bf16)")] = "mixed",
    gpus: Annotated[int, Field(ge=1, le=1 << 20, description="number of GPUs (data parallel or sharded)")] = 1,
    gpu: Annotated[str | None, Field(max_length=200, description="the GPU to fit, e.g. H100-SXM, A100-80GB, "
                                                                 "RTX-4090")] = None,
    budget: Annotated[str | None, Field(max_length=200, description="instead of gpu: a memory budget, e.g. "
                                                                    "24GiB")] = None,
    seq: Annotated[int | None, Field(ge=1, le=10_000_000, description="training sequence length "
                                                                      "(default 2048)")] = None,
    micro_batch: Annotated[int | None, Field(ge=1, le=1_000_000, description="micro-batch size per GPU "
                                                                             "(default 1)")] = None,
    fit: Annotated[bool, Field(description="when it does not fit, propose the ladder of changes that "
                                           "make it fit")] = True,
) -> dict[str, Any]:
    """Predict the GPU memory of training or serving a model: the ledgers (weights, gradients, optimizer state,
    activations, KV cache), whether they fit the GPU or budget named, and the ladder of changes that make them
    fit."""
    return _answer(lambda: answers.memory_fit(model, config, mode, regime, gpus, gpu, budget, seq, micro_batch, fit))


def compat(
    release: Annotated[str, Field(min_length=1, max_length=40, description="a torch release, e.g. 2.14 or "
                                                                           "2.14.1")],
) -> dict[str, Any]:
    """A torch release's builds (cuXYZ, cpu), each with its CUDA version, the minimum NVIDIA driver (and the
    minimum under minor-version compatibility), its GPU architectures and the line that installs it."""
    return _answer(lambda: answers.compat(release))


def matrix_readiness(
    results: Annotated[str, Field(min_length=1, max_length=4096, description="a `refenv matrix` results "
                                                                             "folder, or its cells.json")],
    against: Annotated[str | None, Field(max_length=4096, description="another run's folder or cells.json "
                                                                      "(e.g. the main branch's) to compare "
                                                                      "with")] = None,
) -> dict[str, Any]:
    """A matrix run's readiness: per environment, the hosts where torch gets a GPU, the ones where it does not
    with the smallest fix, and whether observations agreed with predictions; with `against`, which hosts lost
    or gained the GPU since that run."""
    return _answer(lambda: answers.matrix_readiness(results, against))


TOOLS: tuple[Callable[..., dict[str, Any]], ...] = (diagnose_machine, diagnose_report, stack, memory_fit, compat,
                                                    matrix_readiness)


def server() -> MCPServer:
    """The server with refenv's tools."""
    from importlib import metadata

    try:
        mine = metadata.version("refenv")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        mine = "0"
    made: MCPServer = MCPServer("refenv", instructions=INSTRUCTIONS, version=mine, log_level="WARNING")
    for tool in TOOLS:
        made.add_tool(tool, annotations=READ_ONLY, structured_output=True)
    return made


def main() -> None:
    """Serve on standard input and output until the client closes them (logs, if any, go to standard error)."""
    sys.stdout.flush()
    server().run("stdio")
