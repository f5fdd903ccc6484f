"""Training in practice (chapter 11): a corpus, the data pipeline, and honest throughput numbers.

- The corpus is text that ships with Python itself, read at run time from the installed
  interpreter: the Zen of Python and the docstrings of a fixed list of standard-library modules.
  Tokens are bytes (vocabulary 256), so nothing is downloaded and nothing large ships with the
  course. A different Python version has slightly different docstrings, so losses differ in
  their last digits between machines; everything is seeded and deterministic on one machine.
- The data pipeline: :func:`get_batch` (vectorised random windows of a pre-tokenised tensor),
  :class:`WindowDataset` for a ``DataLoader``, :class:`SlowTokenizingDataset` (tokenises in
  Python on every item: the input-bound pipeline of the chapter), and sequence packing
  (:func:`pack` vs :func:`pad_documents`).
- Timing: :func:`measure` times a training step the way chapter 00 times a kernel (warm-up,
  repeats, median and quartiles; the device synchronised at the end of each timed group of
  steps, never inside it), and :func:`compare` interleaves several variants so that a busy
  machine slows them all alike. :func:`speedup_table` and :func:`plot_speedups` report ratios.
- Memory on a CPU: :func:`saved_tensor_bytes` counts the bytes autograd keeps for the backward
  pass (the activations), exactly, through ``torch.autograd.graph.saved_tensors_hooks``.
- :func:`noise_scale`: the simple gradient noise scale of McCandlish et al. 2018, "An Empirical
  Model of Large-Batch Training", appendix A.1, from gradients at two batch sizes.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch

__all__ = [
    "MODULES",
    "OutOfMemory",
    "SlowTokenizingDataset",
    "Throughput",
    "WindowDataset",
    "bytes_or_oom",
    "compare",
    "corpus",
    "decode",
    "documents",
    "encode",
    "fits",
    "forward_checkpointed",
    "get_batch",
    "measure",
    "noise_scale",
    "pack",
    "pad_documents",
    "plot_speedups",
    "profile_table",
    "progress",
    "quiet_profiler_log",
    "saved_tensor_bytes",
    "speedup_table",
    "split",
]

#: Standard-library modules whose docstrings make the corpus (about 60 KB on Python 3.11).
MODULES = (
    "json",
    "textwrap",
    "string",
    "functools",
    "itertools",
    "collections",
    "heapq",
    "bisect",
    "statistics",
    "random",
    "fractions",
    "dataclasses",
    "contextlib",
    "pathlib",
    "csv",
)
#: The byte that separates packed documents (ASCII "record separator"; absent from the text).
SEP = 0x1E


# --- the corpus -------------------------------------------------------------------------------


def _zen() -> str:
    with contextlib.redirect_stdout(io.StringIO()):  # `import this` prints the Zen once
        this = importlib.import_module("this")
    return "".join(this.d.get(c, c) for c in this.s)  # it is stored rot13-encoded


def documents(modules: Iterable[str] = MODULES) -> list[str]:
    """The Zen of Python, then each module's docstring and those of its public names."""
    docs = [_zen()]
    for name in modules:
        module = importlib.import_module(name)
        docs.append(inspect.getdoc(module) or "")
        for attr, obj in sorted(vars(module).items()):
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            doc = inspect.getdoc(obj)
            if doc:
                docs.append(f"{attr}: {doc}")
    return [d for d in docs if d]


def corpus(modules: Iterable[str] = MODULES) -> str:
    """All of :func:`documents`, separated by blank lines."""
    return "\n\n".join(documents(modules))


def encode(text: str) -> torch.Tensor:
    """Byte-level tokens (int64, values 0..255) of ``text`` encoded as UTF-8."""
    return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8).long()


def decode(tokens: torch.Tensor | Iterable[int], errors: str = "replace") -> str:
    """Text from byte tokens. A byte-level model can sample bytes that are not valid UTF-8 (a
    multi-byte character cut short, a stray continuation byte): ``errors="replace"`` shows each
    as U+FFFD, ``errors="ignore"`` drops them (what a generated sample should print)."""
    values = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    return bytes(values).decode("utf-8", errors=errors)


def split(data: torch.Tensor, val_fraction: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """The first (1 - val_fraction) of the tokens for training, the rest for validation."""
    n = int(len(data) * (1 - val_fraction))
    return data[:n], data[n:]


# --- the data pipeline ------------------------------------------------------------------------


def get_batch(
    data: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of ``seq_len`` tokens and their targets, shifted by one.

    One gather for the whole batch: ``x[i, t] = data[start_i + t]``, ``y[i, t] = data[start_i + t + 1]``.
    """
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=generator)
    index = starts[:, None] + torch.arange(seq_len + 1)
    window = data[index]
    return window[:, :-1], window[:, 1:]


class WindowDataset(torch.utils.data.Dataset):
    """Item i: the window of ``seq_len`` tokens starting at token i, and its shifted targets."""

    def __init__(self, data: torch.Tensor, seq_len: int) -> None:
        self.data, self.seq_len = data, seq_len

    def __len__(self) -> int:
        return len(self.data) - self.seq_len

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        window = self.data[i : i + self.seq_len + 1]
        return window[:-1], window[1:]


class SlowTokenizingDataset(torch.utils.data.Dataset):
    """The same items as :class:`WindowDataset`, but tokenised from the text on every access,
    one character at a time in Python, as a naive pipeline does (``repeat`` passes over the
    window stand in for heavier preprocessing such as normalisation).
    """

    def __init__(self, text: str, seq_len: int, repeat: int = 1) -> None:
        self.bytes, self.seq_len, self.repeat = text.encode("utf-8"), seq_len, repeat

    def __len__(self) -> int:
        return len(self.bytes) - self.seq_len

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        for _ in range(self.repeat):
            tokens = [int(b) for b in self.bytes[i : i + self.seq_len + 1]]
        window = torch.tensor(tokens)
        return window[:-1], window[1:]


def _pieces(docs: list[str], seq_len: int) -> list[list[int]]:
    """Each document's tokens cut into pieces of at most ``seq_len + 1`` (inputs plus targets)."""
    out = []
    for doc in docs:
        tokens = list(doc.encode("utf-8"))
        out += [tokens[i : i + seq_len + 1] for i in range(0, max(len(tokens) - 1, 1), seq_len)]
    return out


def pad_documents(docs: list[str], seq_len: int, pad: int = 0) -> tuple[torch.Tensor, float]:
    """No packing: one row per document piece, padded to ``seq_len + 1`` tokens.

    Returns (rows, the fraction of the rows' tokens that are padding, i.e. wasted compute).
    """
    pieces = _pieces(docs, seq_len)
    rows = torch.tensor([p + [pad] * (seq_len + 1 - len(p)) for p in pieces])
    wasted = sum(seq_len + 1 - len(p) for p in pieces)
    return rows, wasted / rows.numel()


def pack(docs: list[str], seq_len: int, sep: int = SEP) -> torch.Tensor:
    """Sequence packing: documents joined by ``sep`` into one stream, cut into rows of
    ``seq_len + 1`` tokens with no padding (the last, incomplete row is dropped)."""
    stream = encode(chr(sep).join(docs))
    rows = len(stream) // (seq_len + 1)
    return stream[: rows * (seq_len + 1)].view(rows, seq_len + 1)


# --- honest timing ----------------------------------------------------------------------------


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


@dataclass(frozen=True)
class Throughput:
    """Seconds per step (one value per timed group of steps) and the tokens one step processes."""

    label: str
    tokens_per_step: int
    step_times: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.step_times)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.median

    @property
    def spread(self) -> tuple[float, float]:
        """Tokens/s at the slowest and fastest quartile of the repeats."""
        if len(self.step_times) < 2:
            return (self.tokens_per_s, self.tokens_per_s)
        q1, _, q3 = statistics.quantiles(self.step_times, n=4)
        return (self.tokens_per_step / q3, self.tokens_per_step / q1)

    def __str__(self) -> str:
        low, high = self.spread
        return (
            f"{self.label}: {self.tokens_per_s:,.0f} tokens/s (median of {len(self.step_times)} "
            f"groups; quartiles {low:,.0f}-{high:,.0f}), {self.median * 1e3:.1f} ms/step"
        )

    __repr__ = __str__


def _time_group(step: Callable[[], object], steps: int) -> float:
    _sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync()  # the device's queued work is part of the steps: wait for it before reading the clock
    return (time.perf_counter() - start) / steps


def measure(
    step: Callable[[], object],
    *,
    tokens_per_step: int,
    warmup: int = 2,
    repeat: int = 5,
    steps_per_repeat: int = 1,
    label: str = "step",
) -> Throughput:
    """Tokens/s of ``step()``: ``warmup`` untimed steps (compilation, allocator, caches), then
    ``repeat`` groups of ``steps_per_repeat`` steps, each group timed between synchronisations."""
    for _ in range(warmup):
        step()
    times = tuple(_time_group(step, steps_per_repeat) for _ in range(repeat))
    return Throughput(label, tokens_per_step, times)


def compare(
    steps: Mapping[str, tuple[Callable[[], object], int]],
    *,
    warmup: int = 2,
    repeat: int = 5,
    steps_per_repeat: int = 1,
) -> dict[str, Throughput]:
    """:func:`measure` for several ``label: (step, tokens_per_step)`` variants, interleaved
    (round r times every variant once), so a machine that gets busier slows them all alike."""
    for step, _ in steps.values():
        for _ in range(warmup):
            step()
    times: dict[str, list[float]] = {label: [] for label in steps}
    for _ in range(repeat):
        for label, (step, _) in steps.items():
            times[label].append(_time_group(step, steps_per_repeat))
    return {
        label: Throughput(label, tokens, tuple(times[label]))
        for label, (_, tokens) in steps.items()
    }


#: What profile_table can sort by: attributes of ``prof.key_averages()``'s rows.
PROFILE_SORTS = ("cpu_time_total", "self_cpu_time_total", "count", "device_time_total")


def profile_table(prof, sort_by: str = "cpu_time_total", row_limit: int = 12) -> str:
    """``prof.key_averages().table(sort_by=..., row_limit=...)`` in at most 100 characters a line.

    torch's table has six fixed columns of 14 characters (twelve more with a GPU) beside the
    name, 134 characters with a 50-character name: a browser window of 1366 pixels wraps it
    mid-number. This one keeps the columns the course reads: calls, CPU total (with what an
    operation called), self CPU (without), its share of the total self CPU, and on a GPU the
    device time, written as torch writes them; the name is cut, as torch cuts it, with "...".
    """
    if sort_by not in PROFILE_SORTS:
        raise ValueError(f"sort_by must be one of {', '.join(PROFILE_SORTS)}, not {sort_by!r}")
    if not isinstance(row_limit, int) or row_limit < 1:
        raise ValueError(f"row_limit must be a whole number of rows >= 1, not {row_limit!r}")
    rows = list(prof.key_averages())
    device = any(getattr(r, "device_time_total", 0) > 0 for r in rows)
    total = sum(r.self_cpu_time_total for r in rows) or 1.0
    rows.sort(key=lambda r: getattr(r, sort_by, 0), reverse=True)
    columns = ["# of Calls", "CPU total", "Self CPU", "Self CPU %"] + (["Device"] if device else [])
    width = 100 - 12 * len(columns)

    def name(key: str) -> str:
        return key if len(key) <= width else key[: width - 3] + "..."

    def ms(us: float) -> str:  # as torch's table writes a time
        return (
            f"{us / 1e6:.3f}s" if us >= 1e6 else f"{us / 1e3:.3f}ms" if us >= 1e3 else f"{us:.3f}us"
        )

    lines = [f"{'Name':<{width}}" + "".join(f"{c:>12}" for c in columns)]
    lines.append("-" * len(lines[0]))
    for r in rows[:row_limit]:
        cells = [str(r.count), ms(r.cpu_time_total), ms(r.self_cpu_time_total)]
        cells.append(f"{r.self_cpu_time_total / total:.2%}")
        if device:
            cells.append(ms(r.device_time_total))
        lines.append(f"{name(r.key):<{width}}" + "".join(f"{c:>12}" for c in cells))
    lines.append("-" * len(lines[0]))
    lines.append(f"Self CPU time total: {ms(total)}")
    return "\n".join(lines)


def speedup_table(results: Mapping[str, Throughput], baseline: str) -> str:
    """A text table: tokens/s of each variant and its ratio to ``baseline`` (same run, same machine)."""
    base = results[baseline].tokens_per_s
    width = max(len(label) for label in results)
    lines = [f"{'variant':<{width}}  {'tokens/s':>10}  {'vs ' + baseline:>12}"]
    for label, result in results.items():
        ratio = result.tokens_per_s / base
        lines.append(f"{label:<{width}}  {result.tokens_per_s:>10,.0f}  {ratio:>11.2f}x")
    return "\n".join(lines)


def plot_speedups(results: Mapping[str, Throughput], baseline: str, ax=None, title: str = ""):
    """Horizontal bars of the speed-up over ``baseline``, with the quartile range as error bars."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 * len(results) + 1.2))
    base = results[baseline].tokens_per_s
    labels = list(results)
    ratios = [results[k].tokens_per_s / base for k in labels]
    low = [r - results[k].spread[0] / base for k, r in zip(labels, ratios, strict=True)]
    high = [results[k].spread[1] / base - r for k, r in zip(labels, ratios, strict=True)]
    ax.barh(labels, ratios, xerr=[low, high], color="tab:blue", capsize=3)
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.invert_yaxis()
    ax.set_xlabel(f"speed-up over '{baseline}' (tokens/s ratio, same run)")
    ax.set_title(title)
    return ax


# --- the training loop's faces ----------------------------------------------------------------


class _TextBar:
    """A minimal stand-in for tqdm (used only when tqdm is not installed): a line on stdout."""

    def __init__(self, iterable, total: int | None = None, desc: str = "") -> None:
        self.iterable, self.desc, self.postfix = iterable, desc, ""
        self.total = total if total is not None else len(iterable)

    def set_postfix(self, **values) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def __iter__(self):
        start = time.perf_counter()
        for i, item in enumerate(self.iterable, 1):
            yield item
            if i == self.total or i % max(1, self.total // 20) == 0:
                bar = "#" * (20 * i // self.total)
                rate = i / (time.perf_counter() - start)
                print(
                    f"\r{self.desc} [{bar:<20}] {i}/{self.total} {rate:.1f} it/s {self.postfix}",
                    end="",
                    file=sys.stdout,
                    flush=True,
                )
        print(file=sys.stdout)


def _in_notebook_with_widgets() -> bool:
    """True inside a Jupyter kernel (not a terminal IPython) where ipywidgets can be imported."""
    shell = sys.modules.get("IPython")
    shell = shell.get_ipython() if shell is not None else None
    if shell is None or "IPKernelApp" not in getattr(shell, "config", {}):
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def progress(iterable, total: int | None = None, desc: str = ""):
    """A progress bar over ``iterable``: tqdm's notebook widget inside Jupyter when ipywidgets is
    installed; elsewhere tqdm's text bar, or a plain text bar without tqdm. The text forms print to
    stdout, so that a notebook without widgets does not show them as an error (stderr) box."""
    try:
        if _in_notebook_with_widgets():
            from tqdm.notebook import tqdm

            return tqdm(iterable, total=total, desc=desc)
        from tqdm import tqdm
    except ImportError:
        return _TextBar(iterable, total, desc)
    return tqdm(iterable, total=total, desc=desc, mininterval=0.5, file=sys.stdout)


#: The lines kineto (torch.profiler's C++ library) writes to the process's stderr when a profile
#: starts and stops, e.g. "USDT:2026-11-24 03:00:15 3583:3583 SyncActivityProfilerHandler.cpp:52]
#: profiler_start": bookkeeping, not errors.
_KINETO_LINE = re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \w+\.cpp:\d+\] ")


@contextlib.contextmanager
def quiet_profiler_log():
    """Hide kineto's start/stop lines while a ``torch.profiler.profile`` runs inside this block.

    They go to file descriptor 2 (written by C++, not through ``sys.stderr``), which Jupyter shows
    in a pink box as if something had failed. The block's fd-2 output is collected in a temporary
    file; every line that is not one of kineto's bookkeeping lines is written on to ``sys.stderr``
    afterwards, so a real warning or error still shows.
    """
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
            kept = [line for line in text.splitlines(True) if not _KINETO_LINE.match(line)]
            if kept:
                sys.stderr.write("".join(kept))


def forward_checkpointed(model, idx: torch.Tensor, targets: torch.Tensor, kept: list | None = None):
    """``model(idx, targets)`` for a ``gu.gpt.GPT`` with every block under activation
    checkpointing, ``torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)``: a block
    keeps only its input, and its inside is recomputed during the backward pass.

    Each block's input (what the checkpoint keeps) is appended to ``kept`` when given, so that
    :func:`saved_tensor_bytes` plus those inputs is the whole activation memory.
    """
    from torch.utils.checkpoint import checkpoint

    pos = torch.arange(idx.shape[1], device=idx.device)
    x = model.drop(model.wte(idx) + model.wpe(pos))
    for block in model.blocks:
        if kept is not None:
            kept.append(x)
        x = checkpoint(block, x, use_reentrant=False)
    logits = model.lm_head(model.ln_f(x))
    return logits, torch.nn.functional.cross_entropy(
        logits.flatten(0, 1).float(), targets.flatten()
    )


# --- memory and batch size --------------------------------------------------------------------


def saved_tensor_bytes(
    fn: Callable[[], object], exclude: Iterable[torch.Tensor] = ()
) -> tuple[int, object]:
    """Bytes of the tensors autograd saves for the backward pass while ``fn()`` runs, counting
    each storage once and leaving out ``exclude`` (pass the parameters: they are not activations).

    Returns (bytes, fn's result). Tensors saved inside a ``torch.utils.checkpoint`` region are
    not saved (that is the point), and are not counted; the inputs a checkpoint keeps are not
    seen by these hooks either, so add them yourself.
    """
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}

    def pack_hook(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack_hook, lambda t: t):
        out = fn()
    return sum(seen.values()), out


#: What running out of device memory raises (``torch.cuda.OutOfMemoryError`` in older releases).
OutOfMemory = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


def bytes_or_oom(measure: Callable[[int], int], batch: int) -> int | None:
    """``measure(batch)``, the bytes a batch needs, or None when measuring it ran out of device
    memory. On a GPU that other processes share (a workshop server, a shared cloud GPU) the
    measurement itself can fail before the budget is reached: that batch does not fit either."""
    try:
        return measure(batch)
    except OutOfMemory:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()  # give back what the failed attempt had reserved
        return None


def fits(measure: Callable[[int], int], batch: int, budget: float) -> bool:
    """Whether ``batch`` fits in ``budget`` bytes: measured within it, and no out-of-memory."""
    total = bytes_or_oom(measure, batch)
    return total is not None and total <= budget


def noise_scale(
    g_small_sq: float, g_big_sq: float, b_small: int, b_big: int
) -> tuple[float, float, float]:
    """The simple noise scale B_simple = tr(Sigma) / |G|^2 from squared gradient norms measured at
    two batch sizes (McCandlish et al. 2018, appendix A.1, unbiased estimators):

    |G|^2 ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small),
    tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1 / B_small - 1 / B_big).

    Returns (B_simple, |G|^2, tr(Sigma)). Both estimates are noisy: average over several batches.
    """
    g_sq = (b_big * g_big_sq - b_small * g_small_sq) / (b_big - b_small)
    trace = (g_small_sq - g_big_sq) / (1 / b_small - 1 / b_big)
    return trace / g_sq, g_sq, trace
