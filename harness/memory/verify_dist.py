"""Sharding measured with torch.distributed on the CPU: what each rank holds under DDP, ZeRO-1 and FSDP.

Two processes over gloo train one step of the small Llama-style probe (fp32, AdamW) under each sharding
torch implements — DistributedDataParallel, ZeroRedundancyOptimizer (ZeRO-1), FSDP2 `fully_shard` with
and without resharding after forward (FULL_SHARD and SHARD_GRAD_OP) — and every rank counts its own
storages of weights, gradients and optimizer state, and which parameters are still gathered when forward
ends. The judgement compares them with the CLI's own sharding arithmetic (harness/memory/sharding.py).
DeepSpeed is not a dependency here: its ZeRO figures stay its own estimators' (sharding.IMPL_SOURCES).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.memory import sharding
from harness.memory.cases import CPU_SIZES
from harness.memory.estimate import TrainSetup, estimate_training
from harness.memory.params import count_params, layer_tensors, param_tensors
from harness.schema.jsondata import decode, encode
from harness.schema.memory_document import RankCounts, ShardingSection, SizeCheck
from harness.schema.outcomes import ERROR, FAIL, PASS

WORLD = 2
SIZE = "small-llama"
MODES = ("ddp", "zero1", "fsdp-full", "fsdp-grad-op")
TIMEOUT_S = 240
# What torch cannot show here, and why (`memory --verify --full` names them).
NOT_MEASURED = {
    "zero2": "torch has no ZeRO-2 apart from FSDP SHARD_GRAD_OP (measured as fsdp-grad-op)",
    "zero3": "torch has no ZeRO-3 apart from FSDP FULL_SHARD (measured as fsdp-full)",
    "impl deepspeed": "DeepSpeed is not installed here; its figures are its own estimators' "
                      "(estimate_zero2/zero3_model_states_mem_needs)",
}


def _rank_main(rank: int, folder: str) -> None:
    """One rank: each mode in turn, its storages counted, written to rank<N>.json."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD)
    try:
        out = {mode: _measure(mode) for mode in MODES}
        Path(folder, f"rank{rank}.json").write_text(json.dumps(encode(out)))
        # Every rank is done before any tears down: a rank that exits while its peer still holds the gloo
        # connection makes the peer's transport thread throw, and the peer aborts ("terminate called ...").
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _local(t: Any) -> Any:
    return t.to_local() if hasattr(t, "to_local") else t


def _bytes(tensors: Any) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        if t is not None:
            st = _local(t).untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


def _measure(mode: str) -> RankCounts:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.distributed.tensor import DTensor
    from torch.nn.parallel import DistributedDataParallel

    from harness.memory.probe_model import build_probe

    cfg, batch, seq = CPU_SIZES[SIZE]
    model = build_probe(cfg, attention="sdpa", dtype=torch.float32)
    wrapped: Any = model
    if mode == "ddp":
        # gradient_as_bucket_view: the gradients are views into DDP's buckets, not a second copy.
        wrapped = DistributedDataParallel(model, gradient_as_bucket_view=True)
    elif mode.startswith("fsdp"):
        mesh = init_device_mesh("cpu", (WORLD,))
        # FULL_SHARD as fully_shard's default does it (None: True for the blocks, False for the root);
        # SHARD_GRAD_OP keeps every unit gathered from forward to backward.
        reshard = None if mode == "fsdp-full" else False
        for layer in model.layers:
            fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    params = list(model.parameters())
    if mode == "zero1":
        opt: Any = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW, lr=1e-4)
    else:
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), generator=g)
    loss = wrapped(ids, ids)
    gathered = [(n, p) for n, p in model.named_parameters() if not isinstance(p, DTensor)]
    weights, after_forward = _bytes(params), _bytes(p for _, p in gathered)
    names = tuple(sorted(n for n, _ in gathered))
    loss.backward()
    gradients = _bytes(p.grad for p in model.parameters())
    opt.step()
    local = opt.optim if mode == "zero1" else opt
    state = _bytes(v for s in local.state.values() for v in s.values() if isinstance(v, torch.Tensor))
    return RankCounts(weights, after_forward, names, gradients, state)


def _run_ranks() -> list[dict[str, RankCounts]]:
    """Start the ranks as fresh processes (gloo over a file rendezvous); their counts by rank."""
    root = str(Path(__file__).resolve().parent.parent.parent)
    env = dict(os.environ, PYTHONPATH=root + (os.pathsep + os.environ["PYTHONPATH"]
                                               if os.environ.get("PYTHONPATH") else ""))
    # The ranks talk over loopback only: gloo otherwise binds the address the host name resolves to.
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    code = "import sys; from harness.memory.verify_dist import _rank_main; _rank_main(int(sys.argv[1]), sys.argv[2])"
    with tempfile.TemporaryDirectory(prefix="refenv-dist-") as folder:
        procs = [subprocess.Popen([sys.executable, "-c", code, str(r), folder], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(WORLD)]
        errors = []
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            if proc.returncode != 0:
                errors.append(f"rank {procs.index(proc)} (exit {proc.returncode}): {err.strip()[-600:]}")
        if errors:
            raise RuntimeError(f"a rank failed: {' | '.join(errors)}")
        return [_read_rank(Path(folder, f"rank{r}.json")) for r in range(WORLD)]


def _read_rank(path: Path) -> dict[str, RankCounts]:
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{path.name}: expected an object of modes")
    return {mode: decode(RankCounts, counts, f"{path.name}.{mode}") for mode, counts in raw.items()}


def _entry(name: str, low: int, high: int, got: int, how: str) -> SizeCheck:
    return SizeCheck(name, high, got, how, PASS if low <= got <= high else FAIL, predicted_low_bytes=low)


def judge_sharding(ranks: list[dict[str, RankCounts]]) -> list[SizeCheck]:
    """Each rank's measurement against the CLI's per-GPU ledgers for the same sharding."""
    cfg = CPU_SIZES[SIZE][0]
    tensors = param_tensors(cfg)
    rows = sum(t.numel // t.shape[0] for t in tensors)        # one row of every tensor: FSDP's dim-0 padding
    biggest = max(t.numel for t in tensors)
    full = estimate_training(cfg, TrainSetup(regime="fp32", seq_len=8)).ledgers
    steps = 4 * len(tensors)                                    # AdamW's host `step` per tensor, here on the CPU
    out: list[SizeCheck] = []
    for mode in MODES:
        cli = estimate_training(cfg, TrainSetup(regime="fp32", sharding=mode, gpus=WORLD, seq_len=8)).ledgers
        for rank, doc in enumerate(ranks):
            m = doc[mode]
            where = f"{mode} rank {rank}"
            if mode == "ddp":
                for ledger in ("weights", "gradients"):
                    value = getattr(cli, ledger)
                    out.append(_entry(f"{where} {ledger}", value, value, getattr(m, ledger), "exact"))
                value = cli.optimizer_state + steps
                out.append(_entry(f"{where} optimizer_state", value, value, m.optimizer_state,
                                  "exact (with the host step counters)"))
            elif mode == "zero1":
                # ZeroRedundancyOptimizer gives each parameter tensor whole to one rank: a rank holds its
                # share give or take the state of the largest tensor.
                share = cli.optimizer_state
                out.append(_entry(f"{where} optimizer_state", 0, share + 8 * biggest + steps, m.optimizer_state,
                                  "the 1/N share, give or take the largest tensor's state"))
                out.append(_entry(f"{where} weights", full.weights, full.weights, m.weights, "exact"))
            else:
                pad = 4 * rows   # fully_shard pads each tensor's dim 0 to a multiple of the world size
                shard_w = -(-full.weights // WORLD)
                out.append(_entry(f"{where} weights (shards)", shard_w, shard_w + pad, m.weights,
                                  "1/N, up to one padding row per tensor"))
                out.append(_entry(f"{where} gradients", cli.gradients, cli.gradients + pad, m.gradients,
                                  "1/N, up to one padding row per tensor"))
                out.append(_entry(f"{where} optimizer_state", cli.optimizer_state, cli.optimizer_state + 2 * pad
                                  + steps, m.optimizer_state, "1/N, up to the padding and host step counters"))
                # What forward leaves gathered beside the shards: FULL_SHARD the root unit; SHARD_GRAD_OP every
                # weight. The CLI's weights ledger is the shard plus that (plus, for FULL_SHARD, the two
                # blocks it gathers while computing, which forward's end has already resharded).
                gathered = cli.weights - shard_w
                if mode == "fsdp-full":
                    gathered -= 2 * 4 * sum(t.numel for t in layer_tensors(cfg, 0))
                out.append(_entry(f"{where} gathered after forward", gathered, gathered + pad,
                                  m.gathered_after_forward, "the CLI's gathered units, up to padding"))
    return out


def run_sharding_verification() -> ShardingSection:
    """The sharding section of `memory --verify --full`: measured modes, and the ones named but not run."""
    try:
        ranks = _run_ranks()
    except (RuntimeError, OSError, ValueError) as exc:
        return ShardingSection(ERROR, str(exc), not_measured=NOT_MEASURED)  # no answer, not a disagreement
    checks = judge_sharding(ranks)
    return ShardingSection(PASS if checks and all(c.status == PASS for c in checks) else FAIL, None,
                           world_size=WORLD, model=SIZE, params=count_params(CPU_SIZES[SIZE][0]).total,
                           modes=MODES, implementation={m: sharding.implementation(m) for m in MODES},
                           checks=tuple(checks), not_measured=NOT_MEASURED, ranks=tuple(ranks))
