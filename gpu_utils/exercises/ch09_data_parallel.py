"""Exercises of lab 09, data parallelism (chapter 09): averaging gradients by hand, bucketed
all-reduce, ZeRO-1 optimizer-state sharding, and two questions on ZeRO's memory and traffic.

The three implementations run in 2, 3 and 4 real processes (``gu.dist``, gloo). In every rank
the checker trains ``gu.data_parallel.TinyLM`` (a tied output layer, a frozen layer, 241
trainable parameters: no world size divides it) for several optimizer steps on that rank's shard
of each global batch, calling the learner's code where data parallelism needs it, and trains a
copy on the whole global batch in one process, the baseline. It records the gradients of the
first step before and after the learner's code, the ``dist.all_reduce`` calls made, and every
parameter after each step; the hints are keyed to what those show (which rank, which parameter,
by what factor, which bucket).
"""

from __future__ import annotations

import inspect

import numpy as np

# torch loads with the chapter, before the checker's worker saves its state: a check that
# first imported it would make the worker start afresh for the next check (5-10 s each).
import torch

from . import _ranks
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import CheckResult, Exercise, failed, passed, register

CHAPTER = "09_data_parallel"
WORLD_SIZES = (2, 3, 4)
STEPS = 3
#: Seconds on the clock per multi-rank run (loops and deadlocks are stopped sooner, see _ranks).
RUN_TIMEOUT = _ranks.RUN_TIMEOUT
SEED = 9
#: Seconds a whole check may take in the checker's process (a backstop, see _ranks).
CHECK_TIME_LIMIT = _ranks.check_time_limit(WORLD_SIZES)
#: The bucket size the bucketing exercise is given: 100 float32 gradients, so the 241 trainable
#: parameters need three buckets (the last one partly filled).
BUCKET_BYTES = 400
SGD = {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}
ADAM_LR = 0.01
RTOL, ATOL = 1e-4, 1e-6

COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "broadcast",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce",
    "all_reduce_coalesced",
)

DEADLOCK_HINT = (
    "every rank must make the same collective calls, for tensors of the same sizes, in the same "
    "order: a collective returns only when all ranks have called it. Look for a call inside "
    "`if rank == ...`, or a loop whose length differs between ranks."
)
FROZEN_HINT = (
    "a frozen parameter (requires_grad=False) has no gradient: its `.grad` is None. Skip it, e.g. "
    "`[p for p in model.parameters() if p.grad is not None]`."
)


# --- what runs in every rank ------------------------------------------------------------------


def _watch(dist, calls: list, model=None):
    """Replace dist's collectives by wrappers that record (name, bytes, what): what the first
    tensor was ("grad": a gradient's storage, "param": a parameter's, "other": a new tensor such
    as a flat copy); return the originals."""
    originals = {name: getattr(dist, name) for name in COLLECTIVES if hasattr(dist, name)}
    grads, params = set(), set()
    if model is not None:
        for p in model.parameters():
            params.add(p.untyped_storage().data_ptr())
            if p.grad is not None:
                grads.add(p.grad.untyped_storage().data_ptr())

    def watching(name):
        def call(*args, **kwargs):
            tensor = args[0] if args else next(iter(kwargs.values()), None)
            size = tensor.numel() * tensor.element_size() if hasattr(tensor, "numel") else 0
            what = "other"
            if hasattr(tensor, "untyped_storage"):
                pointer = tensor.untyped_storage().data_ptr()
                what = "grad" if pointer in grads else "param" if pointer in params else "other"
            calls.append((name, int(size), what))
            return originals[name](*args, **kwargs)

        return call

    for name in originals:
        setattr(dist, name, watching(name))
    return originals


def _record_optimizer_grads(learner, out: dict) -> None:
    """Wrap the step of every torch optimizer in the learner's object so that the gradients it
    steps with (its parameters' .grad) are recorded, once, before it runs."""
    from gpu_utils.many_gpus import data_parallel as dp

    for optimizer in dp._optimizers(learner):
        original = optimizer.step

        def step(*args, _original=original, _optimizer=optimizer, **kwargs):
            if "optimizer_grads" not in out:
                out["optimizer_grads"] = [
                    p.grad.detach().double().numpy().ravel().copy()
                    for group in _optimizer.param_groups
                    for p in group["params"]
                    if p.grad is not None
                ]
            return _original(*args, **kwargs)

        optimizer.step = step


def _grads(model) -> dict:
    return {
        name: (None if p.grad is None else p.grad.detach().numpy().astype(np.float64).copy())
        for name, p in model.named_parameters()
    }


def _params(model) -> dict:
    return {
        name: p.detach().numpy().astype(np.float64).copy() for name, p in model.named_parameters()
    }


def _train_rank(rank, world_size, exercise, answer, steps, seed, bucket_bytes):
    """One rank: the baseline on the whole batch, then the learner's data-parallel training."""
    import torch.distributed as dist

    from gpu_utils.many_gpus import data_parallel as dp

    torch.manual_seed(seed)
    baseline, model = dp.TinyLM(seed=seed), dp.TinyLM(seed=seed)
    trainable = [p for p in baseline.parameters() if p.requires_grad]
    zero = exercise == "zero1_optimizer"
    if zero:
        base_opt = torch.optim.Adam(trainable, lr=ADAM_LR)
    else:
        base_opt = torch.optim.SGD(baseline.parameters(), **SGD)
        opt = torch.optim.SGD(model.parameters(), **SGD)
    out = {"params": [], "baseline": [], "calls": [], "initial": _params(model), "state": None}
    learner = None
    for step in range(steps):
        tokens, targets = dp.batch(step, seed)
        base_opt.zero_grad()
        dp.loss_fn(baseline, tokens, targets).backward()
        if step == 0:
            out["baseline_grads"] = _grads(baseline)
        base_opt.step()
        out["baseline"].append(_params(baseline))

        mine = slice(rank * len(tokens) // world_size, (rank + 1) * len(tokens) // world_size)
        if zero and learner is None:
            calls: list = []
            originals = _watch(dist, calls)
            try:
                learner = answer(list(model.parameters()), rank, world_size, ADAM_LR)
            finally:
                for name, function in originals.items():
                    setattr(dist, name, function)
            if not callable(getattr(learner, "step", None)):
                out["no_step"] = type(learner).__name__
                return out
        model.zero_grad()
        dp.loss_fn(model, tokens[mine], targets[mine]).backward()
        if step == 0:
            out["local_grads"] = _grads(model)
            if zero:
                _record_optimizer_grads(learner, out)
        calls = []
        originals = _watch(dist, calls, model)
        try:
            if zero:
                result = learner.step()
            elif exercise == "average_gradients":
                result = answer(model, world_size)
            else:
                result = answer(model, world_size, bucket_bytes)
        finally:
            for name, function in originals.items():
                setattr(dist, name, function)
        out["calls"].append(calls)
        if step == 0:
            out["synced_grads"] = _grads(model)
        del result  # the functions work in place; what they return is not used
        if not zero:
            opt.step()
        out["params"].append(_params(model))
    if zero:
        out["state"] = dp.state_numel(learner)
    return out


# --- what the checker concludes -----------------------------------------------------------------


def _close(a, b) -> bool:
    return a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=ATOL)


def _ratio(got, expected) -> float:
    """The scalar c that best fits got = c * expected."""
    denominator = float(np.dot(expected.ravel(), expected.ravel()))
    return float(np.dot(got.ravel(), expected.ravel())) / denominator if denominator else np.nan


def _near(value: float, target: float) -> bool:
    return bool(np.isfinite(value)) and abs(value - target) <= 1e-3 * max(1.0, abs(target))


def _error_result(exercise_id: str, n: int, error, answer) -> CheckResult:
    """The verdict on a RankError (an exception or a crash in one rank)."""
    message = f"{error.exc_message} {error.last_output}"
    text = _ranks.crash_text(n, error, answer)
    if error.exc_type == "exited" or any(
        p in message for p in ("Connection closed by peer", "Connection reset", "Broken pipe")
    ):
        return failed(
            exercise_id,
            f"With {n} ranks, one rank was left waiting in a collective that another rank never "
            "called (its peer finished and hung up).",
            DEADLOCK_HINT,
        )
    if "NoneType" in message:
        return failed(exercise_id, text, FROZEN_HINT)
    if "Cannot use ReduceOp" in message or "Invalid reduce op" in message:
        return failed(
            exercise_id,
            text,
            "this PyTorch's gloo backend does not offer that reduction: all-reduce with the "
            "default op (SUM) and divide by world_size.",
        )
    if "attempting to assign a gradient of size" in message:
        return failed(
            exercise_id,
            text,
            "a gradient must keep the shape of its parameter: write into it, "
            "`p.grad.copy_(values.view_as(p.grad))`, rather than assigning a new tensor.",
        )
    if "invalid tensor size" in message:
        return failed(
            exercise_id,
            text,
            "gloo's all_gather needs a tensor of the same size on every rank, and the number of "
            "parameters does not divide by world_size: pad the flat vector with zeros to a "
            "multiple of world_size (FSDP does the same), so every shard has the same length.",
        )
    if "size" in message and ("match" in message or "mismatch" in message):
        return failed(
            exercise_id,
            text,
            "a tensor did not have the size the code expected: when the number of elements is "
            "not a multiple of world_size, shards differ by one element; "
            "`torch.tensor_split(flat, world_size)` cuts them as everyone expects.",
        )
    return failed(exercise_id, text, _ranks.RUN_IT_YOURSELF)


def _run(exercise_id: str, answer, arity: int, judge) -> CheckResult | None:
    """Run the training in 2, 3, 4 ranks, judging each world size's outcome as soon as it is
    in (``judge(n, outcome)``); the first problem as a CheckResult, or None."""
    if not callable(answer):
        return failed(
            exercise_id,
            f"Expected a {'class' if arity == 4 else 'function'}, got {type(answer).__name__}.",
            "pass it itself: check(..., my_function), not my_function(...).",
        )
    try:
        inspect.signature(answer).bind(*([None] * arity))
    except TypeError:
        wanted = {
            2: "(model, world_size)",
            3: "(model, world_size, bucket_bytes)",
            4: "(params, rank, world_size, lr)",
        }[arity]
        return failed(
            exercise_id,
            f"Your {'class' if arity == 4 else 'function'} must take the arguments {wanted}.",
            f"define it as `{'class ZeRO1:' if arity == 4 else 'def f'}` taking {wanted}.",
        )
    except ValueError:
        pass
    from ..many_gpus import data_parallel

    data_parallel.preload_optimizers()
    return _ranks.run_world_sizes(
        exercise_id,
        answer,
        _train_rank,
        (exercise_id, answer, STEPS, SEED, BUCKET_BYTES),
        judge,
        world_sizes=WORLD_SIZES,
        error_result=_error_result,
        deadlock_hint=DEADLOCK_HINT,
        timeout=RUN_TIMEOUT,
    )


def _state(got, want, local, n: int) -> str:
    """What one rank's gradient of one parameter is after the learner's code: "mean" (right),
    "local" (this rank's own, unchanged), "sum" (n x the mean), "twice" (the mean / n),
    "tied2" (2 x the mean), "moved" (the mean's values, elsewhere), or "other"."""
    if _close(got, want):
        return "mean"
    if _close(got, local):
        return "local"
    ratio = _ratio(got, want)
    for label, target in (("sum", n), ("twice", 1 / n), ("tied2", 2.0)):
        if _near(ratio, target) and _close(got, want * target):
            return label
    if got.size == want.size and np.allclose(np.sort(got.ravel()), np.sort(want.ravel())):
        return "moved"
    return "other"


_SUMMED = (
    "you summed: dist.all_reduce adds the ranks' gradients; divide by world_size to get the "
    "mean, which is the gradient of the mean loss over the global batch."
)


def _gradient_problem(exercise_id: str, n: int, outcome: list[dict]) -> CheckResult | None:
    """Classify the first step's gradients after the learner's code, on every rank and for
    every parameter, against the whole batch's (the mean) and each rank's own; then explain
    the pattern (which ranks, which parameters, by what factor)."""
    expected = outcome[0]["baseline_grads"]
    tied = "embed.weight"
    for rank, result in enumerate(outcome):
        for name, want in expected.items():
            got = result["synced_grads"][name]
            if want is None:
                if got is not None and np.any(got):
                    return failed(
                        exercise_id,
                        f"With {n} ranks, the frozen parameter `{name}` has a gradient on rank "
                        f"{rank} after your code.",
                        "leave frozen parameters alone: they have no gradient (None), and giving "
                        "them one lets the optimizer change them.",
                    )
                continue
            if got is None:
                return failed(
                    exercise_id,
                    f"With {n} ranks, `{name}`'s gradient is None on rank {rank} after your code.",
                    "average the gradients in place, `p.grad` keeps its tensor: "
                    "`dist.all_reduce(p.grad); p.grad /= world_size`.",
                )
            if got.shape != want.shape:
                return failed(
                    exercise_id,
                    f"With {n} ranks, `{name}`'s gradient has shape {got.shape} on rank {rank}, "
                    f"not {want.shape}.",
                    "copy each bucket's values back with the shape of the gradient: "
                    "`p.grad.copy_(piece.view_as(p.grad))`.",
                )
    names = [k for k, v in expected.items() if v is not None]
    states = [
        {k: _state(r["synced_grads"][k], expected[k], r["local_grads"][k], n) for k in names}
        for r in outcome
    ]
    if all(v == "mean" for st in states for v in st.values()):
        return None
    every = [set(st.values()) for st in states]
    calls = outcome[0]["calls"][0]
    if all(e == {"local"} for e in every):  # nothing changed on any rank
        reduced = {c[2] for c in calls}
        if not calls:
            return failed(
                exercise_id,
                f"With {n} ranks, the gradients after your code are each rank's own (rank 1's "
                f"`{names[0]}` differs from rank 0's): nothing was all-reduced.",
                "call `dist.all_reduce(p.grad)` for every gradient, then divide by world_size.",
            )
        if reduced == {"param"}:
            return failed(
                exercise_id,
                f"With {n} ranks, your code called dist.{calls[0][0]} on the parameters "
                "themselves (`p` or `p.data`), not on their gradients: the gradients are still "
                "each rank's own.",
                "average `p.grad`, the gradient: `dist.all_reduce(p.grad); p.grad /= "
                "world_size`. The optimizer then updates every rank's parameters the same way.",
            )
        return failed(
            exercise_id,
            f"With {n} ranks, your code called dist.{calls[0][0]} but the gradients did not "
            f"change: `{names[0]}` still holds each rank's own gradient.",
            "`torch.cat` and `flatten` make a copy: all-reduce the flat bucket, then copy its "
            "pieces back, `p.grad.copy_(piece.view_as(p.grad))`.",
        )
    if len({tuple(sorted(st.items())) for st in states}) > 1:  # ranks differ from each other

        def describe(st):
            kinds = set(st.values())
            if kinds == {"mean"}:
                return "the mean over ranks"
            if kinds == {"sum"}:
                return "the sum over ranks (not divided)"
            if kinds == {"local"}:
                return "its own (not reduced)"
            if kinds == {"twice"}:
                return "the mean divided by world_size once more"
            return "neither the mean nor its own"

        text = "; ".join(f"rank {r}: {describe(st)}" for r, st in enumerate(states))
        return failed(
            exercise_id,
            f"With {n} ranks, the ranks' gradients differ after your code ({text}).",
            "every rank runs the same code: all-reduce every gradient and divide it by "
            "world_size on every rank, not only on rank 0 (`if rank == 0:` around the division "
            "or the reduction leaves the ranks with different gradients).",
        )
    st = states[0]
    kinds = set(st.values())
    wrong = [k for k in names if st[k] != "mean"]
    first = wrong[0]
    ratio = _ratio(outcome[0]["synced_grads"][first], expected[first])
    what = (
        f"With {n} ranks, the gradient of `{first}` is {ratio:.3g} times the gradient of the "
        "whole batch in one process"
    )
    if kinds == {"sum"}:
        return failed(exercise_id, what + " (every parameter's is).", _SUMMED)
    if kinds == {"twice"}:
        return failed(
            exercise_id,
            what + f" (every parameter's is): 1/{n}, the mean divided by world_size again.",
            "divide once: after `dist.all_reduce(p.grad)` (a sum), `p.grad /= world_size`; "
            "dividing before the all-reduce and again after, or twice in a loop, makes 1/n of "
            "the mean.",
        )
    if wrong == [tied] and st[tied] == "twice":
        return failed(
            exercise_id,
            what + ". Only this parameter, the one shared by the embedding and the output "
            "layer, is off.",
            "the tied weight was divided twice: iterating over modules visits a shared tensor "
            "once per module that uses it. `model.parameters()` yields each tensor once.",
        )
    if wrong == [tied] and st[tied] in ("tied2", "sum"):
        return failed(
            exercise_id,
            what + ". Only the tied weight (embedding = output layer) is off.",
            "the tied weight was reduced twice: iterating over modules visits a shared tensor "
            "once per module that uses it. `model.parameters()` yields each tensor once.",
        )
    if kinds <= {"mean", "local"}:
        missing = ", ".join(f"`{k}`" for k in wrong)
        return failed(
            exercise_id,
            f"With {n} ranks, the gradients of {missing} were never averaged (they are still "
            "each rank's own); the others are right.",
            "average every parameter that has a gradient (`p.grad is not None`), whatever its "
            "shape or name.",
        )
    flat_got = np.concatenate([outcome[0]["synced_grads"][k].ravel() for k in names])
    flat_want = np.concatenate([expected[k].ravel() for k in names])
    if np.allclose(np.sort(flat_got), np.sort(flat_want), rtol=RTOL, atol=ATOL):
        return failed(
            exercise_id,
            f"With {n} ranks, the gradient of `{first}` holds the right averaged values in the "
            "wrong places: they were copied back to other gradients or offsets.",
            "copy each bucket's pieces back to the gradients they came from, in the same order "
            "and at the same offsets as you flattened them.",
        )
    return failed(
        exercise_id,
        what + ".",
        "each gradient should be the mean over ranks: all-reduce (sum), then divide by world_size.",
    )


def _params_problem(exercise_id: str, n: int, outcome: list[dict]) -> CheckResult | None:
    for step in range(STEPS):
        for rank, result in enumerate(outcome):
            for name, want in result["baseline"][step].items():
                got = result["params"][step][name]
                if not _close(got, want):
                    index = int(np.argmax(np.abs(got - want).ravel()))
                    return failed(
                        exercise_id,
                        f"With {n} ranks, after optimizer step {step + 1}, rank {rank}'s "
                        f"`{name}` differs from single-process training (element {index}: yours "
                        f"{got.ravel()[index]:.6g}, expected {want.ravel()[index]:.6g}).",
                        "the gradients after your code must equal those of the whole global "
                        "batch in one process, on every rank.",
                    )
    return None


def _check_gradients(exercise_id: str, answer, arity: int, extra) -> CheckResult:
    def judge_all(n: int, outcome: list[dict]) -> CheckResult | None:
        for judge in (extra, _gradient_problem, _params_problem):
            problem = judge(exercise_id, n, outcome)  # a CheckResult is falsy when it fails
            if problem is not None:
                return problem
        return None

    return _run(exercise_id, answer, arity, judge_all)


# --- average_gradients ----------------------------------------------------------------------------


def _check_average(answer) -> CheckResult:
    problem = _check_gradients("average_gradients", answer, 2, lambda *_: None)
    return (
        problem
        if problem is not None
        else passed(
            "average_gradients",
            f"With 2, 3 and 4 ranks, after {STEPS} SGD steps on each rank's shard, every parameter "
            "equals single-process training on the whole global batch (tied and frozen "
            "parameters included).",
        )
    )


register(
    Exercise(
        id="average_gradients",
        chapter=CHAPTER,
        title="Average the gradients over ranks, by hand",
        signature=(
            "average_gradients(model, world_size) -> None: after loss.backward() on this rank's "
            "shard, make every parameter's .grad the mean over ranks, in place"
        ),
        launch="run with gu.dist (gloo) on 2, 3 and 4 ranks; compared with one process",
        run=_check_average,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- bucketed_allreduce -----------------------------------------------------------------------


def _bucket_problem(exercise_id: str, n: int, outcome: list[dict]) -> CheckResult | None:
    grads = outcome[0]["baseline_grads"]
    sizes = {name: g.size * 4 for name, g in grads.items() if g is not None}
    total, largest = sum(sizes.values()), max(sizes.values())
    calls = [c for c in outcome[0]["calls"][0] if c[0] in ("all_reduce", "all_reduce_coalesced")]
    others = [
        c for c in outcome[0]["calls"][0] if c[0] not in ("all_reduce", "all_reduce_coalesced")
    ]
    if others:
        return failed(
            exercise_id,
            f"Your function calls dist.{others[0][0]}; this exercise all-reduces buckets.",
            "use dist.all_reduce on each flat bucket.",
        )
    sent = sum(c[1] for c in calls)
    if sent < total:
        reduced = [
            name
            for name, g in grads.items()
            if g is not None and all(_close(r["synced_grads"][name], g) for r in outcome)
        ]
        missing = [name for name in sizes if name not in reduced]
        return failed(
            exercise_id,
            f"With {n} ranks, your all-reduces carried {sent} bytes but the gradients hold "
            f"{total}: the gradients of {', '.join(f'`{m}`' for m in missing)} were never "
            "reduced.",
            "the last bucket is usually not full, and it must be all-reduced too: after the "
            "loop over gradients, flush the bucket that is still open.",
        )
    if sent > total:
        tied = sizes.get("embed.weight", 0)
        if sent - total == tied:
            return failed(
                exercise_id,
                f"With {n} ranks, your all-reduces carried {sent} bytes, {tied} more than the "
                "gradients hold: the tied weight (embedding = output layer) travelled twice.",
                "iterating over modules visits a shared tensor once per module; "
                "`model.parameters()` yields each tensor once.",
            )
        return failed(
            exercise_id,
            f"With {n} ranks, your all-reduces carried {sent} bytes; the gradients hold {total}.",
            "put each gradient in exactly one bucket.",
        )
    too_big = [c[1] for c in calls if c[1] > max(BUCKET_BYTES, largest)]
    if too_big or (len(calls) == 1 and total > BUCKET_BYTES):
        return failed(
            exercise_id,
            f"With bucket_bytes={BUCKET_BYTES}, your function all-reduced "
            f"{len(calls)} bucket(s), one of {max(c[1] for c in calls)} bytes.",
            "a bucket holds at most bucket_bytes (unless one gradient alone is larger): start a "
            "new bucket when the next gradient would not fit.",
        )
    merge = [i for i in range(len(calls) - 1) if calls[i][1] + calls[i + 1][1] <= BUCKET_BYTES]
    if merge:
        kind = (
            "one all-reduce per gradient"
            if len(calls) == len(sizes)
            else f"buckets {merge[0]} and {merge[0] + 1} together fit in bucket_bytes"
        )
        return failed(
            exercise_id,
            f"With bucket_bytes={BUCKET_BYTES}, your function made {len(calls)} all-reduces of "
            f"{[c[1] for c in calls]} bytes: {kind}.",
            "fill each bucket up to bucket_bytes before all-reducing it: fewer, larger messages "
            "are the point of bucketing (each call pays the latency alpha).",
        )
    return None


def _check_buckets(answer) -> CheckResult:
    problem = _check_gradients("bucketed_allreduce", answer, 3, _bucket_problem)
    return (
        problem
        if problem is not None
        else passed(
            "bucketed_allreduce",
            f"With 2, 3 and 4 ranks, buckets of at most {BUCKET_BYTES} bytes, none that could merge, "
            f"and after {STEPS} SGD steps every parameter equals single-process training.",
        )
    )


register(
    Exercise(
        id="bucketed_allreduce",
        chapter=CHAPTER,
        title="Bucketed all-reduce of the gradients",
        signature=(
            "bucketed_allreduce(model, world_size, bucket_bytes) -> None: flatten the gradients "
            "into buckets of at most bucket_bytes, all-reduce each bucket once, average, copy back"
        ),
        launch=f"run with gu.dist (gloo) on 2, 3 and 4 ranks, bucket_bytes={BUCKET_BYTES}",
        run=_check_buckets,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- zero1_optimizer ------------------------------------------------------------------------------


def _found_in(values, pool) -> float:
    """The share of ``values`` (nonzero ones) that occur, within tolerance, in ``pool``."""
    values = values[values != 0]
    if not values.size:
        return 0.0
    pool = np.sort(pool)
    index = np.clip(np.searchsorted(pool, values), 1, len(pool) - 1)
    nearest = np.minimum(np.abs(pool[index] - values), np.abs(pool[index - 1] - values))
    return float(np.mean(nearest <= ATOL + RTOL * np.abs(values)))


def _stepped_with(n: int, outcome: list[dict], names: list[str]) -> CheckResult | None:
    """Judge the gradients each rank's Adam stepped with (recorded before its first step):
    the mean over ranks, not their sum, the mean / n, or the rank's own gradient. Adam's
    m / (sqrt(v) + eps) nearly cancels a constant factor, so the parameters alone hide it."""
    exercise_id = "zero1_optimizer"
    mean = np.concatenate([outcome[0]["baseline_grads"][k].ravel() for k in names])
    for rank, result in enumerate(outcome):
        seen = result.get("optimizer_grads")
        if not seen:
            continue
        values = np.concatenate(seen)
        if _found_in(values, mean) >= 0.98:
            continue
        local = np.concatenate([result["local_grads"][k].ravel() for k in names])
        what = f"With {n} ranks, the gradients rank {rank}'s Adam stepped with are"
        if _found_in(values, n * mean) >= 0.98:
            return failed(
                exercise_id,
                f"{what} {n} times the mean over ranks: the sum. (The parameters come out "
                "nearly right, because Adam divides by the square root of its second moment, "
                "but eps, weight decay and every other optimizer do not cancel the factor.)",
                "after `dist.all_reduce` (or a reduce-scatter), which sums, divide by "
                "world_size before the optimizer step: the mean gradient.",
            )
        if _found_in(values, mean / n) >= 0.98:
            return failed(
                exercise_id,
                f"{what} the mean divided by world_size once more (1/{n} of it).",
                "divide by world_size once, after the sum: the mean gradient.",
            )
        if _found_in(values, local) >= 0.98:
            return failed(
                exercise_id,
                f"{what} its own, from its shard of the batch only, not the mean over ranks.",
                "update your shard with the MEAN gradient over ranks: all-reduce the gradients "
                "(or reduce-scatter them) and divide by world_size before the optimizer step.",
            )
    return None


def _zero_problem(n: int, outcome: list[dict]) -> CheckResult | None:
    exercise_id = "zero1_optimizer"
    if "no_step" in outcome[0]:
        return failed(
            exercise_id,
            f"ZeRO1(params, rank, world_size, lr) gave a {outcome[0]['no_step']}, which has no "
            "step() method.",
            "write a class with `def __init__(self, params, rank, world_size, lr):` and "
            "`def step(self):`, and pass the class itself.",
        )
    initial = outcome[0]["initial"]
    names = [k for k, g in outcome[0]["baseline_grads"].items() if g is not None]
    trainable = sum(initial[k].size for k in names)
    problem = _stepped_with(n, outcome, names)
    if problem is not None:
        return problem
    for step in range(STEPS):
        for name in initial:
            gots = [r["params"][step][name] for r in outcome]
            want = outcome[0]["baseline"][step][name]
            if all(_close(g, want) for g in gots):
                continue
            where = f"With {n} ranks, after optimizer step {step + 1}, `{name}`"
            if name not in names:
                return failed(
                    exercise_id,
                    f"{where} changed, and it is frozen.",
                    "leave frozen parameters (requires_grad=False) out of the optimizer.",
                )
            differ = [r for r in range(n) if not _close(gots[r], gots[0])]
            if differ:
                stale = [r for r in range(n) if np.any(gots[r] == initial[name])]
                if step == 0 and stale:
                    return failed(
                        exercise_id,
                        f"{where} differs between ranks: rank {stale[0]} still holds initial "
                        "values where another rank updated them.",
                        "each rank updates only its shard, so afterwards the ranks must share "
                        "their shards: all-gather the updated shards (or broadcast each from its "
                        "owner) into every rank's parameters.",
                    )
                return failed(
                    exercise_id,
                    f"{where} differs between rank 0 and rank {differ[0]}.",
                    "after each step every rank must hold the same parameters.",
                )
            if step == 0:
                flat_initial = np.concatenate([initial[k].ravel() for k in names])
                flat_got = np.concatenate([outcome[0]["params"][0][k].ravel() for k in names])
                flat_want = np.concatenate([outcome[0]["baseline"][0][k].ravel() for k in names])
                unchanged = np.flatnonzero(flat_got == flat_initial)
                right = np.isclose(flat_got, flat_want, rtol=RTOL, atol=ATOL)
                first_wrong = int(np.argmin(right)) if not right.all() else trainable
                if (
                    0 < first_wrong <= -(-trainable // n)
                    and right[:first_wrong].all()
                    and (flat_got[first_wrong:] == flat_initial[first_wrong:]).all()
                ):
                    return failed(
                        exercise_id,
                        f"{where} is the same on every rank, but only the first {first_wrong} "
                        f"of the {trainable} trainable elements (rank 0's shard) were updated: "
                        "every rank holds rank 0's copy, where the other shards still have "
                        "their initial values.",
                        "each rank updates only its own shard, so each shard must come from its "
                        "owner: all-gather the shards (`dist.all_gather`), or broadcast shard r "
                        "from rank r (`src=r`), not everything from rank 0.",
                    )
                if (
                    trainable % n
                    and unchanged.size
                    and unchanged.min() >= trainable - trainable % n
                ):
                    return failed(
                        exercise_id,
                        f"{where} is wrong: the last {unchanged.size} of the {trainable} trainable "
                        f"elements were never updated.",
                        f"{trainable} elements do not divide by {n} ranks, so shards differ in "
                        "size: `torch.tensor_split(flat, world_size)` (or gu.data_parallel."
                        "shard_range) gives every element to exactly one rank.",
                    )
            return failed(
                exercise_id,
                f"{where} is the same on every rank but differs from single-process Adam.",
                "update your shard with the MEAN gradient over ranks: all-reduce the gradients "
                "(or reduce-scatter them) and divide by world_size before the optimizer step.",
            )
    states = [r["state"] for r in outcome]
    if any(s is None for s in states):
        return failed(
            exercise_id,
            "The parameters are right, but the checker found no torch optimizer in your object, "
            "so it cannot count the optimizer state each rank keeps.",
            "keep this rank's torch.optim.Adam in an attribute, e.g. `self.optimizer`.",
        )
    full = 2 * trainable  # Adam: two moments per parameter
    if max(states) >= full:
        return failed(
            exercise_id,
            f"With {n} ranks, a rank holds {max(states)} elements of Adam state; without ZeRO it "
            f"would hold {full} (two moments of {trainable} parameters): the state is not "
            "sharded.",
            "give this rank's Adam only this rank's shard of the parameters, e.g. "
            "`torch.optim.Adam([shard], lr)` where shard is a slice of the flattened parameters.",
        )
    if not full <= sum(states) <= full + 2 * (n - 1):  # padding to a multiple of n is fine
        return failed(
            exercise_id,
            f"With {n} ranks, the ranks hold {sum(states)} elements of Adam state in all, "
            f"not {full} (two moments of each of the {trainable} trainable parameters, once; "
            "padding aside).",
            "each trainable parameter belongs to exactly one rank's shard: count the tied weight "
            "once (`model.parameters()` yields it once) and leave frozen parameters out.",
        )
    return None


def _check_zero(answer) -> CheckResult:
    problem = _run("zero1_optimizer", answer, 4, _zero_problem)
    if problem is not None:
        return problem
    return passed(
        "zero1_optimizer",
        f"With 2, 3 and 4 ranks, after {STEPS} Adam steps every rank's parameters equal "
        "single-process Adam, and each rank keeps Adam state for only its own shard.",
    )


register(
    Exercise(
        id="zero1_optimizer",
        chapter=CHAPTER,
        title="ZeRO-1: shard Adam's state over the ranks",
        signature=(
            "ZeRO1(params, rank, world_size, lr) with a method step(): called after "
            "loss.backward() on this rank's shard; averages gradients, updates this rank's shard "
            "with its own torch.optim.Adam, then shares the updated parameters with every rank"
        ),
        launch="run with gu.dist (gloo) on 2, 3 and 4 ranks; compared with torch.optim.Adam",
        run=_check_zero,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- memory and traffic questions ---------------------------------------------------------------

PSI, N_D = 7.5e9, 64  # the ZeRO paper's Figure 1 example: 7.5B parameters on 64 GPUs
ZERO3_MICRO_BATCHES = 4  # lab 09 question 5: gradient accumulation over 4 micro-batches


#: The ZeRO-2 question: the paper's 7.5B model on GPUs of 24 GB (1e9 bytes), fewest GPUs.
ZERO2_PSI, ZERO2_MEMORY = 7.5e9, 24e9


def _zero2_answer() -> NumericAnswer:
    # ZeRO paper (Rajbhandari et al. 2020), section 5 and Figure 1: P_os+g = 2 Psi + (2 + K) Psi / N_d
    # per GPU; fits when 2 Psi + (2 + K) Psi / N_d <= memory, so N_d >= (2 + K) Psi / (memory - 2 Psi).
    k, psi, memory = 12, ZERO2_PSI, ZERO2_MEMORY
    exact = (2 + k) * psi / (memory - 2 * psi)
    fewest = float(np.ceil(exact))
    below = fewest - 1
    return NumericAnswer(
        expected=fewest,
        unit="GPUs",
        rel_tol=0.001,
        mistakes={
            exact: "round up: a number of GPUs is a whole number, and fewer would not fit.",
            below: (
                f"with {below:g} GPUs each holds 2 Psi + 14 Psi / {below:g} = "
                f"{(2 * psi + (2 + k) * psi / below) / 1e9:.2f} GB, over 24: round up."
            ),
            float(np.ceil((2 + k) * psi / (memory / 1e9 * 2**30 - 2 * psi))): (
                "the question counts GB, 1e9 bytes, as the paper does; you used GiB (2**30)."
            ),
            float(np.ceil((2 + 2 + k) * psi / memory)): (
                "that is ZeRO-3, where the parameters are sharded too; in ZeRO-2 every GPU keeps "
                "all fp16 parameters (2 Psi), which no number of GPUs shrinks."
            ),
        },
        hint=(
            "per GPU, ZeRO-2 keeps 2 Psi bytes of fp16 parameters whole and (2 + K) Psi / N_d of "
            "gradients and optimizer states (K = 12): find the smallest N_d for which that is "
            "at most 24e9 bytes."
        ),
    )


register(
    numeric_exercise(
        id="zero2_memory_gb",
        chapter=CHAPTER,
        title="The fewest GPUs for ZeRO-2",
        question=(
            "Mixed-precision Adam (K = 12 bytes of optimizer state per parameter) on the ZeRO "
            "paper's 7.5-billion-parameter model, with ZeRO stage 2 (optimizer states and "
            "gradients sharded), on GPUs of 24 GB (24e9 bytes) each. Counting model states "
            "only, what is the smallest number of data-parallel GPUs N_d with which they fit?"
        ),
        answer=_zero2_answer,
    )
)


def _zero3_traffic_answer() -> NumericAnswer:
    # ZeRO paper, section 7.2: ZeRO-3 moves 3 Psi per pass (two parameter all-gathers, one
    # gradient reduce-scatter) against 2 Psi for data parallelism; with gradient accumulation it
    # does so on every micro-batch (chapter 09's traffic table); a ring moves (n - 1)/n of each.
    nbytes, m = 2 * PSI, ZERO3_MICRO_BATCHES
    fraction = (N_D - 1) / N_D
    one = nbytes * fraction / 1e9  # GB each GPU sends in one all-gather or reduce-scatter
    return NumericAnswer(
        expected=3 * m * one,
        unit="GB",
        mistakes={
            3 * one: (
                "that is one micro-batch's traffic. Gradient accumulation does not amortise "
                "ZeRO-3: each GPU keeps only its shard of the parameters, so every micro-batch "
                "gathers them again, forward and backward, and reduce-scatters its gradients."
            ),
            2 * one: (
                "that is data parallelism's all-reduce (2 Psi), paid once per step after the "
                "last micro-batch; ZeRO-3 pays its collectives on every micro-batch."
            ),
            (2 * m + 1) * one: (
                "the parameters are gathered twice per micro-batch, right; but here each GPU "
                "keeps only its shard of the gradients, so every micro-batch's gradients are "
                "reduce-scattered as they are produced. (Keeping full gradients until the last "
                "micro-batch, as FSDP can, saves that traffic at the cost of their memory.)"
            ),
            2 * m * one: (
                "that is 8 collectives of 2 Psi bytes: either the two all-gathers of every "
                "micro-batch without its reduce-scatter, or an all-reduce of the gradients on "
                "every micro-batch. ZeRO-3 runs three per micro-batch: all-gather forward, "
                "all-gather backward, reduce-scatter of the gradients."
            ),
            3 * m * one * 1e9 / 2**30: "GB here is 1e9 bytes, not 2**30.",
            3 * m * nbytes / 1e9: (
                "close: each GPU already holds its own 1/64 of every all-gather and "
                "reduce-scatter, so it sends (n - 1)/n of the data, not all of it."
            ),
            2 * 3 * m * one: (
                "that is twice the answer: either bytes sent and received counted together (each "
                "GPU receives as much as it sends; the question asks what it sends), or 4-byte "
                "values where the parameters and gradients are bf16, 2 bytes."
            ),
        },
        hint=(
            "which collectives does ZeRO-3 run for one micro-batch (chapter 09, its traffic "
            "table), how many bytes does each GPU send in each of them on a ring, and how many "
            "times per step?"
        ),
    )


register(
    numeric_exercise(
        id="zero3_traffic_gb",
        chapter=CHAPTER,
        title="What ZeRO-3 sends per step",
        question=(
            "A 7.5-billion-parameter model with bf16 parameters and gradients is trained with "
            "ZeRO-3 over 64 GPUs, ring collectives, and 4 micro-batches of gradient accumulation "
            "per optimizer step; each GPU keeps only its shard of the parameters and of the "
            "gradients throughout. How many GB (1e9 bytes) does each GPU send per optimizer step?"
        ),
        answer=_zero3_traffic_answer,
    )
)
