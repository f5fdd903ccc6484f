"""Chapter 11's training loop as a script, for data parallelism under ``torchrun``.

    python -m torch.distributed.run --nproc-per-node 2 -m gpu_utils.train_script --steps 20

(``torchrun`` is the same program.) On several nodes, run the same line on each node with
``--nnodes N --node-rank R --rdzv-backend c10d --rdzv-endpoint HOST:PORT``. Without torchrun
(no ``RANK`` in the environment) it runs as one process.

Every rank builds the same model (same seed). The data is sharded as PyTorch's
``DistributedSampler`` shards it (:class:`ShardedWindows`): the corpus is cut into
non-overlapping windows of ``seq_len + 1`` tokens, every epoch shuffles them with the same seed on
every rank, and rank r reads windows r, r + N, r + 2N, ... of that order, ``batch_size`` at a
time; the tail that does not fill a step on every rank is dropped. So at each step the N ranks
together read exactly the ``N * batch_size`` windows one process with ``N * batch_size`` reads,
DistributedDataParallel averages the gradients, and N ranks train like one process (up to the
order of floating-point additions), which the tests check. Which windows a step reads depends
only on the step's number (``state_dict()`` is ``{"step": ...}``), so a run resumed at step k
reads what an uninterrupted run reads from step k on.

On a GPU each process first calls ``torch.cuda.set_device(LOCAL_RANK)``, so that NCCL and every
allocation use its own GPU. The notebook runs :func:`train` itself under ``gu.dist``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, fields

import torch
import torch.distributed as dist

from . import gpt, training


class ShardedWindows:
    """This rank's batches of a token tensor, as ``DistributedSampler`` would give them.

    ``batch(step)`` returns ``(x, y)``: ``batch_size`` windows of ``seq_len`` tokens and their
    targets shifted by one. ``len(data) - 1`` tokens make ``(len(data) - 1) // seq_len`` windows;
    an epoch is ``windows // (world_size * batch_size)`` steps; epoch e shuffles the windows
    with a generator seeded ``seed + e`` (``DistributedSampler.set_epoch``), and rank r keeps
    every ``world_size``-th window from r on. Resumable: the state is the next step's number.
    """

    def __init__(
        self,
        data: torch.Tensor,
        seq_len: int,
        batch_size: int,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
    ) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not one of the {world_size} ranks")
        self.data, self.seq_len, self.batch_size = data, seq_len, batch_size
        self.rank, self.world_size, self.seed = rank, world_size, seed
        self.windows = (len(data) - 1) // seq_len
        self.steps_per_epoch = self.windows // (world_size * batch_size)
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"{len(data)} tokens make {self.windows} windows of {seq_len}: fewer than one "
                f"step of {world_size} ranks x {batch_size}; use a smaller batch or seq_len"
            )
        self.step = 0
        self._epoch, self._order = -1, None

    def indices(self, step: int) -> torch.Tensor:
        """The window numbers this rank reads at ``step``."""
        epoch, position = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(self.seed + epoch)
            order = torch.randperm(self.windows, generator=generator)
            used = self.steps_per_epoch * self.world_size * self.batch_size  # drop the tail
            self._epoch, self._order = epoch, order[:used][self.rank :: self.world_size]
        return self._order[position * self.batch_size : (position + 1) * self.batch_size]

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        starts = self.indices(step) * self.seq_len
        window = self.data[starts[:, None] + torch.arange(self.seq_len + 1)]
        return window[:, :-1], window[:, 1:]

    def __iter__(self):
        while True:
            x, y = self.batch(self.step)
            self.step += 1
            yield x, y

    def state_dict(self) -> dict:
        return {"step": self.step}

    def load_state_dict(self, state: dict) -> None:
        self.step = int(state["step"])


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
    """This process's GPU (``LOCAL_RANK``, made the current device) under NCCL or alone, else
    the CPU (gloo with CPU tensors)."""
    if torch.cuda.is_available() and (not dist.is_initialized() or dist.get_backend() == "nccl"):
        local = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
        torch.cuda.set_device(local)  # NCCL and every allocation on this rank's own GPU
        return torch.device("cuda", local)
    return torch.device("cpu")


def train(rank: int, world_size: int, config: Config) -> dict:
    """Train for ``config.steps`` steps as rank ``rank`` of ``world_size`` (a process group must
    exist when ``world_size > 1``), reading its own shard of the data (:class:`ShardedWindows`).
    Returns the mean loss over all ranks at every step, a checksum of the final weights, and
    this rank's tokens/s."""
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
    batches = iter(
        ShardedWindows(data, config.seq_len, config.batch_size, rank, world_size, config.seed)
    )  # this rank's shard only
    losses = []
    start = time.perf_counter()
    for _ in range(config.steps):
        x, y = next(batches)
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


def _exit_without_teardown() -> None:
    """End a torchrun rank without the interpreter's teardown.

    After the last collective, a gloo worker thread can still hold that collective's tensors; if
    it frees them while the interpreter is shutting down it cannot take the GIL, and the process
    aborts ("terminate called without an active exception", SIGABRT), so torchrun reports a
    failed run after a correct one. ``destroy_process_group`` does not prevent it, nor does a
    ``barrier`` before it (torch 2.13, gloo, 2 ranks on a 2-core machine: 10 aborts in 80 runs
    with the first alone, 2 in 117 with both); PyTorch tracks the race as
    pytorch/pytorch#190489. Everything is written and flushed by now, so ``os._exit`` skips only
    that teardown (``gu.dist`` does the same)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def script() -> None:
    """``python -m gpu_utils.train_script`` (under ``torchrun``): train, then leave at once when
    there are several ranks (:func:`_exit_without_teardown`)."""
    main()
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        _exit_without_teardown()


if __name__ == "__main__":
    script()
