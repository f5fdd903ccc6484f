"""Chapter 11's training loop as a script, for data parallelism under ``torchrun``.

    python -m torch.distributed.run --nproc-per-node 2 -m gpu_utils.train_script --steps 20

(``torchrun`` is the same program.) On several nodes, run the same line on each node with
``--nnodes N --node-rank R --rdzv-backend c10d --rdzv-endpoint HOST:PORT``. Without torchrun
(no ``RANK`` in the environment) it runs as one process.

Every rank builds the same model (same seed) and draws the same *global* batch of
``world_size * batch_size`` windows, then keeps its own slice; DistributedDataParallel averages
the gradients, so N ranks with ``batch_size`` each train exactly like one process with
``N * batch_size`` (up to the order of floating-point additions), which the tests check.
The notebook runs :func:`train` itself under ``gu.dist``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, fields

import torch
import torch.distributed as dist

from . import gpt, training


@dataclass(frozen=True)
class Config:
    """A run: ``batch_size`` is per rank; the global batch is ``world_size * batch_size``."""

    steps: int = 20
    batch_size: int = 8
    seq_len: int = 32
    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    lr: float = 3e-3
    seed: int = 0


def _device() -> torch.device:
    if torch.cuda.is_available() and (not dist.is_initialized() or dist.get_backend() == "nccl"):
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return torch.device("cpu")


def train(rank: int, world_size: int, config: Config) -> dict:
    """Train for ``config.steps`` steps as rank ``rank`` of ``world_size`` (a process group must
    exist when ``world_size > 1``). Returns the mean loss over all ranks at every step, a checksum
    of the final weights, and this rank's tokens/s."""
    device = _device()
    data = training.encode(training.corpus())  # stays in host memory; batches travel
    model = gpt.build(
        seed=config.seed,
        seq_len=config.seq_len,
        d_model=config.d_model,
        n_layers=config.n_layers,
        n_heads=config.n_heads,
    ).to(device)
    net = model
    if world_size > 1:
        net = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)  # the same draws on every rank
    mine = slice(rank * config.batch_size, (rank + 1) * config.batch_size)
    losses = []
    start = time.perf_counter()
    for _ in range(config.steps):
        x, y = training.get_batch(data, world_size * config.batch_size, config.seq_len, generator)
        x, y = x[mine], y[mine]
        if device.type == "cuda":  # pinned host memory lets the copy run asynchronously
            x, y = (
                x.pin_memory().to(device, non_blocking=True),
                y.pin_memory().to(device, non_blocking=True),
            )
        _, loss = net(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())  # no .item(): no host synchronisation inside the loop
    curve = torch.stack(losses)
    if world_size > 1:
        dist.all_reduce(curve)  # one collective for the whole curve, after the loop
        curve /= world_size
    seconds = time.perf_counter() - start  # the all_reduce above waited for the device
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    return {
        "rank": rank,
        "world_size": world_size,
        "losses": curve.cpu().tolist(),
        "checksum": checksum,
        "tokens_per_s": config.steps * config.batch_size * config.seq_len / seconds,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m gpu_utils.train_script", description=__doc__)
    for field in fields(Config):
        parser.add_argument(
            f"--{field.name.replace('_', '-')}", type=type(field.default), default=field.default
        )
    parser.add_argument("--out", help="rank 0 writes its result here as JSON")
    args = parser.parse_args(argv)
    config = Config(**{f.name: getattr(args, f.name) for f in fields(Config)})
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    if world_size > 1:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)  # torchrun set MASTER_ADDR, MASTER_PORT, RANK, ...
    try:
        result = train(rank, world_size, config)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    if rank == 0:
        result["config"] = asdict(config)
        print(json.dumps(result))
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f)
    return result


if __name__ == "__main__":
    main()
