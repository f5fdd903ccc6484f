"""Exercises of lab 11, the capstone (chapter 11, training in practice): make a slow training
script fast, one planted problem at a time, without changing what it learns.

The baseline (``gu.capstone.baseline_train`` and its pieces, shown to the learner in the lab) tokenises
in Python on every item with one loader process, materialises the softmax of the full logits to
take its log, steps an unfused optimizer (a Python loop over parameters), computes in fp32
everywhere, uses a tiny batch and reads the loss back to the host every step.

Each check first decides correctness from what the learner's code actually did (values compared
with a reference computed in the same process, hooks that count host synchronisations, dtypes
seen by forward hooks), then measures the speed-up over the baseline's version of the same piece
in the same process, interleaved, as a ratio. A fix that is correct passes even when this machine
shows no speed-up; the message then says why, rather than blaming the learner for the machine.
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..many_gpus import gpt, training
from ..many_gpus.capstone import (
    LR,
    MODEL,
    SEQ_LEN,
    TINY_BATCH,
    WEIGHT_DECAY,
    baseline_loader,
    baseline_loss,
    baseline_optimizer,
    baseline_step,
)
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "11_training_in_practice"
#: A speed-up below this is "no measurable speed-up" on a shared machine.
NOISE = 1.1
#: Seconds of processor time a check may use: a correct answer's whole check (its timing
#: included) takes 0.1-2 s of it on a 2-core laptop, so an endless loop is stopped, and its
#: line reported, within about 8 s on an idle machine rather than after a minute.
TIME_LIMIT = 8.0


# --- shared helpers ---------------------------------------------------------------------------


@functools.cache
def _text() -> str:
    return training.corpus()


@functools.cache
def _data() -> torch.Tensor:
    return training.encode(_text())


def _model(seed: int = 0) -> torch.nn.Module:
    return gpt.build(seed=seed, **MODEL)


def _batches(n: int, batch_size: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [training.get_batch(_data(), batch_size, SEQ_LEN, generator) for _ in range(n)]


#: (words of an exception's message, hint): causes that are easy to tell from the message.
_RAISED_HINTS = (
    (
        "empty parameter list",
        "the optimizer was given no parameters: `params` may be a generator "
        "(`model.parameters()`), which `list(params)` or a loop uses up. Take `params = "
        "list(params)` once, first, and give that list to the optimizer.",
    ),
    (
        "is invalid for input of size",
        "a `view` or `reshape` asked for a count that does not divide the batch (10 rows do not "
        "make 4 equal micro-batches): `x.tensor_split(k)` cuts k pieces of any sizes.",
    ),
    (
        "Expected tensor for argument #1 'indices'",
        "token ids are integers and must stay int64: do not cast x or y; autocast casts the "
        "floating-point computations inside the model by itself.",
    ),
    (
        "scalar type Long; but got",
        "token ids are integers and must stay int64: do not cast x or y.",
    ),
    (
        "does not require grad and does not have a grad_fn",
        "backward needs a tensor that is still part of the graph: no `.item()`, `.detach()` or "
        "`torch.no_grad()` before `loss.backward()`.",
    ),
)


def _line_of(error: BaseException) -> str:
    """' (line N: `source`)' of the learner's innermost frame, when the traceback has one."""
    import traceback

    torch_dir, course = os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__))
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if not f.filename.startswith((torch_dir, course)) and "/lib/python3" not in f.filename
    ]
    if not frames:
        return ""
    last = frames[-1]
    return f" (line {last.lineno}" + (f": `{last.line.strip()}`)" if last.line else ")")


def _call(exercise_id: str, function, *args):
    """(value, None), or (None, CheckResult) when the learner's function raised."""
    try:
        return function(*args), None
    except NotImplementedError:
        return None, not_attempted(exercise_id)
    except Exception as error:
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
        hint = next((h for words, h in _RAISED_HINTS if words in str(error)), None)
        return None, failed(
            exercise_id,
            f"Your function raised {type(error).__name__}: {text}{_line_of(error)}.",
            hint or "run it yourself in a new cell to see the full traceback.",
        )


def _not_callable(exercise_id: str, answer) -> CheckResult | None:
    if callable(answer):
        return None
    return failed(
        exercise_id,
        f"Expected a function, got {type(answer).__name__}.",
        "pass the function itself: check(..., my_function), not my_function(...).",
    )


#: The range of baseline/yours ratios over the last timing's repeats (slowest and fastest
#: pairings), for :func:`_speed_text`; None when the timing had no repeats to compare.
_last_range: tuple[float, float] | None = None


def _ratio_range(baseline: list[float], yours: list[float]) -> tuple[float, float] | None:
    if len(baseline) < 2 or len(yours) < 2 or min(yours) <= 0:
        return None
    return min(baseline) / max(yours), max(baseline) / min(yours)


def _interleaved(fns: dict[str, callable], repeat: int = 5) -> dict[str, float]:
    """Median seconds of each zero-argument function, timed in alternation after one warm-up."""
    global _last_range
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    if "baseline" in times and "yours" in times:
        _last_range = _ratio_range(times["baseline"], times["yours"])
    return {k: statistics.median(v) for k, v in times.items()}


def _speed_text(ratio: float, what: str, why_not: str, spread=None) -> str:
    """The measured ratio, said plainly: an effect only when even the least favourable pairing
    of repeats shows it; otherwise this machine's noise, which is not held against anyone."""
    global _last_range
    spread, _last_range = spread or _last_range, None
    text = (
        f"Speed-up over the baseline, measured now on this machine ({what}): {ratio:.2f}x "
        "(median of interleaved repeats"
        + (f"; from {spread[0]:.2f}x to {spread[1]:.2f}x across them" if spread else "")
        + ")."
    )
    if spread is None:
        text += (
            " One run each cannot tell an effect from this machine's noise, so this ranks "
            f"nothing and is not held against you: {why_not}"
        )
    elif spread[0] <= 1.0 <= spread[1]:
        text += (
            " That range includes 1x: within this machine's noise, no speed-up or slow-down "
            f"is measured here, and that is not held against you: {why_not}"
        )
    elif ratio < NOISE:
        text += f" That is no clear speed-up here, which is not held against you: {why_not}"
    return text


class _SyncCounter(TorchFunctionMode):
    """Counts the tensor methods that make the host wait for the device (``.item()`` and kin),
    when called from outside PyTorch (the optimizers' own bookkeeping on CPU tensors is not a
    synchronisation and is not counted)."""

    SYNCING = frozenset(
        {"item", "tolist", "numpy", "cpu", "__float__", "__int__", "__bool__", "__index__"}
        | {"__format__", "__repr__", "__str__"}
    )
    #: Functions that make a new tensor on the default device (the CPU) unless told otherwise.
    FACTORIES = frozenset(
        {"zeros", "ones", "empty", "full", "tensor", "as_tensor", "arange", "linspace"}
        | {"rand", "randn", "randint"}
    )
    #: What a copy into such a host tensor is called in the counter's list.
    INTO_HOST = "an assignment into a tensor made on the CPU"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.host: list[torch.Tensor] = []  # tensors the learner's code made on the CPU

    def syncs(self, name: str, args, kwargs) -> bool:
        """Whether this call, from the learner's code, makes the host wait for the device: one of
        SYNCING, or a copy to the CPU, however spelt (``.to("cpu")``, ``.to(device=...)``,
        ``cpu_tensor.copy_(x)``): from a GPU tensor unless ``non_blocking=True``; on a machine
        without a GPU, of a floating-point tensor (what the model computes; token ids are
        integers), as it would be there."""
        if name in self.SYNCING:
            return not _called_from_torch(3)  # 3: past syncs and __torch_function__
        if name not in ("to", "copy_") or not args or not isinstance(args[0], torch.Tensor):
            return False
        kwargs = kwargs or {}
        if name == "to":
            source, targets = args[0], [*args[1:], kwargs.get("device")]
            to_cpu = any(_is_cpu(t) for t in targets)
        else:
            to_cpu, source = args[0].device.type == "cpu", args[1] if len(args) > 1 else None
            source = kwargs.get("src", source)
        if not to_cpu or not isinstance(source, torch.Tensor):
            return False
        if kwargs.get("non_blocking") or (name == "copy_" and len(args) > 2 and args[2]):
            return False
        if not self._from_device(source):
            return False
        return not _called_from_torch(3)

    def _from_device(self, source: torch.Tensor) -> bool:
        """Whether ``source`` would be on the GPU there: on a GPU, ``source`` is; on a machine
        without one, a floating-point tensor that the learner's code did not make on the CPU."""
        if torch.cuda.is_available():
            return source.device.type != "cpu"
        return source.is_floating_point() and not any(source is t for t in self.host)

    def into_host(self, name: str, args, kwargs) -> bool:
        """Whether this call stores a device tensor into a tensor the learner's code made on
        the CPU (``losses = torch.empty(n)``, then ``losses[i] = loss.detach()``): a copy to
        the host, which waits for the device as ``.cpu()`` does."""
        if name not in ("__setitem__", "index_put_") or len(args) < 3:
            return False
        target, value = args[0], args[2]
        if not isinstance(value, torch.Tensor) or not isinstance(target, torch.Tensor):
            return False
        if not any(target is t for t in self.host) or not self._from_device(value):
            return False
        return not _called_from_torch(3)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if self.syncs(name, args, kwargs):
            self.calls.append(name)
        elif self.into_host(name, args, kwargs):
            self.calls.append(self.INTO_HOST)
        result = func(*args, **(kwargs or {}))
        if name in self.FACTORIES and isinstance(result, torch.Tensor):
            # device="cpu" or none: the host. A torch.device is taken to be the model's or the
            # loss's (device=loss.device), which is the CPU only on a machine without a GPU.
            device = (kwargs or {}).get("device")
            on_host = _is_cpu(device) if isinstance(device, str) else device is None
            on_host = on_host and (device is not None or _default_on_cpu())
            if on_host and not _called_from_torch(2):
                self.host.append(result)
        return result


def _default_on_cpu() -> bool:
    """Whether a tensor made without a device goes to the CPU (no default device set)."""
    default = getattr(torch, "get_default_device", None)
    return default is None or default().type == "cpu"


def _is_cpu(target) -> bool:
    """Whether a ``Tensor.to`` argument names the CPU (a device, its name, or a CPU tensor)."""
    if isinstance(target, str):
        return target.split(":")[0] == "cpu"
    if isinstance(target, torch.device):
        return target.type == "cpu"
    return isinstance(target, torch.Tensor) and target.device.type == "cpu"


_TORCH_DIR = os.path.dirname(torch.__file__)


def _called_from_torch(depth: int = 2) -> bool:
    """Whether the tensor call ``depth`` frames up (2: the caller of the caller) came from
    PyTorch's own code."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.endswith(("overrides.py", "_tensor.py")):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_TORCH_DIR)


# --- 1. the loader ------------------------------------------------------------------------------

LOADER_BATCHES = 12


def _window_in_text(x: torch.Tensor, y_last: int, text: bytes) -> bool:
    return bytes([*x.tolist(), y_last]) in text


def _run_loader(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    text, raw = _text(), _text().encode("utf-8")
    batch_size = 8

    def draw(make, seed):
        batches = []
        for _, batch in zip(
            range(LOADER_BATCHES), make(text, batch_size, SEQ_LEN, seed), strict=False
        ):
            batches.append(batch)
        return batches

    batches, problem = _call(exercise_id, draw, answer, 0)
    if problem is not None:
        return problem
    if len(batches) < LOADER_BATCHES:
        return failed(
            exercise_id,
            f"Your loader gave only {len(batches)} batches; training needs as many as it asks for.",
            "return an iterable that keeps giving batches (a DataLoader, or a generator with "
            "`while True: yield get_batch(...)`).",
        )
    for batch in batches:
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            return failed(
                exercise_id,
                f"Each batch should be a pair (x, y); got {type(batch).__name__}.",
                "yield `x, y`, the inputs and their targets.",
            )
        x, y = batch
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            return failed(exercise_id, "x and y should be tensors.", "build them with torch.")
        if x.shape != (batch_size, SEQ_LEN) or y.shape != x.shape:
            return failed(
                exercise_id,
                f"x has shape {tuple(x.shape)} and y {tuple(y.shape)}; expected both "
                f"({batch_size}, {SEQ_LEN}) (batch_size, seq_len).",
                "each row is one window of seq_len tokens.",
            )
        if x.dtype != torch.long or y.dtype != torch.long:
            return failed(
                exercise_id,
                f"x is {x.dtype} and y is {y.dtype}; embeddings and cross-entropy need int64.",
                "convert with `.long()`.",
            )
    x, y = batches[0]
    if torch.equal(x, y):
        return failed(
            exercise_id,
            "y equals x: the model would learn to copy its input, not to predict the next byte.",
            "the targets are the window shifted by one: y[i, t] = token after x[i, t].",
        )
    for x, y in batches:
        for i in range(batch_size):
            if not torch.equal(x[i, 1:], y[i, :-1]) or not _window_in_text(
                x[i], int(y[i, -1]), raw
            ):
                rows_fit = [
                    j for j in range(batch_size) if torch.equal(x[i, 1:], y[j, :-1]) and j != i
                ]
                shift = next(
                    (d for d in (2, 3) if torch.equal(x[i, d:], y[i, : SEQ_LEN - d])), None
                )
                if shift:
                    return failed(
                        exercise_id,
                        f"Row {i} of a batch: its targets are its inputs shifted by {shift} "
                        "tokens, not 1: the model would learn to predict the token after next.",
                        "cut one window of seq_len + 1 tokens: x = window[:-1], y = window[1:] "
                        "(y[t] is the token right after x[t]).",
                    )
                if rows_fit or not torch.equal(x[i, 1:], y[i, :-1]):
                    return failed(
                        exercise_id,
                        f"Row {i} of a batch: its targets y[{i}] are not its input x[{i}] shifted "
                        "by one; the labels were shuffled apart from their inputs.",
                        "shuffle which windows go in a batch, never x and y separately: draw the "
                        "window of seq_len + 1 tokens first, then cut it into x and y.",
                    )
                return failed(
                    exercise_id,
                    f"Row {i} of a batch is not a window of the text (x, then y's last token).",
                    "take x = data[s : s + seq_len] and y = data[s + 1 : s + seq_len + 1] from the "
                    "bytes of the text, encoded with `gu.training.encode(text)`.",
                )
    firsts = {tuple(x[0].tolist()) for x, _ in batches}
    if len(firsts) == 1:
        return failed(
            exercise_id,
            "Every batch is the same batch.",
            "draw new windows for every batch from one generator created once, outside the loop.",
        )
    again, problem = _call(exercise_id, draw, answer, 0)
    if problem is not None:
        return problem
    other, problem = _call(exercise_id, draw, answer, 1)
    if problem is not None:
        return problem
    if all(torch.equal(a[0], b[0]) for a, b in zip(batches, other, strict=False)):
        return failed(
            exercise_id,
            "Loaders made with seeds 0 and 1 gave the same batches: your loader ignores `seed`, "
            "so every run (and every rank, or every epoch seeded apart) sees the same order.",
            "seed the generator from the argument: `torch.Generator().manual_seed(seed)`, not a "
            "fixed number.",
        )
    if not all(torch.equal(a[0], b[0]) for a, b in zip(batches, again, strict=True)):
        return failed(
            exercise_id,
            "Two loaders made with the same seed gave different batches, so runs cannot be repeated.",
            "draw with a generator seeded from `seed`: `torch.Generator().manual_seed(seed)`, "
            "passed to torch.randint or to the DataLoader.",
        )

    def timed(make):
        def run():
            iterator = iter(make(text, 32, SEQ_LEN, 0))
            next(iterator)  # start-up (workers, tokenising the text once) is not a step
            for _ in range(8):
                next(iterator)

        return run

    t = _interleaved({"baseline": timed(baseline_loader), "yours": timed(answer)}, repeat=3)
    ratio = t["baseline"] / t["yours"]
    return passed(
        exercise_id,
        "Every batch holds windows of the text with targets shifted by one, new windows each "
        "batch, and the same seed repeats them.\n"
        + _speed_text(
            ratio,
            "drawing 8 batches of 32",
            "loader workers run beside the training process, and this machine has few cores to "
            "spare; tokenising once, before training, does not depend on cores.",
        ),
    )


register(
    Exercise(
        id="ch11_fast_loader",
        chapter=CHAPTER,
        title="A loader that keeps up",
        signature="make_loader(text, batch_size, seq_len, seed) -> iterable of (x, y) int64 "
        "tensors of shape (batch_size, seq_len), y = x shifted by one token",
        launch="12 batches of 8 drawn twice with seed 0; then timed against the baseline loader",
        run=functools.partial(_run_loader, "ch11_fast_loader"),
        kind="function",
        time_limit=TIME_LIMIT,
    )
)


# --- 2. the loss ---------------------------------------------------------------------------------


def _run_loss(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    generator = torch.Generator().manual_seed(11)
    b, t, v = 4, SEQ_LEN, 256
    for scale, label in ((3.0, "ordinary"), (300.0, "large")):
        logits = (torch.randn(b, t, v, generator=generator) * scale).requires_grad_()
        targets = torch.randint(v, (b, t), generator=generator)
        expected = F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten())
        loss, problem = _call(exercise_id, answer, logits, targets)
        if problem is not None:
            text = problem.what
            if "Expected target size" in text or ("expected" in text.lower() and "size" in text):
                return failed(
                    exercise_id,
                    text,
                    "F.cross_entropy wants logits of shape (N, vocab) and targets (N,): flatten "
                    "the batch and sequence dimensions, `logits.flatten(0, 1)`, `targets.flatten()`.",
                )
            return problem
        if isinstance(loss, (float, int)) and not isinstance(loss, bool):
            return failed(
                exercise_id,
                f"Your loss is a Python {type(loss).__name__}, not a tensor: it has left the "
                "autograd graph, so `loss.backward()` cannot run.",
                "return the tensor itself: no `.item()` or `float(...)` on the loss (each also "
                "makes the host wait for the device).",
            )
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
            return failed(
                exercise_id,
                f"Your loss is {shape}, not one number.",
                "average over every position (reduction='mean', the default of F.cross_entropy).",
            )
        value = float(loss.detach())
        if not math.isfinite(value):
            return failed(
                exercise_id,
                f"With {label} logits (up to about {scale * 4:g}) your loss is {value}.",
                "softmax underflows to exactly 0 for the unlikely classes, and log(0) is -inf: "
                "never take the log of a softmax. F.cross_entropy (or log_softmax) computes "
                "log-probabilities as x - logsumexp(x), which stays finite.",
            )
        if math.isclose(value, float(expected) * b * t, rel_tol=1e-4):
            return failed(
                exercise_id,
                f"Your loss is {b * t} times the mean: it is the sum over positions.",
                "use the mean, so the loss (and the learning rate) does not depend on batch size.",
            )
        if not math.isclose(value, float(expected), rel_tol=1e-4, abs_tol=1e-5):
            return failed(
                exercise_id,
                f"With {label} logits your loss is {value:.6g}; the cross-entropy is "
                f"{float(expected):.6g}.",
                "the loss is the mean over positions of -log softmax(logits)[target].",
            )
        if loss.grad_fn is None:
            return failed(
                exercise_id,
                "Your loss carries no gradient (it was detached or computed without autograd).",
                "compute it from `logits` with torch operations, without .detach() or .item().",
            )
    model_logits = torch.randn(16, SEQ_LEN, v, generator=generator)
    targets = torch.randint(v, (16, SEQ_LEN), generator=generator)

    def fwd_bwd(fn):
        def run():
            logits = model_logits.clone().requires_grad_()
            fn(logits, targets).backward()

        return run

    saved_base, _ = training.saved_tensor_bytes(
        lambda: baseline_loss(model_logits.clone().requires_grad_(), targets)
    )
    saved_mine, _ = training.saved_tensor_bytes(
        lambda: answer(model_logits.clone().requires_grad_(), targets)
    )
    speed = _interleaved({"baseline": fwd_bwd(baseline_loss), "yours": fwd_bwd(answer)}, repeat=15)
    ratio = speed["baseline"] / speed["yours"]
    return passed(
        exercise_id,
        "Your loss equals the cross-entropy, stays finite for large logits and has a gradient.\n"
        f"Saved for backward (logits of 16 x {SEQ_LEN} x {v}): baseline {saved_base / 1e3:.0f} kB, "
        f"yours {saved_mine / 1e3:.0f} kB.\n"
        + _speed_text(
            ratio,
            "the loss's forward and backward",
            "with a vocabulary of 256 the loss is a small part of the work; with 50,000-token "
            "vocabularies the full softmax is the largest tensor of the step.",
        ),
    )


register(
    Exercise(
        id="ch11_fused_loss",
        chapter=CHAPTER,
        title="Cross-entropy without materialising the softmax",
        signature="loss_fn(logits (B, T, V) float, targets (B, T) int64) -> scalar tensor",
        launch="random logits of scale 3 and 300; compared with F.cross_entropy; then timed",
        run=functools.partial(_run_loss, "ch11_fused_loss"),
        kind="function",
        time_limit=TIME_LIMIT,
    )
)


# --- 3. the optimizer -------------------------------------------------------------------------------

OPT_STEPS = 3


def _trajectory(make, batches) -> list[torch.Tensor]:
    model = _model()
    optimizer = make(model.parameters(), LR)
    for x, y in batches:
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return [p.detach().clone() for p in model.parameters()]


def _max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((p - q).abs().max()) for p, q in zip(a, b, strict=True))


def _run_optimizer(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    probe, problem = _call(exercise_id, answer, [torch.nn.Parameter(torch.zeros(2))], LR)
    if problem is not None:
        return problem
    if not isinstance(probe, torch.optim.Optimizer):
        return failed(
            exercise_id,
            f"Your function returned a {type(probe).__name__}, not a torch.optim optimizer.",
            "return `torch.optim.AdamW(params, lr=lr, ...)`.",
        )
    other_lr = LR * 3
    second, problem = _call(
        exercise_id, answer, iter([torch.nn.Parameter(torch.zeros(2))]), other_lr
    )
    if problem is not None:
        return problem
    lrs = {g.get("lr") for g in getattr(second, "param_groups", [])}
    fixed = {g.get("lr") for g in probe.param_groups}
    if isinstance(second, torch.optim.Optimizer) and lrs == fixed and lrs != {other_lr}:
        return failed(
            exercise_id,
            f"make_optimizer(params, lr={other_lr:g}) gave an optimizer with lr "
            f"{', '.join(f'{v:g}' for v in sorted(lrs, key=float))}: the learning rate is fixed "
            "in your code, not taken from the argument.",
            "pass the argument on: `torch.optim.AdamW(params, lr=lr, ...)`, so a schedule or a "
            "sweep can change it.",
        )
    batches = _batches(OPT_STEPS, 4)
    expected = _trajectory(baseline_optimizer, batches)
    mine, problem = _call(exercise_id, _trajectory, answer, batches)
    if problem is not None:
        return problem
    gap = _max_diff(mine, expected)
    if gap > 1e-5:
        adam = _trajectory(
            lambda p, lr: torch.optim.Adam(p, lr=lr, weight_decay=WEIGHT_DECAY), batches
        )
        if _max_diff(mine, adam) < 1e-5:
            return failed(
                exercise_id,
                "Your optimizer is Adam with weight_decay, which adds the decay to the gradient "
                "(L2 regularisation); the baseline's AdamW decays the weights directly.",
                "use torch.optim.AdamW (Loshchilov & Hutter 2019, decoupled weight decay).",
            )
        return failed(
            exercise_id,
            f"After {OPT_STEPS} steps your weights differ from the baseline's by up to {gap:.2g}.",
            f"keep every hyper-parameter of the baseline: AdamW, lr=lr, weight_decay={WEIGHT_DECAY}, "
            "default betas and eps; change only how the update runs (foreach or fused).",
        )
    defaults = probe.defaults
    if not (defaults.get("foreach") or defaults.get("fused")):
        return failed(
            exercise_id,
            "Your optimizer computes the same update, but still one parameter at a time: on a "
            "CPU, torch.optim's default (foreach=None) is the per-parameter loop, as is "
            "foreach=False.",
            "ask for the multi-tensor path, `foreach=True`, or the fused kernel, `fused=True`.",
        )
    model = _model()
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    opt_base = baseline_optimizer(model.parameters())
    opt_mine = answer(model.parameters(), LR)
    speed = _interleaved({"baseline": opt_base.step, "yours": opt_mine.step}, repeat=7)
    ratio = speed["baseline"] / speed["yours"]
    how = "fused kernel" if defaults.get("fused") else "foreach (multi-tensor) path"
    return passed(
        exercise_id,
        f"Same weights as the baseline's AdamW after {OPT_STEPS} steps (within 1e-5), via the {how}.\n"
        + _speed_text(
            ratio,
            f"optimizer.step() over the model's {len(list(model.parameters()))} tensors",
            "on a CPU, per-tensor overhead is small next to the arithmetic; on a GPU every "
            "tensor costs several kernel launches, which foreach and fused remove.",
        ),
    )


register(
    Exercise(
        id="ch11_fused_optimizer",
        chapter=CHAPTER,
        title="A multi-tensor or fused optimizer",
        signature="make_optimizer(params, lr) -> torch.optim.Optimizer (AdamW, weight_decay=0.01)",
        launch=f"{OPT_STEPS} steps from the same model and batches as the baseline; then timed",
        run=functools.partial(_run_optimizer, "ch11_fused_optimizer"),
        kind="function",
        time_limit=TIME_LIMIT,
    )
)


# --- 4. no host synchronisation --------------------------------------------------------------------

SYNC_STEPS = 4


def _baseline_run_steps(model, optimizer, batches):
    losses = []
    for x, y in batches:
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def _run_no_sync(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    batches = _batches(SYNC_STEPS, 8)
    model = _model()
    start = time.perf_counter()
    expected = _baseline_run_steps(model, torch.optim.AdamW(model.parameters(), lr=LR), batches)
    base_time = time.perf_counter() - start
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    counter = _SyncCounter()
    start = time.perf_counter()
    with counter:
        losses, problem = _call(exercise_id, answer, model, optimizer, batches)
    your_time = time.perf_counter() - start
    if problem is not None:
        return problem
    if (
        isinstance(losses, (list, tuple))
        and losses
        and all(isinstance(v, torch.Tensor) for v in losses)
    ):
        if any(v.requires_grad for v in losses):
            return failed(
                exercise_id,
                "Your losses still carry their autograd graphs, so every step's activations "
                "stay in memory until the list is freed.",
                "keep `loss.detach()`, which shares the value but drops the graph.",
            )
        losses = torch.stack([v.reshape(()) for v in losses])
    if isinstance(losses, torch.Tensor):
        if losses.requires_grad:
            return failed(
                exercise_id,
                "Your losses still carry their autograd graphs.",
                "stack `loss.detach()` values.",
            )
        values = losses.detach().flatten().tolist()
    elif isinstance(losses, (list, tuple)):
        values = list(losses)
    else:
        return failed(
            exercise_id,
            f"Your function returned {type(losses).__name__}.",
            "return the loss of every step: a 1-D tensor (or a list of 0-d tensors).",
        )
    if len(values) != SYNC_STEPS:
        return failed(
            exercise_id,
            f"You returned {len(values)} losses for {SYNC_STEPS} steps.",
            "keep one loss per step.",
        )
    try:
        gaps = [abs(float(a) - b) for a, b in zip(values, expected, strict=True)]
    except (TypeError, ValueError):
        return failed(exercise_id, "Your losses are not numbers.", "keep `loss.detach()`.")
    if max(gaps) > 1e-4:
        return failed(
            exercise_id,
            f"Your losses differ from the baseline's by up to {max(gaps):.3g}: the training "
            "itself changed.",
            "change only how the losses are kept: forward, backward, step and zero_grad as before.",
        )
    if len(counter.calls) > 1:
        calls = ", ".join(sorted(set(counter.calls)))
        what = (
            f"Your loop made the host wait for the device {len(counter.calls)} times for "
            f"{SYNC_STEPS} steps (through {calls})."
        )
        if set(counter.calls) == {counter.INTO_HOST}:
            return failed(
                exercise_id,
                what,
                "your losses tensor was made on the CPU (no `device=`), so storing a loss in "
                "it, `losses[i] = loss.detach()`, copies the loss to the host: on a GPU that "
                "waits for every queued kernel, like `.item()`. Make it where the loss is, "
                "`torch.empty(len(batches), device=loss.device)` (or the model's device), or "
                "keep the `loss.detach()` values in a list and `torch.stack` them after the loop.",
            )
        return failed(
            exercise_id,
            what,
            "`.item()`, float(), print() of a tensor and `if loss < ...` all copy a value to the "
            "host, and on a GPU the host waits for every queued kernel. Keep the losses on the "
            "device with `loss.detach()` and read them once, after the loop.",
        )
    ratio = base_time / your_time  # the two runs above, one after the other
    return passed(
        exercise_id,
        f"Same losses as the baseline, with {len(counter.calls)} host synchronisation(s) in "
        f"{SYNC_STEPS} steps instead of {SYNC_STEPS}.\n"
        + _speed_text(
            ratio,
            f"{SYNC_STEPS} training steps (one run each)",
            "on a CPU there is no device running ahead of the host, so `.item()` waits for "
            "nothing; on a GPU it empties the queue of kernels every step.",
        ),
    )


register(
    Exercise(
        id="ch11_no_host_sync",
        chapter=CHAPTER,
        title="Keep the losses on the device",
        signature="run_steps(model, optimizer, batches) -> the loss of every step, as a 1-D "
        "tensor (or a list of 0-d tensors), with no host synchronisation inside the loop",
        launch=f"{SYNC_STEPS} steps, compared with the baseline's losses; syncs counted",
        run=functools.partial(_run_no_sync, "ch11_no_host_sync"),
        kind="function",
        time_limit=TIME_LIMIT,
    )
)


# --- 5. bf16 autocast ----------------------------------------------------------------------------------

AMP_STEPS = 8
#: How far the bf16 run's loss may drift from the fp32 run's (mean of the last 3 steps).
AMP_TOLERANCE = 0.1


def _run_bf16(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    batches = _batches(AMP_STEPS, 8, seed=5)
    model, reference = _model(), _model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=LR)
    seen: list[torch.dtype] = []
    hook = model.blocks[0].mlp.fc1.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    losses, expected, times = [], [], {"baseline": [], "yours": []}
    for x, y in batches:  # the fp32 baseline and yours, step by step, on the same batches
        start = time.perf_counter()
        expected.append(float(baseline_step(reference, ref_optimizer, x, y, _ce).detach()))
        times["baseline"].append(time.perf_counter() - start)
        start = time.perf_counter()
        loss, problem = _call(exercise_id, answer, model, optimizer, x, y)
        times["yours"].append(time.perf_counter() - start)
        if problem is not None:
            hook.remove()
            return problem
        losses.append(loss)
    hook.remove()
    dtypes = {p.dtype for p in model.parameters()}
    if dtypes != {torch.float32}:
        return failed(
            exercise_id,
            f"Your weights are now {', '.join(str(d) for d in dtypes)}: the model itself was cast.",
            "keep the weights (and the optimizer's state) in fp32 and let "
            "`torch.autocast('cpu', dtype=torch.bfloat16)` cast inside the forward pass: a bf16 "
            "weight cannot take updates smaller than 1/256 of itself, so training stalls.",
        )
    if not seen:
        return failed(
            exercise_id,
            "Your step never ran the model's forward pass.",
            "call `model(x, y)` (or model(x)) inside your step.",
        )
    if torch.float16 in seen:
        return failed(
            exercise_id,
            "Your matmuls ran in float16.",
            "use bfloat16: it has fp32's exponent range, so no loss scaling is needed; fp16 "
            "needs a GradScaler to keep small gradients from underflowing to zero.",
        )
    if torch.bfloat16 not in seen:
        return failed(
            exercise_id,
            "Your matmuls ran in float32: autocast was not active around the forward pass.",
            "wrap the forward pass (and the loss) in `with torch.autocast('cpu', "
            "dtype=torch.bfloat16):`, and call backward and the optimizer outside it.",
        )
    try:
        values = [float(v.detach()) if isinstance(v, torch.Tensor) else float(v) for v in losses]
    except (TypeError, ValueError):
        return failed(exercise_id, "Your step should return the loss.", "end with `return loss`.")
    mine, ref = statistics.mean(values[-3:]), statistics.mean(expected[-3:])
    if not math.isfinite(mine) or abs(mine - ref) > AMP_TOLERANCE:
        return failed(
            exercise_id,
            f"After {AMP_STEPS} steps your loss is {mine:.3g} and the fp32 baseline's "
            f"{ref:.3g} (means of the last 3 steps, same batches): more apart than bf16 "
            f"rounding explains (tolerance {AMP_TOLERANCE}).",
            "each step must call loss.backward(), optimizer.step() and optimizer.zero_grad() "
            "once, as the baseline does; only the forward pass goes under autocast.",
        )
    ratio = statistics.median(times["baseline"][1:]) / statistics.median(times["yours"][1:])
    spread = _ratio_range(times["baseline"][1:], times["yours"][1:])
    return passed(
        exercise_id,
        f"Matmuls in bf16, weights in fp32, and after {AMP_STEPS} steps your loss is {mine:.3g} "
        f"against fp32's {ref:.3g}.\n"
        + _speed_text(
            ratio,
            "one training step",
            "bf16 is fast on hardware with bf16 matrix units (tensor cores, AMX); a CPU without "
            "them converts to fp32 and back, which can even be slower.",
            spread,
        ),
    )


def _ce(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


register(
    Exercise(
        id="ch11_bf16_autocast",
        chapter=CHAPTER,
        title="Mixed precision with bf16 autocast",
        signature="train_step(model, optimizer, x, y) -> loss (one full step)",
        launch=f"{AMP_STEPS} steps of batch 8 beside an fp32 baseline on the same batches, timed",
        run=functools.partial(_run_bf16, "ch11_bf16_autocast"),
        kind="function",
        time_limit=TIME_LIMIT,
    )
)


# --- 6. gradient accumulation ---------------------------------------------------------------------------


def _grads(model) -> list[torch.Tensor]:
    return [
        torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
        for p in model.parameters()
    ]


def _full_grads(x, y, pieces=None, weights=None) -> list[torch.Tensor]:
    """Gradient of the mean loss over ``pieces`` of the batch, weighted (default: whole batch)."""
    model = _model()
    if pieces is None:
        _, loss = model(x, y)
        loss.backward()
    else:
        for (xs, ys), w in zip(pieces, weights, strict=True):
            _, loss = model(xs, ys)
            (loss * w).backward()
    return _grads(model)


def _close(a, b, tol=1e-5) -> bool:
    scale = max(float(q.abs().max()) for q in b) or 1.0
    return _max_diff(a, b) <= tol * scale


def _run_accumulate(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    for batch, k, prefilled in ((8, 2, False), (8, 4, False), (10, 4, False), (8, 2, True)):
        ((x, y),) = _batches(1, batch, seed=batch * 10 + k)
        expected = _full_grads(x, y)
        model = _model()
        old = []
        if prefilled:  # the last step's gradients, still in .grad
            generator = torch.Generator().manual_seed(7)
            for p in model.parameters():
                p.grad = torch.randn(p.shape, generator=generator) * 0.01
                old.append(p.grad.clone())
        _, problem = _call(exercise_id, answer, model, x, y, k)
        if problem is not None:
            return problem
        mine = _grads(model)
        if _close(mine, expected):
            continue
        where = f"With a batch of {batch} in {k} micro-batches"
        if prefilled:
            if _close(mine, [g + o for g, o in zip(expected, old, strict=True)], 1e-4):
                return failed(
                    exercise_id,
                    f"{where}, starting with the previous step's gradients still in .grad, "
                    "your gradients are the whole batch's plus those old ones: backward() adds "
                    "to .grad, and your function never cleared it.",
                    "start from zero: `model.zero_grad()` (or `optimizer.zero_grad()`) once, "
                    "before the first micro-batch.",
                )
            where += " (with old gradients in .grad beforehand)"
        if all(float(g.abs().max()) == 0 for g in mine):
            return failed(
                exercise_id,
                f"{where}, the model has no gradients afterwards.",
                "call `loss.backward()` for every micro-batch, and do not zero the gradients "
                "at the end.",
            )
        pieces = list(zip(x.tensor_split(k), y.tensor_split(k), strict=True))
        if _close(mine, [g * k for g in expected], 1e-4):
            return failed(
                exercise_id,
                f"{where}, your gradients are {k} times too large: the sum of the micro-batch "
                "means, not their mean.",
                f"divide each micro-batch's loss by the number of micro-batches ({k}) before "
                "backward (the same mistake as a loss scale that is never undone).",
            )
        if _close(mine, _full_grads(x, y, pieces[:-1], [1 / k] * (k - 1)), 1e-4) or _close(
            mine, _full_grads(x, y, pieces[:-1], [1 / (k - 1)] * (k - 1)), 1e-4
        ):
            return failed(
                exercise_id,
                f"{where}, your gradients leave out the last micro-batch.",
                "loop over all k micro-batches: `for xs, ys in zip(x.tensor_split(k), "
                "y.tensor_split(k))`, and check range() bounds.",
            )
        if _close(mine, _full_grads(x, y, pieces[-1:], [1 / k]), 1e-4) or _close(
            mine, _full_grads(x, y, pieces[-1:], [1.0]), 1e-4
        ):
            return failed(
                exercise_id,
                f"{where}, only the last micro-batch's gradient is left.",
                "zero the gradients once before the loop, not inside it: backward() adds to "
                ".grad, which is what accumulation relies on.",
            )
        if batch % k and _close(mine, _full_grads(x, y, pieces, [1 / k] * k), 1e-4):
            return failed(
                exercise_id,
                f"{where} (micro-batches of unequal size), each micro-batch counts equally, so "
                "the tokens of the smaller ones count more.",
                "weight each micro-batch's mean loss by its share of the batch, len(xs) / len(x).",
            )
        return failed(
            exercise_id,
            f"{where}, your gradients differ from the whole batch's by up to "
            f"{_max_diff(mine, expected):.3g}.",
            "accumulate the gradients of loss_i * len(xs_i) / len(x) over all micro-batches.",
        )

    def step(fn, batch_size, k=None):
        model = _model()
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR, foreach=True)
        ((x, y),) = _batches(1, batch_size, seed=3)

        def run():
            if k is None:
                _, loss = model(x, y)
                loss.backward()
            else:
                fn(model, x, y, k)
            optimizer.step()
            optimizer.zero_grad()

        return run

    speed = _interleaved(
        {"baseline": step(None, TINY_BATCH), "yours": step(answer, 32, 2)}, repeat=3
    )
    ratio = (speed["baseline"] / TINY_BATCH) / (speed["yours"] / 32)
    return passed(
        exercise_id,
        "Accumulated gradients equal the whole batch's (batches of 8 and 10, 2 and 4 "
        "micro-batches, within 1e-5).\n"
        + _speed_text(
            ratio,
            f"tokens/s of a batch of 32 in 2 micro-batches against the baseline's batch of "
            f"{TINY_BATCH}",
            "this machine's few cores are already busy at a small batch; a GPU needs thousands "
            "of tokens per step to fill its SMs.",
        ),
    )


register(
    Exercise(
        id="ch11_grad_accumulation",
        chapter=CHAPTER,
        title="Gradient accumulation for a bigger batch",
        signature="accumulate(model, x, y, k) -> None; leaves in .grad the gradient of the mean "
        "loss over the whole batch, computed in k micro-batches",
        launch="batches of 8 (k = 2, 4) and 10 (k = 4) compared with the whole batch; then timed",
        run=functools.partial(_run_accumulate, "ch11_grad_accumulation"),
        kind="function",
        time_limit=TIME_LIMIT,
    )
)
