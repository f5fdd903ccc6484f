"""The capstone's slow training script (chapter 11, lab 11): the baseline the learner makes fast.

It tokenises in Python on every item with one loader process, materialises the softmax of the
full logits to take its log, steps an unfused optimizer (a Python loop over parameters), computes
in fp32 everywhere, uses a tiny batch and reads the loss back to the host every step. The lab
shows these pieces and builds its variants from them; the checkers of
``gpu_utils.exercises.ch11_training`` compare the learner's fixes with them. :func:`device` is where
the lab's variants run: the GPU when PyTorch sees one, else the CPU.
"""

from __future__ import annotations

import torch

from . import gpt, training

__all__ = [
    "LR",
    "MODEL",
    "SEQ_LEN",
    "TINY_BATCH",
    "WEIGHT_DECAY",
    "baseline_loader",
    "baseline_loss",
    "baseline_optimizer",
    "baseline_step",
    "baseline_train",
    "device",
]

#: The capstone's model: small enough to train on a 2-core CPU in seconds.
MODEL = {"seq_len": 32, "d_model": 32, "n_layers": 2, "n_heads": 2}
SEQ_LEN = MODEL["seq_len"]
LR = 3e-3
WEIGHT_DECAY = 0.01
#: The baseline's batch: far too small to keep any processor busy.
TINY_BATCH = 4


def baseline_loader(
    text: str,
    batch_size: int = TINY_BATCH,
    seq_len: int = SEQ_LEN,
    seed: int = 0,
):
    """Tokenises every item in Python, in the training process itself (num_workers=0)."""
    dataset = training.SlowTokenizingDataset(text, seq_len, repeat=4)
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
        num_workers=0,
    )


def baseline_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy the long way: a full (batch, seq, vocab) softmax kept for backward, then
    log."""
    probs = torch.softmax(logits.float(), dim=-1)
    picked = probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -torch.log(picked).mean()


def baseline_optimizer(params, lr: float = LR) -> torch.optim.Optimizer:
    """AdamW stepped one parameter at a time (foreach=False: a Python loop over the tensors)."""
    return torch.optim.AdamW(params, lr=lr, weight_decay=WEIGHT_DECAY, foreach=False)


def baseline_step(model, optimizer, x, y, loss_fn=baseline_loss) -> torch.Tensor:
    """One step in fp32."""
    logits, _ = model(x)
    loss = loss_fn(logits, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def baseline_train(text: str, steps: int = 30, seed: int = 0) -> list[float]:
    """The whole slow script: every planted problem at once. Returns the loss of every step."""
    model = gpt.build(seed=seed, **MODEL)
    optimizer = baseline_optimizer(model.parameters())
    losses = []
    for _, (x, y) in zip(range(steps), baseline_loader(text, seed=seed), strict=False):
        loss = baseline_step(model, optimizer, x, y)
        losses.append(loss.item())  # the host waits for the device here, every step
    return losses


def device() -> torch.device:
    """Where the lab's variants train and are timed: the GPU when PyTorch sees one, else the CPU
    (asked when called, not at import: importing this module initialises no CUDA)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
