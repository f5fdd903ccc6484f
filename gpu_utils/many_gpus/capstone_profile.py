"""The capstone's "profile first" variant (chapter 11, lab 11): a slow training script whose
problems are planted but not named; the learner finds them with ``torch.profiler`` first.

:func:`baseline` writes the script for a seed: three of the six :data:`KINDS` of problem the
chapter teaches, drawn from the seed, planted in an otherwise sound loop (the other three are
written the sound way). :func:`profile` runs a script under ``torch.profiler`` with shapes and
dtypes recorded. The checkers of ``gpu_utils.exercises.ch11_profile`` profile scripts of their
own to judge a learner's diagnosis, and run a learner's fixed script with probes that count what
each problem leaves behind (host synchronisations, items tokenised in the training process,
matmul dtypes, tokens per optimizer step, optimizer code path, block forwards per step), never
its speed.
"""

from __future__ import annotations

import atexit
import gzip
import os
import random
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from . import gpt, training

__all__ = [
    "BATCH",
    "KINDS",
    "LR",
    "MODEL",
    "SEQ_LEN",
    "SMALL_BATCH",
    "WEIGHT_DECAY",
    "Script",
    "TokenizingDataset",
    "add_input_dtypes",
    "baseline",
    "build_model",
    "device",
    "planted",
    "profile",
    "script",
    "tokens_per_step",
]

#: The kinds of problem a script can have (the names a diagnosis uses), each taught in chapter 11:
#: "loader": a DataLoader that tokenises every item in Python, in the training process (sec. 2);
#: "host_sync": the loss read back to the host (``.item()``) every step (sec. 1);
#: "fp32": no autocast, so every matmul runs in fp32 (sec. 4);
#: "small_batch": a batch far too small to keep a processor busy (sec. 3);
#: "optimizer_loop": AdamW stepped one parameter at a time, ``foreach=False`` (lab 11);
#: "recompute": activation checkpointing switched on though memory is ample (sec. 5).
KINDS = ("loader", "host_sync", "fp32", "small_batch", "optimizer_loop", "recompute")
#: How many kinds a seed plants.
N_PLANTED = 3

MODEL = {"seq_len": 32, "d_model": 32, "n_layers": 2, "n_heads": 2}
SEQ_LEN = MODEL["seq_len"]
LR = 3e-3
#: The scripts' AdamW weight decay.
WEIGHT_DECAY = 0.01
#: The batch the script is meant to train with, and the planted one.
BATCH, SMALL_BATCH = 16, 2
#: Passes of the per-item tokeniser over each window (stands in for heavier preprocessing).
TOKENIZE_REPEAT = 2000


def planted(seed: int) -> frozenset[str]:
    """The kinds of problem planted in the script of ``seed`` (three of :data:`KINDS`)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    return frozenset(random.Random(seed).sample(KINDS, N_PLANTED))


def device() -> torch.device:
    """Where the scripts train: the GPU when PyTorch sees one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model() -> gpt.GPT:
    """The capstone's model (chapter 11's ``gu.gpt`` GPT, 2 layers of width 32), seed 0."""
    return gpt.build(seed=0, **MODEL)


class TokenizingDataset(training.SlowTokenizingDataset):
    """Windows of ``SEQ_LEN`` bytes tokenised in Python on every access (chapter 11's
    ``SlowTokenizingDataset`` with the script's sizes)."""

    def __init__(self, text: str, seq_len: int = SEQ_LEN, repeat: int = TOKENIZE_REPEAT) -> None:
        super().__init__(text, seq_len, repeat=repeat)


# --- writing a script -------------------------------------------------------------------------


def _source(kinds: frozenset[str], workers: int = 0) -> str:
    batch = SMALL_BATCH if "small_batch" in kinds else BATCH
    foreach = "False" if "optimizer_loop" in kinds else "True"
    lines = [
        "def train(text, steps):",
        "    device = capstone_profile.device()",
        "    model = capstone_profile.build_model().to(device)",
        "    optimizer = torch.optim.AdamW(",
        f"        model.parameters(), lr=capstone_profile.LR, weight_decay={WEIGHT_DECAY}, "
        f"foreach={foreach}",
        "    )",
    ]
    if "loader" in kinds:
        lines += [
            "    loader = torch.utils.data.DataLoader(",
            "        capstone_profile.TokenizingDataset(text),",
            f"        batch_size={batch},",
            "        shuffle=True,",
            "        generator=torch.Generator().manual_seed(0),",
            "    )",
            "    batches = iter(loader)",
        ]
        fetch = "next(batches)"
    elif workers:  # sound: tokenised once, batches cut by worker processes
        lines += [
            "    loader = torch.utils.data.DataLoader(",
            "        T.WindowDataset(T.encode(text), capstone_profile.SEQ_LEN),",
            f"        batch_size={batch},",
            "        shuffle=True,",
            "        generator=torch.Generator().manual_seed(0),",
            f"        num_workers={workers},",
            "    )",
            "    batches = iter(loader)",
        ]
        fetch = "next(batches)"
    else:
        lines += [
            "    data = T.encode(text)  # tokenised once",
            "    generator = torch.Generator().manual_seed(0)",
        ]
        fetch = f"T.get_batch(data, {batch}, capstone_profile.SEQ_LEN, generator)"
    lines += ["    losses = []", "    for step in range(steps):"]
    lines += [f"        x, y = {fetch}", "        x, y = x.to(device), y.to(device)"]
    forward = (
        "_, loss = T.forward_checkpointed(model, x, y)"
        if "recompute" in kinds
        else "_, loss = model(x, y)"
    )
    if "fp32" in kinds:
        lines += [f"        {forward}"]
    else:
        lines += [
            "        with torch.autocast(device.type, dtype=torch.bfloat16):",
            f"            {forward}",
        ]
    lines += [
        "        loss.backward()",
        "        optimizer.step()",
        "        optimizer.zero_grad()",
    ]
    if "host_sync" in kinds:
        lines += ["        losses.append(loss.item())", "    return losses"]
    else:
        lines += ["        losses.append(loss.detach())", "    return torch.stack(losses).tolist()"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Script:
    """A training script: ``train(text, steps) -> list of losses``, and its source text."""

    name: str
    source: str
    train: Callable[[str, int], list[float]]
    #: The planted kinds (the checkers' knowledge; a lab shows the source, not this).
    kinds: frozenset[str]

    def __repr__(self) -> str:
        return f"Script({self.name!r})"


def script(kinds: Iterable[str], name: str = "script", workers: int = 0) -> Script:
    """The training script with exactly ``kinds`` planted (any subset of :data:`KINDS`). With
    ``workers`` > 0 and "loader" not planted, the sound script feeds its batches through a
    DataLoader with that many worker processes, over windows tokenised once (a DataLoader is
    not a problem in itself: tokenising in the training process is)."""
    kinds = frozenset(kinds)
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; known: {', '.join(KINDS)}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be a whole number >= 0, not {workers!r}")
    import linecache

    from . import capstone_profile

    source = _source(kinds, workers)
    filename = f"<capstone_profile {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "T": training, "capstone_profile": capstone_profile}
    exec(compile(source, filename, "exec"), namespace)
    return Script(name, source, namespace["train"], kinds)


def baseline(seed: int) -> Script:
    """The script of ``seed``: :func:`planted` (seed) planted, not named."""
    return script(planted(seed), name=f"seed {seed}")


def profile(train: Callable[[str, int], object], steps: int = 3, text: str | None = None):
    """Run ``train(text, steps)`` under ``torch.profiler`` (CPU activity, and CUDA on a GPU)
    with input shapes and dtypes recorded; return the stopped profiler (``key_averages()``,
    ``events()``, each with ``.input_dtypes`` on every supported torch: :func:`add_input_dtypes`,
    ``export_chrome_trace(path)``). ``text`` defaults to the chapter's corpus."""
    text = training.corpus() if text is None else text
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with warnings.catch_warnings(), training.quiet_profiler_log():
        # torch 2.11 (not 2.13) warns once that a profiler without a schedule "clears events at
        # the end of each cycle": this one has one cycle, and the warning would show above it.
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            train(text, steps)
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
    add_input_dtypes(prof)
    _repeatable_export(prof)
    return prof


def _repeatable_export(prof) -> None:
    """Let ``prof.export_chrome_trace(path)`` run more than once: torch's kineto results save a
    trace once ("Trace is already saved" the second time), so a diagnose cell that exports the
    trace would fail when run again on the same profile (and a checker that hands one profile
    to every check of a process would refuse a right answer). The first call saves the trace
    to a private file; every call copies it to ``path`` (gzipped when ``path`` ends in .gz)."""
    real = prof.export_chrome_trace
    saved: list[str] = []

    def export_chrome_trace(path: str, use_python_export: bool = False) -> None:
        if not saved:
            handle, first = tempfile.mkstemp(suffix=".json", prefix="gpu-course-trace-")
            os.close(handle)
            atexit.register(lambda: os.path.exists(first) and os.remove(first))
            real(first, use_python_export=use_python_export)
            saved.append(first)
        path = os.fspath(path)
        if path.endswith(".gz"):
            with open(saved[0], "rb") as source, gzip.open(path, "wb") as target:
                shutil.copyfileobj(source, target)
        else:
            shutil.copyfile(saved[0], path)

    prof.export_chrome_trace = export_chrome_trace


def add_input_dtypes(prof) -> None:
    """Give every event of a stopped ``record_shapes=True`` profiler ``.input_dtypes``.

    torch 2.13 builds each ``FunctionEvent`` with ``input_dtypes``; torch 2.11 (Colab; 2.10, the
    CUDA 12 lock, the same) does not, although its profiler records them too, on its raw events
    (``_KinetoEvent.dtypes()``, the "Input type" of ``export_chrome_trace``). There they are
    copied onto the events, matched by thread, start, end and name as torch's own
    ``_parse_kineto_results`` builds them from the same raw events, so that lab 11 reads
    ``event.input_dtypes`` on every supported torch. An event left unmatched gets ``[]``.
    (Raw dtypes: pytorch/pytorch#55358, 2021; copied onto events: #179714, April 2026.)
    """
    events = prof.events()
    if not events or hasattr(events[0], "input_dtypes"):
        return
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    found: dict[tuple, list[str]] = {}
    if results is not None:
        start = results.trace_start_ns()
        for raw in results.events():
            key = (
                raw.start_thread_id(),
                (raw.start_ns() - start) / 1000,
                (raw.end_ns() - start) / 1000,
                raw.name(),
            )
            found.setdefault(key, list(raw.dtypes()))
    for event in events:
        key = (event.thread, event.time_range.start, event.time_range.end, event.trace_name)
        event.input_dtypes = found.get(key, [])


def tokens_per_step(train: Callable[[str, int], object], text: str | None = None) -> int:
    """Tokens a script's one training step feeds the model: ``train(text, 1)`` run once while a
    hook counts the token ids the model embeds (every forward pass embeds its tokens once)."""
    text = training.corpus() if text is None else text
    seen = [0]

    def count(module, args):
        vocab = isinstance(module, torch.nn.Embedding) and module.num_embeddings == 256
        if vocab and args and torch.is_grad_enabled():
            seen[0] += args[0].numel()

    from torch.nn.modules.module import register_module_forward_pre_hook

    handle = register_module_forward_pre_hook(count)
    try:
        train(text, 1)
    finally:
        handle.remove()
    return seen[0]
