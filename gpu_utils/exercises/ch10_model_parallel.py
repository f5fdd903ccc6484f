"""Exercises of lab 10, model parallelism (chapter 10): column- and row-parallel linear layers, a
tensor-parallel MLP trained for several steps, a 1F1B pipeline schedule, and memory and pipeline
questions.

The layer exercises run the learner's code in 2, 3 and 4 real processes (``gu.dist``, gloo) and
compare every rank's output and gradients with one process computing the whole layer on the
same random data, on shapes that the number of ranks divides and on shapes it does not (shards
as ``torch.tensor_split`` cuts them). Hints come from what the results show: outputs whose sum
over the ranks is the answer (a missing all-reduce), an answer off by (t - 1) x bias (a bias
added on every rank), an input gradient that is one rank's part of the answer (a missing f).
The schedule exercise is simulated by ``gu.pipeline``: dependencies, activations in flight and
the makespan are compared with the reference 1F1B schedule.
"""

from __future__ import annotations

import copy
import inspect
import re

import numpy as np

# torch loads with the chapter, before the checker's worker saves its state: a check that
# first imported it would make the worker start afresh for the next check (5-10 s each).
import torch

from ..facts import specs
from ..many_gpus import pipeline
from . import _ranks
from ._numeric import NumericAnswer, numeric_exercise
from ._ranks import source_line
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "10_model_parallel"
WORLD_SIZES = (2, 3, 4)
#: Seconds on the clock per multi-rank run (loops and deadlocks are stopped sooner, see _ranks).
RUN_TIMEOUT = _ranks.RUN_TIMEOUT
#: Seconds a layer check may take in the checker's process (a backstop, see _ranks).
CHECK_TIME_LIMIT = _ranks.check_time_limit(WORLD_SIZES)
SEED = 10
RTOL, ATOL = 1e-4, 1e-5
BATCH = 5
#: (in_features, out_features) per case: the first divisible by 2, 3 and 4, then not.
LAYER_SHAPES = ((12, 12), (7, 10), (10, 7))
#: (d_model, hidden) of the MLP: hidden 12 divides by 2, 3, 4; 10 does not divide by 3 or 4.
MLP_SHAPES = ((6, 12), (5, 10))
MLP_STEPS, MLP_LR = 3, 0.1
_TAG = "CH10"


# --- running the learner's code in ranks -------------------------------------------------------


def _learner_line(error, answer_names: tuple[str, ...]) -> str:
    import traceback

    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.name in answer_names]
    if not frames:
        return ""
    last = frames[-1]
    source = (last.line or "").strip()
    return f" (line {last.lineno} of {last.name}" + (f": `{source}`)" if source else ")")


def _reraise(error, case: int, names: tuple[str, ...]):
    """Re-raise a learner's exception with the case and its line, for the checker to read."""
    raise RuntimeError(
        f"{_TAG}|{case}|{type(error).__name__}|{_learner_line(error, names)}|{error}"
    ) from None


def _as_array(value):
    """A float64 NumPy array, or a string that says what the value was."""

    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return value.detach().double().cpu().numpy()
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__}"
    return type(value).__name__


def _all_agree(ok: bool) -> bool:
    """True on every rank when ``ok`` holds on every rank (so that all run backward, or none)."""
    import torch.distributed as dist

    flag = torch.tensor([int(ok)])
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _layer_rank(rank, world_size, exercise, answer, shapes, seed):
    """One rank: for each shape, the single-process layer, then the learner's, with gradients."""
    import torch.nn.functional as F

    from gpu_utils.many_gpus.tensor_parallel import shard

    results = []
    for case, (d_in, d_out) in enumerate(shapes):
        g = torch.Generator().manual_seed(seed * 1000 + case * 10 + world_size)
        x = torch.randn(BATCH, d_in, generator=g)
        w = torch.randn(d_out, d_in, generator=g) / d_in**0.5
        b = torch.randn(d_out, generator=g)
        grad_out = torch.randn(BATCH, d_out, generator=g)
        ref = [t.clone().requires_grad_() for t in (x, w, b)]
        y = F.linear(*ref)
        y.backward(grad_out)
        cols, rows = shard(d_in, rank, world_size), shard(d_out, rank, world_size)
        if exercise == "column_parallel_linear":
            mine_x = x.clone().requires_grad_()
            expected_y, my_grad_out = y.detach()[:, rows], grad_out[:, rows]
            expected_x_grad = ref[0].grad
        else:
            mine_x = x[:, cols].clone().requires_grad_()
            expected_y, my_grad_out = y.detach(), grad_out
            expected_x_grad = ref[0].grad[:, cols]
        mine_w, mine_b = w.clone().requires_grad_(), b.clone().requires_grad_()
        try:
            got = answer(mine_x, mine_w, mine_b, rank, world_size)
        except Exception as error:
            _reraise(error, case, (getattr(answer, "__name__", ""),))
        result = {
            "shape": (d_in, d_out),
            "expected": expected_y.double().numpy(),
            "got": _as_array(got),
            "bias": b.double().numpy(),
            "rows": (rows.start, rows.stop),
            "cols": (cols.start, cols.stop),
        }
        if exercise == "column_parallel_linear" and d_in == d_out:
            result["untransposed"] = (x @ w[:, rows] + b[rows]).double().numpy()
        usable = isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected_y.shape)
        if _all_agree(usable and got.requires_grad):
            try:
                got.backward(my_grad_out)
            except Exception as error:
                _reraise(error, case, (getattr(answer, "__name__", ""), "backward"))
            result["x_grad"] = _as_array(mine_x.grad)
            result["expected_x_grad"] = expected_x_grad.double().numpy()
            result["w_grad"] = _as_array(mine_w.grad)
            result["expected_w_grad"] = ref[1].grad.double().numpy()
            result["b_grad"] = _as_array(mine_b.grad)
            result["expected_b_grad"] = ref[2].grad.double().numpy()
        elif usable and not got.requires_grad:
            result["no_graph"] = True
        results.append(result)
        if "x_grad" not in result:
            break
    return results


def _mlp_rank(rank, world_size, answer, shapes, seed):
    """One rank: the single-process MLP and the learner's trained side by side with SGD."""
    import torch.nn.functional as F

    results = []
    for case, (d_model, hidden) in enumerate(shapes):
        g = torch.Generator().manual_seed(seed * 1000 + case * 10 + world_size)
        fc1, fc2 = torch.nn.Linear(d_model, hidden), torch.nn.Linear(hidden, d_model)
        with torch.no_grad():
            for p in (*fc1.parameters(), *fc2.parameters()):
                p.copy_(torch.randn(p.shape, generator=g) / 2)
        inputs = [torch.randn(4, 3, d_model, generator=g) for _ in range(MLP_STEPS + 1)]
        targets = [torch.randn(4, 3, d_model, generator=g) for _ in range(MLP_STEPS)]
        ref1, ref2 = copy.deepcopy(fc1), copy.deepcopy(fc2)
        ref_opt = torch.optim.SGD([*ref1.parameters(), *ref2.parameters()], lr=MLP_LR)
        expected, x_grad_expected = [], None
        for step in range(MLP_STEPS):
            x = inputs[step].clone().requires_grad_(step == 0)
            y = ref2(F.gelu(ref1(x)))
            expected.append(y.detach().double().numpy())
            ref_opt.zero_grad()
            F.mse_loss(y, targets[step]).backward()
            if step == 0:
                x_grad_expected = x.grad.double().numpy()
            ref_opt.step()
        with torch.no_grad():
            expected.append(ref2(F.gelu(ref1(inputs[-1]))).double().numpy())
        names = (getattr(answer, "__name__", ""), "__init__", "forward")
        try:
            model = answer(copy.deepcopy(fc1), copy.deepcopy(fc2), rank, world_size)
        except Exception as error:
            _reraise(error, case, names)
        params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
        result = {
            "shape": (d_model, hidden),
            "module": isinstance(model, torch.nn.Module),
            "n_params": sum(p.numel() for p in params),
            "expected": expected,
            "x_grad_expected": x_grad_expected,
            "bias": fc2.bias.detach().double().numpy(),
            "got": [],
        }
        results.append(result)
        if not params:
            break
        opt = torch.optim.SGD(params, lr=MLP_LR)
        for step in range(MLP_STEPS + 1):
            last = step == MLP_STEPS
            x = inputs[step].clone().requires_grad_(step == 0)
            try:
                with torch.set_grad_enabled(not last):
                    y = model(x)
            except Exception as error:
                _reraise(error, case, names)
            got = _as_array(y)
            result["got"].append(got)
            if last:
                break
            usable = not isinstance(got, str) and got.shape == expected[step].shape
            if not _all_agree(usable and y.requires_grad):
                if usable and not y.requires_grad:
                    result["no_graph"] = True
                break
            opt.zero_grad()
            try:
                F.mse_loss(y, targets[step]).backward()
            except Exception as error:
                _reraise(error, case, names)
            if step == 0:
                result["x_grad"] = _as_array(x.grad)
                result["no_grad"] = [
                    tuple(p.shape) for p in params if p.grad is None and p.requires_grad
                ]
                result["grads"] = [
                    p.grad.detach().double().numpy() for p in params if p.grad is not None
                ]
            opt.step()
        if len(result["got"]) < MLP_STEPS + 1:
            break
    return results


def _run(exercise_id, rank_fn, judge, *args) -> CheckResult | None:
    """Run ``rank_fn`` on each world size and judge its outcome at once; the first problem."""
    from ..many_gpus import data_parallel

    data_parallel.preload_optimizers()  # the MLP's SGD: torch._dynamo once, not in every rank
    return _ranks.run_world_sizes(
        exercise_id,
        args[1] if isinstance(args[0], str) else args[0],
        rank_fn,
        args,
        lambda n, outcome: judge({n: outcome}),
        world_sizes=WORLD_SIZES,
        error_result=_error_result,
        deadlock_hint=DEADLOCK_HINT,
        timeout=RUN_TIMEOUT,
    )


DEADLOCK_HINT = (
    "every rank must call the same collectives in the same order: an all-reduce inside "
    "`if rank == 0:` leaves the other ranks waiting, and so does one rank's shape error."
)
TRANSPOSE = (
    " weight is stored (out_features, in_features), as nn.Linear keeps it, so the product is "
    "`x @ w.T` (or `F.linear(x, w, b)`, which transposes for you)."
)


def _error_result(exercise_id: str, n: int, error, answer=None) -> CheckResult:
    """The verdict on a RankError (an exception or a crash in one rank)."""
    message = error.exc_message
    case, kind, line = None, error.exc_type, ""
    if message.startswith(f"{_TAG}|"):
        _, case, kind, line, message = message.split("|", 4)
    if kind == "NotImplementedError":
        return not_attempted(exercise_id)
    if line and "`" not in line and answer is not None:  # the rank had no copy of the cell
        found = re.search(r"line (\d+)", line)
        source = source_line(answer, int(found.group(1))) if found else ""
        line = line[:-1] + f": `{source}`)" if source else line
    if kind == "exited":
        return failed(
            exercise_id,
            f"With {n} ranks, rank {error.rank} {message}",
            "gloo stops a process whose collective does not match the other ranks' (a "
            "different size, or a different collective at that point): every rank must call "
            "the same collectives in the same order, on tensors of the same shape. With shards "
            "of unequal size (when world_size does not divide a dimension), all-reduce only "
            "tensors whose shape is the same on every rank.",
        )
    where = f"With {n} ranks, rank {error.rank} raised {kind}{line}: {message}"
    shapes = "shapes cannot be multiplied" in message or "must match the size" in message
    if shapes and exercise_id == "column_parallel_linear":
        return failed(
            exercise_id,
            where,
            "column-parallel cuts weight by rows (dim 0, the output features) and bias the same "
            "way; x stays whole: `weight[rows]`, `bias[rows]` with rows from tensor_split."
            + TRANSPOSE,
        )
    if shapes and exercise_id == "row_parallel_linear":
        uneven = case == "1" or case == "2"
        return failed(
            exercise_id,
            where,
            (
                "x_part has this rank's input features as torch.tensor_split cuts them; when "
                "world_size does not divide in_features, chunk and a fixed width give other "
                "sizes. Take `weight[:, cols]` with the same bounds as tensor_split."
            )
            if uneven
            else (
                "row-parallel cuts weight by columns (dim 1, the input features, matching "
                "x_part): `weight[:, cols]`; the bias is not cut." + TRANSPOSE
            ),
        )
    if shapes:
        return failed(
            exercise_id,
            where,
            "fc1 is column-parallel (its weight's rows and its bias cut), fc2 row-parallel "
            "(its weight's columns cut, its bias whole); use tensor_split's bounds." + TRANSPOSE,
        )
    if "Tensors must have same number" in message or "invalid tensor size" in message:
        return failed(
            exercise_id,
            where,
            "a collective got tensors of different sizes on different ranks: with uneven "
            "shards, only all-reduce tensors whose shape is the same on every rank.",
        )
    return failed(exercise_id, where, _ranks.RUN_IT_YOURSELF)


def _signature_problem(exercise_id: str, answer, args: tuple, text: str) -> CheckResult | None:
    if not callable(answer):
        return failed(
            exercise_id,
            f"Expected a function (or class), got {type(answer).__name__}.",
            "pass it itself: check(..., my_function), not my_function(...).",
        )
    try:
        inspect.signature(answer).bind(*args)
    except TypeError:
        return failed(exercise_id, f"It must take the arguments {text}.", f"define it as {text}.")
    except ValueError:
        pass
    return None


def _close(got, expected) -> bool:
    return got.shape == expected.shape and np.allclose(got, expected, rtol=RTOL, atol=ATOL)


def _first_wrong(got, expected) -> str:
    bad = ~np.isclose(got, expected, rtol=RTOL, atol=ATOL)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"element {index}: yours {got[index]:.5g}, expected {expected[index]:.5g}"


def _returned(exercise_id: str, n: int, rank: int, got, shape: tuple, what: str):
    if isinstance(got, str):
        if got == "None":
            return failed(
                exercise_id,
                f"With {n} ranks, your function returned None on rank {rank}.",
                f"end it with `return ...`: {what}.",
            )
        return failed(
            exercise_id,
            f"With {n} ranks, rank {rank} returned {got}, not a tensor.",
            f"return one torch tensor: {what}.",
        )
    return None


# --- column_parallel_linear --------------------------------------------------------------------

F_HINT = (
    "x's gradient on each rank is only this rank's part (from its output features). The "
    "operator f of Megatron-LM is the identity forward and an all-reduce of the gradient "
    "backward: apply it to x, `x = gu.tensor_parallel.copy_to_parallel(x)`, before the matmul."
)


def _column_judge(outcomes: dict) -> CheckResult | None:
    eid = "column_parallel_linear"
    for n, ranks in outcomes.items():
        for case in range(len(ranks[0])):
            cases = [r[case] for r in ranks]
            for rank, c in enumerate(cases):
                expected, got = c["expected"], c["got"]
                problem = _returned(eid, n, rank, got, expected.shape, "this rank's columns of y")
                if problem is not None:
                    return problem
                d_in, d_out = c["shape"]
                if got.shape != expected.shape:
                    what = (
                        f"With {n} ranks and weight of shape ({d_out}, {d_in}), rank {rank} "
                        f"returned shape {got.shape}; its part of y has shape {expected.shape}."
                    )
                    if got.shape == (BATCH, d_out):
                        hint = (
                            "you returned all output features: keep only this rank's, the rows "
                            "`torch.tensor_split(torch.arange(out_features), world_size)[rank]` "
                            "of weight and bias."
                        )
                    elif got.ndim == 2 and got.shape[0] == BATCH and d_out % n:
                        hint = (
                            f"{d_out} output features over {n} ranks do not divide evenly: cut "
                            "them as torch.tensor_split does (sizes differ by at most one, the "
                            "larger first), not with chunk or a fixed width."
                        )
                    else:
                        hint = "return this rank's output features: shape (batch, its share)."
                    return failed(eid, what, hint)
                if not _close(got, expected):
                    what = f"With {n} ranks, rank {rank}'s output is wrong at {_first_wrong(got, expected)}."
                    lo, hi = c["rows"]
                    no_bias = expected - c["bias"][lo:hi]
                    if _close(got, no_bias):
                        return failed(
                            eid, what, "the bias is missing: add this rank's slice of it."
                        )
                    if "untransposed" in c and _close(got, c["untransposed"]):
                        return failed(
                            eid,
                            what,
                            "you multiplied by this rank's columns of weight, untransposed:"
                            + TRANSPOSE
                            + " Cut the rows (output features), `weight[rows]`, then transpose.",
                        )
                    return failed(
                        eid,
                        what,
                        "rank r's output is y[:, rows] with rows = this rank's output features; "
                        "no collective is needed in the forward pass of a column-parallel layer.",
                    )
            if any("no_graph" in c for c in cases):
                return failed(
                    eid,
                    f"With {n} ranks your output has no autograd graph (requires_grad is False).",
                    "do not detach or wrap the computation in torch.no_grad(): the checker "
                    "back-propagates through your output.",
                )
            problem = _grad_judge(eid, n, cases)
            if problem is not None:
                return problem
    return None


def _grad_judge(eid: str, n: int, cases: list[dict]) -> CheckResult | None:
    """Compare the gradients of x, weight and bias with the single process's."""
    xs = [c["x_grad"] for c in cases]
    if any(isinstance(x, str) for x in xs):
        return failed(
            eid,
            f"With {n} ranks, x got no gradient.",
            "compute the output from x itself (not a detached copy) so that gradients reach it.",
        )
    expected = [c["expected_x_grad"] for c in cases]
    for rank, (got, want) in enumerate(zip(xs, expected, strict=True)):
        if _close(got, want):
            continue
        what = (
            f"With {n} ranks, the forward pass is right, but rank {rank}'s gradient of x is "
            f"wrong at {_first_wrong(got, want)}."
        )
        if eid == "column_parallel_linear":
            if got.shape == want.shape and _close(sum(xs), want):
                return failed(eid, what, F_HINT)
            if _close(got, n * want):
                return failed(
                    eid, what, "x's gradient is world_size times too large: all-reduce it once."
                )
        elif _close(got, n * want):
            return failed(
                eid,
                what,
                "x_part's gradient is world_size times too large: the operator g is an "
                "all-reduce forward but the identity backward (each rank already has the "
                "whole gradient of y).",
            )
        return failed(eid, what)
    for name in ("w", "b"):
        for rank, c in enumerate(cases):
            got, want = c[f"{name}_grad"], c[f"expected_{name}_grad"]
            label = "weight" if name == "w" else "bias"
            if isinstance(got, str):
                if name == "b" and eid == "row_parallel_linear":
                    return failed(
                        eid,
                        f"With {n} ranks, bias got no gradient on rank {rank}.",
                        "add the bias (once, after the all-reduce) on every rank, so that every "
                        "rank's copy is trained.",
                    )
                return failed(
                    eid,
                    f"With {n} ranks, {label} got no gradient on rank {rank}.",
                    f"slice {label} itself (`{label}[...]`), without .detach() or .data, so "
                    "that gradients reach it.",
                )
            lo, hi = c["rows"] if eid == "column_parallel_linear" else (None, None)
            if eid == "column_parallel_linear":
                mask = np.zeros(want.shape[0], bool)
                mask[lo:hi] = True
                want = np.where(mask.reshape(-1, *[1] * (want.ndim - 1)), want, 0.0)
            elif name == "w":
                clo, chi = c["cols"]
                mask = np.zeros(want.shape[1], bool)
                mask[clo:chi] = True
                want = np.where(mask, want, 0.0)
            if not _close(got, want):
                what = (
                    f"With {n} ranks, rank {rank}'s gradient of {label} is wrong at "
                    f"{_first_wrong(got, want)}."
                )
                if name == "b" and eid == "row_parallel_linear" and _close(got, want / n):
                    return failed(
                        eid,
                        what + f" It is 1/{n} of the bias's gradient.",
                        "the forward pass is right, but a bias divided by world_size on every "
                        "rank and summed by the all-reduce trains each rank's copy with 1/n of "
                        "its gradient: add the whole bias once, after the all-reduce.",
                    )
                if _close(got, n * want):
                    return failed(
                        eid,
                        what + f" It is {n} times the single process's.",
                        f"the {label} gradient was summed over the ranks: each rank's gradient "
                        "is already its own part of the whole, so no collective is needed for it.",
                    )
                return failed(
                    eid,
                    what,
                    f"each rank's {label} gradient should equal the single process's in the "
                    "part this rank uses (and be zero elsewhere): use the slice of the "
                    f"{label} that belongs to this rank, once, without scaling it.",
                )
    return None


def _check_column(answer) -> CheckResult:
    eid = "column_parallel_linear"
    text = "(x, weight, bias, rank, world_size)"
    problem = _signature_problem(eid, answer, (None, None, None, 0, 2), text)
    if problem is not None:
        return problem
    problem = _run(eid, _layer_rank, _column_judge, eid, answer, LAYER_SHAPES, SEED)
    return (
        problem
        if problem is not None
        else passed(
            eid,
            "Outputs and the gradients of x, weight and bias equal one process's, for 2, 3 and 4 "
            "ranks, with output features that the ranks divide and that they do not.",
        )
    )


register(
    Exercise(
        id="column_parallel_linear",
        chapter=CHAPTER,
        title="A column-parallel linear layer (Megatron-LM's first matmul)",
        signature=(
            "column_parallel_linear(x, weight, bias, rank, world_size) -> tensor: x (batch, in) "
            "is the same on every rank, weight (out, in) and bias (out,) are the full layer's; "
            "return this rank's output features of x @ weight.T + bias, cut as "
            "torch.tensor_split cuts range(out), with gradients reaching x, weight and bias"
        ),
        launch=(
            f"run with gu.dist (gloo) on {', '.join(map(str, WORLD_SIZES))} ranks; compared "
            "with one process's output and gradients"
        ),
        run=_check_column,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- row_parallel_linear -----------------------------------------------------------------------

G_HINT = (
    "each rank returned only its partial sum x_part @ weight[:, cols].T: their sum over the "
    "ranks is the answer. The operator g of Megatron-LM all-reduces it in the forward pass: "
    "`y = gu.tensor_parallel.reduce_from_parallel(partial)`, then add the bias."
)
BIAS_HINT = (
    "your output is the answer plus (world_size - 1) x bias: the bias was added on every rank "
    "before the sum. Add it once, after the all-reduce."
)


def _row_values_hint(cases: list[dict], n: int, generic: str | None = None) -> str:
    got = [c["got"] for c in cases]
    y, b = cases[0]["expected"], cases[0]["bias"]
    same = all(np.allclose(g, got[0], rtol=RTOL, atol=ATOL) for g in got)
    if same:
        if _close(got[0], y + (n - 1) * b):
            return BIAS_HINT
        if _close(got[0], (y - b) / n + b) or _close(got[0], (y + (n - 1) * b) / n):
            return (
                "you averaged: the all-reduce must sum the partial products (op=SUM), not "
                "average them."
            )
        if _close(got[0], y - b):
            return "the bias is missing: add it once, after the all-reduce."
    elif any(_close(sum(got), y + k * b) for k in (n - 1, -1, 0)):
        return G_HINT
    if generic is not None:
        return generic
    return (
        "y = (sum over ranks of x_part @ weight[:, cols].T) + bias, the same on every rank, with "
        "cols this rank's input features."
    )


def _row_judge(outcomes: dict) -> CheckResult | None:
    eid = "row_parallel_linear"
    for n, ranks in outcomes.items():
        for case in range(len(ranks[0])):
            cases = [r[case] for r in ranks]
            for rank, c in enumerate(cases):
                expected, got = c["expected"], c["got"]
                problem = _returned(eid, n, rank, got, expected.shape, "the whole y")
                if problem is not None:
                    return problem
                if got.shape != expected.shape:
                    return failed(
                        eid,
                        f"With {n} ranks, rank {rank} returned shape {got.shape}, not "
                        f"{expected.shape}.",
                        "every rank returns the whole output, all out_features of it.",
                    )
            for rank, c in enumerate(cases):
                if not _close(c["got"], c["expected"]):
                    what = (
                        f"With {n} ranks, rank {rank}'s output is wrong at "
                        f"{_first_wrong(c['got'], c['expected'])}."
                    )
                    return failed(eid, what, _row_values_hint(cases, n))
            if any("no_graph" in c for c in cases):
                return failed(
                    eid,
                    f"With {n} ranks your output has no autograd graph (requires_grad is False).",
                    "do not detach or wrap the computation in torch.no_grad().",
                )
            problem = _grad_judge(eid, n, cases)
            if problem is not None:
                return problem
    return None


def _check_row(answer) -> CheckResult:
    eid = "row_parallel_linear"
    text = "(x_part, weight, bias, rank, world_size)"
    problem = _signature_problem(eid, answer, (None, None, None, 0, 2), text)
    if problem is not None:
        return problem
    problem = _run(eid, _layer_rank, _row_judge, eid, answer, LAYER_SHAPES, SEED)
    return (
        problem
        if problem is not None
        else passed(
            eid,
            "Every rank's output and the gradients of x_part, weight and bias equal one process's, "
            "for 2, 3 and 4 ranks, with input features that the ranks divide and that they do not.",
        )
    )


register(
    Exercise(
        id="row_parallel_linear",
        chapter=CHAPTER,
        title="A row-parallel linear layer (Megatron-LM's second matmul)",
        signature=(
            "row_parallel_linear(x_part, weight, bias, rank, world_size) -> tensor: x_part "
            "(batch, in_r) holds this rank's input features (torch.tensor_split of range(in)), "
            "weight (out, in) and bias (out,) the full layer's; return the whole "
            "x @ weight.T + bias on every rank"
        ),
        launch=(
            f"run with gu.dist (gloo) on {', '.join(map(str, WORLD_SIZES))} ranks; compared "
            "with one process's output and gradients"
        ),
        run=_check_row,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- tensor_parallel_mlp -----------------------------------------------------------------------


def _mlp_judge(outcomes: dict) -> CheckResult | None:
    eid = "tensor_parallel_mlp"
    for n, ranks in outcomes.items():
        for case in range(len(ranks[0])):
            cases = [r[case] for r in ranks]
            d_model, hidden = cases[0]["shape"]
            if not cases[0]["module"]:
                return failed(
                    eid,
                    "Calling your class did not give a torch.nn.Module.",
                    "define `class TensorParallelMLP(torch.nn.Module):` and call "
                    "`super().__init__()` first in __init__.",
                )
            if cases[0]["n_params"] == 0:
                return failed(
                    eid,
                    "Your module has no parameters, so the optimizer has nothing to train.",
                    "keep the shards as `torch.nn.Parameter(...)` attributes of the module.",
                )
            for step in range(MLP_STEPS + 1):
                for rank, c in enumerate(cases):
                    if step >= len(c["got"]):
                        continue
                    got, expected = c["got"][step], c["expected"][step]
                    problem = _returned(eid, n, rank, got, expected.shape, "the whole output")
                    if problem is not None:
                        return problem
                    if got.shape != expected.shape:
                        return failed(
                            eid,
                            f"With {n} ranks, forward returned shape {got.shape} on rank "
                            f"{rank}, not {expected.shape}.",
                            "forward returns the whole output, the shape of x, on every rank.",
                        )
                    if _close(got, expected):
                        continue
                    what = (
                        f"With {n} ranks, d_model {d_model} and hidden {hidden}, rank {rank}'s "
                        f"output is wrong at {_first_wrong(got, expected)}"
                    )
                    if step == 0:
                        fake = [
                            {"got": k["got"][0], "expected": expected, "bias": k["bias"]}
                            for k in cases
                        ]
                        return failed(eid, what + " (before any training).", _mlp_values(fake, n))
                    return failed(
                        eid,
                        what + f" after {step} optimizer step(s), though right before them.",
                        _mlp_grad_hint(cases, n),
                    )
                if any(step == 0 and "no_graph" in c for c in cases):
                    return failed(
                        eid,
                        "Your output has no autograd graph (requires_grad is False).",
                        "do not detach or use torch.no_grad() in forward.",
                    )
                if step == 0:
                    problem = _mlp_input_grad(cases, n)
                    if problem is not None:
                        return problem
            expected_params = _mlp_shard_params(d_model, hidden, n)
            for rank, c in enumerate(cases):
                if c["n_params"] > expected_params[rank]:
                    return failed(
                        eid,
                        f"With {n} ranks, rank {rank} holds {c['n_params']} parameters; its "
                        f"shards hold {expected_params[rank]}.",
                        "the point of tensor parallelism is that a rank keeps only its shard: "
                        "rows of fc1's weight and bias, columns of fc2's weight, and fc2's bias "
                        "(whole). Slice in __init__ and keep the slices, not the full layers.",
                    )
    return None


def _mlp_shard_params(d_model: int, hidden: int, n: int) -> list[int]:
    from ..many_gpus.tensor_parallel import shard

    sizes = []
    for rank in range(n):
        rows = shard(hidden, rank, n)
        share = rows.stop - rows.start
        sizes.append(share * d_model * 2 + share + d_model)
    return sizes


def _mlp_values(cases, n) -> str:
    hint = _row_values_hint(cases, n, generic="")
    if hint:
        return hint
    return (
        "the output differs from fc2(gelu(fc1(x))) before any training: rank r keeps the rows "
        "tensor_split gives it of fc1's weight and bias, the same columns of fc2's weight and "
        "fc2's whole bias; forward is f, fc1, the exact GELU (F.gelu), fc2's shard, g, then "
        "fc2's bias."
    )


def _mlp_input_grad(cases, n) -> CheckResult | None:
    eid = "tensor_parallel_mlp"
    xs = [c.get("x_grad", "None") for c in cases]
    if any(isinstance(x, str) for x in xs):
        return failed(
            eid,
            "The input x got no gradient.",
            "compute the output from x itself so that gradients flow back to the layer before.",
        )
    want = cases[0]["x_grad_expected"]
    for rank, got in enumerate(xs):
        if _close(got, want):
            continue
        what = (
            f"With {n} ranks, the output is right but rank {rank}'s gradient of the input x is "
            f"wrong at {_first_wrong(got, want)}: the layer before would be trained wrong."
        )
        if _close(sum(xs), want):
            return failed(eid, what, F_HINT)
        if _close(got, n * want):
            return failed(eid, what, "x's gradient is world_size times too large.")
        return failed(eid, what)
    return None


def _mlp_grad_hint(cases, n) -> str:
    missing = [c["no_grad"] for c in cases if c.get("no_grad")]
    if missing:
        return (
            f"parameters of shape {missing[0][0]} got no gradient: use the nn.Parameter "
            "attributes themselves in forward (not .data, .detach() or a copy)."
        )
    grads = [c.get("grads", []) for c in cases]
    same_count = len({len(g) for g in grads}) == 1 and grads[0]
    if same_count and all(
        all(g[k].shape == grads[0][k].shape and np.allclose(g[k], grads[0][k]) for g in grads)
        for k in range(len(grads[0]))
    ):
        return (
            "every rank ends the backward pass with the same gradients: you all-reduced the "
            "gradients of the shards (that is data parallelism). In tensor parallelism each "
            "rank's shard gradient is already complete and its own; only x's gradient is "
            "all-reduced (by f)."
        )
    return (
        "the output is right before training but not after, so the gradients of your "
        "parameters are wrong: every shard must be an nn.Parameter of the module, used as it is "
        "in forward (autograd computes its gradient), with no gradient summed or scaled by hand."
    )


def _check_mlp(answer) -> CheckResult:
    eid = "tensor_parallel_mlp"
    text = "(fc1, fc2, rank, world_size)"
    if isinstance(answer, type):
        try:
            inspect.signature(answer).bind(None, None, 0, 2)
        except TypeError:
            return failed(
                eid,
                f"Its __init__ must take {text}.",
                "define `def __init__(self, fc1, fc2, rank, world_size):`.",
            )
        except ValueError:
            pass
    else:
        problem = _signature_problem(eid, answer, (None, None, 0, 2), text)
        if problem is not None:
            return problem
    problem = _run(eid, _mlp_rank, _mlp_judge, answer, MLP_SHAPES, SEED)
    return (
        problem
        if problem is not None
        else passed(
            eid,
            f"Outputs, the input's gradient, and outputs after {MLP_STEPS} SGD steps equal one "
            "process's fc2(gelu(fc1(x))), for 2, 3 and 4 ranks, hidden sizes that the ranks divide "
            "and that they do not; each rank holds only its shard.",
        )
    )


register(
    Exercise(
        id="tensor_parallel_mlp",
        chapter=CHAPTER,
        title="A tensor-parallel MLP, trained",
        signature=(
            "TensorParallelMLP(fc1, fc2, rank, world_size): an nn.Module built from the full "
            "single-process layers fc1 = nn.Linear(d, h) and fc2 = nn.Linear(h, d) that keeps "
            "only this rank's shards as parameters; forward(x) returns fc2(gelu(fc1(x))) whole "
            "on every rank"
        ),
        launch=(
            f"run with gu.dist (gloo) on {', '.join(map(str, WORLD_SIZES))} ranks, trained "
            f"{MLP_STEPS} steps of SGD (lr {MLP_LR}, MSE loss) beside one process"
        ),
        run=_check_mlp,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- one_f_one_b -------------------------------------------------------------------------------

#: (p, m) per case: m > p (where GPipe holds more than 1F1B), m = p, m < p, one stage.
SCHEDULE_CASES = ((4, 8), (3, 5), (2, 6), (4, 4), (4, 2), (1, 3))


def _normalise(schedule, p: int, m: int):
    """(per-stage lists of ("F"|"B", int), or a message explaining the format)."""
    if schedule is None:
        return None, "your function returned None."
    if not isinstance(schedule, (list, tuple)) or len(schedule) != p:
        size = len(schedule) if isinstance(schedule, (list, tuple)) else type(schedule).__name__
        return None, f"it returned {size} where a list of {p} lists (one per stage) was expected."
    stages = []
    for s, ops in enumerate(schedule):
        if not isinstance(ops, (list, tuple)):
            return None, f"stage {s}'s entry is a {type(ops).__name__}, not a list of operations."
        stage = []
        for op in ops:
            if (
                not isinstance(op, (list, tuple))
                or len(op) != 2
                or op[0] not in ("F", "B")
                or not isinstance(op[1], (int, np.integer))
                or isinstance(op[1], bool)
            ):
                return None, f"stage {s} lists {op!r}; each operation is ('F', i) or ('B', i)."
            if not 0 <= op[1] < m:
                return None, f"stage {s} lists {tuple(op)!r}, but micro-batches are 0..{m - 1}."
            stage.append((op[0], int(op[1])))
        stages.append(stage)
    return stages, None


def _schedule_problem(stages, p: int, m: int) -> tuple[str, str] | None:
    """(what, hint) for the first broken rule, or None."""
    case = f"For p = {p} stages and m = {m} micro-batches"
    for s, ops in enumerate(stages):
        for kind in ("F", "B"):
            counts = [ops.count((kind, i)) for i in range(m)]
            missing = [i for i, k in enumerate(counts) if k == 0]
            twice = [i for i, k in enumerate(counts) if k > 1]
            label = "forward" if kind == "F" else "backward"
            if missing or twice:
                what = (
                    f"{case}, stage {s} "
                    + (f"never runs the {label} of micro-batch {missing[0]}" if missing else "")
                    + (" and " if missing and twice else "")
                    + (f"runs the {label} of micro-batch {twice[0]} twice" if twice else "")
                    + "."
                )
                return (
                    what,
                    "every stage runs each micro-batch's forward and backward exactly once.",
                )
        for i in range(m):
            if ops.index(("B", i)) < ops.index(("F", i)):
                return (
                    f"{case}, stage {s} runs the backward of micro-batch {i} before its forward.",
                    "a micro-batch's backward needs its forward's activations: on every stage, "
                    "('F', i) comes before ('B', i).",
                )
    try:
        timeline = pipeline.simulate(stages)
    except pipeline.Deadlock as error:
        return (
            f"{case}, the schedule cannot run: {str(error).split(': ', 1)[1]}.",
            "stage s can run ('F', i) only after stage s - 1 has, and ('B', i) only after stage "
            "s + 1 has: a stage that waits for a backward before running a forward that the "
            "next stage needs first blocks both. In the warm-up, stage s runs p - s - 1 "
            "forwards before its first backward.",
        )
    peaks = pipeline.in_flight(stages)
    worst = int(np.argmax(peaks))
    if peaks[worst] > p:
        gpipe_like = all([kind for kind, _ in ops] == ["F"] * m + ["B"] * m for ops in stages)
        return (
            f"{case}, stage {worst} holds the activations of {peaks[worst]} micro-batches at "
            f"once (forward done, backward not yet); 1F1B holds at most p = {p}.",
            ("that is GPipe's order, all forwards then all backwards. " if gpipe_like else "")
            + "1F1B starts each micro-batch's backward as early as it can: after p - s - 1 "
            "warm-up forwards, stage s alternates one forward and one backward, so its "
            "activations in flight never exceed p.",
        )
    reference = pipeline.simulate(pipeline.one_f_one_b(p, m)).makespan
    if timeline.makespan > reference + 1e-9:
        before = [next(k for k, op in enumerate(ops) if op[0] == "B") for ops in stages]
        off = [s for s, w in enumerate(before) if w != min(p - s, m)]
        detail = (
            f" Stage {off[0]} runs {before[off[0]]} forward(s) before its first backward, where "
            f"1F1B runs {min(p - off[0], m)}: its {min(p - off[0] - 1, m)} warm-up forward(s), "
            "then the forward of its first one-forward-one-backward pair."
            if off
            else ""
        )
        return (
            f"{case}, your schedule takes {timeline.makespan:g} time units (forward 1, "
            f"backward 2), the reference 1F1B {reference:g}: devices wait longer than they "
            f"need to.{detail}",
            "warm up with min(p - s - 1, m) forwards on stage s, then alternate ('F', next), "
            "('B', oldest), then run the remaining backwards.",
        )
    return None


def _check_schedule(answer) -> CheckResult:
    eid = "one_f_one_b"
    problem = _signature_problem(eid, answer, (2, 2), "(p, m)")
    if problem is not None:
        return problem
    for p, m in SCHEDULE_CASES:
        try:
            schedule = answer(p, m)
        except NotImplementedError:
            return not_attempted(eid)
        except Exception as error:
            return failed(
                eid,
                f"For p = {p}, m = {m} your function raised {type(error).__name__}: {error}"
                f"{_learner_line(error, (getattr(answer, '__name__', ''),))}.",
                "run it in a cell of its own, e.g. one_f_one_b(4, 8), to see the full error.",
            )
        stages, message = _normalise(schedule, p, m)
        if message:
            return failed(
                eid,
                f"For p = {p}, m = {m}, {message}",
                "return [[('F', 0), ('F', 1), ('B', 0), ...], ...]: one list per stage.",
            )
        problem = _schedule_problem(stages, p, m)
        if problem is not None:
            return failed(eid, *problem)
    cases = ", ".join(f"({p}, {m})" for p, m in SCHEDULE_CASES)
    return passed(
        eid,
        f"For (p, m) = {cases}: every dependency is respected, no stage holds more than p "
        "micro-batches' activations, and the makespan equals the reference 1F1B's.",
    )


register(
    Exercise(
        id="one_f_one_b",
        chapter=CHAPTER,
        title="The 1F1B pipeline schedule",
        signature=(
            "one_f_one_b(p, m) -> list of p lists: for each stage, its operations in order, "
            "('F', i) the forward and ('B', i) the backward of micro-batch i (0 to m - 1)"
        ),
        launch=(
            "simulated with gu.pipeline.simulate (forward 1, backward 2 time units) for several "
            "(p, m), compared with the rules of a pipeline and the reference's makespan"
        ),
        run=_check_schedule,
        kind="function",
    )
)


# --- questions -------------------------------------------------------------------------------

register(
    numeric_exercise(
        id="pipeline_bubble_share",
        chapter=CHAPTER,
        title="The pipeline bubble",
        question=(
            "A model is cut into p = 8 pipeline stages and each batch into m = 24 micro-batches "
            "(GPipe or 1F1B). What fraction of each GPU's time is idle (0 to 1)?"
        ),
        answer=NumericAnswer(
            expected=7 / 31,
            mistakes={
                7 / 24: (
                    "that is the bubble relative to the ideal time, (p - 1)/m, as Narayanan et "
                    "al. 2021 quote it; the question asks for its share of the whole time, "
                    "bubble / (bubble + compute)."
                ),
                7 / 8: "that is the bubble with a single micro-batch: m = 24 fill the pipeline.",
                1 - 7 / 31: "that is the busy fraction; the question asks for the idle one.",
                7 / 32: "the pipeline fills in p - 1 steps, not p: (p - 1)/(m + p - 1).",
            },
            hint="idle fraction = (p - 1)/(m + p - 1) (Huang et al. 2019, sec. 2.2).",
        ),
    )
)

register(
    numeric_exercise(
        id="micro_batches_for_bubble",
        chapter=CHAPTER,
        title="Micro-batches for a small bubble",
        question=(
            "With p = 16 pipeline stages (Llama 3 405B's pipeline depth) and a 1F1B schedule, "
            "what is the smallest number of micro-batches m per batch that keeps each GPU idle "
            "for at most 5% of the step?"
        ),
        answer=NumericAnswer(
            expected=285,
            rel_tol=0.002,
            mistakes={
                300: (
                    "that keeps (p - 1)/m at 5%, the bubble relative to the ideal time; solve "
                    "(p - 1)/(m + p - 1) <= 0.05 instead."
                ),
                15 / 0.05 - 16: "solve 15/(m + 15) <= 0.05: m >= 15/0.05 - 15.",
                16 / 0.05 - 16: (
                    "that uses p where the bubble has p - 1 steps: the pipeline fills in "
                    "p - 1 steps, so solve (p - 1)/(m + p - 1) <= 0.05."
                ),
            },
            hint="(p - 1)/(m + p - 1) <= 0.05  =>  m >= (p - 1)/0.05 - (p - 1).",
        ),
    )
)

register(
    numeric_exercise(
        id="interleaved_bubble_share",
        chapter=CHAPTER,
        title="The interleaved schedule's bubble",
        question=(
            "p = 8 devices, m = 16 micro-batches, and each device holds v = 4 model chunks "
            "(interleaved 1F1B). What fraction of each device's time is idle (0 to 1)?"
        ),
        answer=NumericAnswer(
            expected=7 / (4 * 16 + 7),
            mistakes={
                7 / 23: "that is without interleaving; v chunks per device divide the bubble by v.",
                7 / 64: (
                    "that is the bubble relative to the ideal time, (p - 1)/(v m), as Narayanan "
                    "et al. quote it; as a share of the whole time it is (p - 1)/(v m + p - 1)."
                ),
                7 / 23 / 4: (
                    "the bubble time is divided by v, (p - 1)/v stage-times, but the compute "
                    "time is not: (p - 1)/v / (m + (p - 1)/v)."
                ),
            },
            hint=(
                "the bubble lasts (p - 1)/v micro-batch times against m of compute "
                "(Narayanan et al. 2021, sec. 2.2.2): idle = (p - 1)/(v m + p - 1)."
            ),
        ),
    )
)


def _sp_answer() -> NumericAnswer:
    b, h, a, t = 1, 12288, 96, 8

    def per_layer(s: int, parallel: float, scores: float) -> float:  # Korthikanti's s b h (...)
        return s * b * h * (parallel + scores * 5 * a * s / h) / 1e6

    s = 4096
    return NumericAnswer(
        expected=per_layer(s, 34 / t, 1 / t),
        unit="MB",
        mistakes={
            per_layer(s, 10 + 24 / t, 1 / t): (
                "that is tensor parallelism without sequence parallelism: the 10 sbh of layer "
                "norms and dropouts stay whole. Sequence parallelism divides them by t too."
            ),
            per_layer(s, 34, 1): "that is one GPU without any parallelism.",
            per_layer(s, 34 / t, 0): (
                "that leaves out the attention scores and softmax (the 5as/h term): selective "
                "recomputation or a fused attention kernel would drop them, but the question keeps "
                "every activation, the scores written out as Korthikanti et al. count them."
            ),
            2 * per_layer(2048, 34 / t, 1 / t): (
                "doubling chapter 10's 2,048-token figure grows every term with s, but the "
                "attention scores are s x s per head: their term grows with s squared."
            ),
            per_layer(2048, 34 / t, 1 / t): (
                "that is chapter 10's figure for 2,048-token sequences; this question's are 4,096."
            ),
            per_layer(s, 34 / t, 1 / t) * 1e6 / 2**20: "MB here is 1e6 bytes, not 2**20.",
        },
        hint=(
            "chapter 10, section 3 (Korthikanti et al. 2022, Table 2): which terms does sequence "
            "parallelism divide by t, and how does each term grow with the sequence length?"
        ),
    )


register(
    numeric_exercise(
        id="sequence_parallel_activations",
        chapter=CHAPTER,
        title="Activation memory with tensor and sequence parallelism",
        question=(
            "GPT-3 175B's layer (hidden h = 12288, a = 96 heads), sequence s = 4096, micro-batch "
            "b = 1, 16-bit activations, tensor parallelism t = 8 with sequence parallelism, no "
            "recomputation and the attention scores written out (no fused attention): how many "
            "MB (1e6 bytes) of activations does one layer keep per GPU for the backward pass?"
        ),
        answer=_sp_answer,
    )
)


#: The planner's share of HBM left for model states and activations (gu.parallelism's
#: ``usable_memory`` default): the CUDA context, NCCL's buffers and fragmentation take the rest.
USABLE = 0.9


def _stages_answer() -> NumericAnswer:
    hbm = specs.get("H100-SXM").hbm_bytes
    per_param, params, tp = 16, 405e9, 8
    usable = USABLE * hbm
    exact = params * per_param / tp / usable
    return NumericAnswer(
        expected=float(np.ceil(exact)),
        unit="stages",
        mistakes={
            exact: "round up: a number of stages is a whole number, and fewer would not fit.",
            float(np.ceil(params * per_param / tp / hbm)): (
                "that fills the whole HBM: with 10 stages each GPU holds 75.4 GiB of model "
                "states, over the 90% (72 GiB) the question leaves usable."
            ),
            float(np.ceil(params * per_param / tp / (USABLE * 80e9))): (
                "an H100's '80 GB' is 80 GiB, 80 x 2**30 bytes (gu.specs hbm_bytes): you used 80e9."
            ),
            float(np.ceil(params * per_param / usable)): (
                "tensor parallelism over the 8 GPUs of a node already divides the model by 8."
            ),
            float(np.ceil(params * 2 / tp / usable)): (
                "mixed-precision Adam keeps 16 bytes per parameter (ZeRO paper, sec. 3.1): "
                "2 (bf16 weights) + 2 (bf16 gradients) + 12 (fp32 master weights, momentum, "
                "variance)."
            ),
            float(np.ceil(params * 4 / tp / usable)): (
                "you left out the optimizer: mixed-precision Adam adds 12 bytes per parameter."
            ),
        },
        hint=(
            "model states are 16 bytes per parameter (gu.memory.model_state_bytes), divided by "
            "t = 8 and by the number of stages; they must fit in 90% of hbm_bytes."
        ),
    )


register(
    numeric_exercise(
        id="min_pipeline_stages",
        chapter=CHAPTER,
        title="How many pipeline stages for a 405B model?",
        question=(
            "A 405e9-parameter model is trained with mixed-precision Adam (16 bytes per "
            "parameter of model states, no ZeRO) on H100s (gu.specs hbm_bytes), tensor "
            "parallelism t = 8 inside each node. As the course's planner does "
            "(gu.parallelism, usable_memory=0.9), count 90% of each GPU's memory as usable (the "
            "CUDA context, NCCL's buffers and fragmentation take the rest). Counting model "
            "states only, what is the smallest number of pipeline stages with which they fit?"
        ),
        answer=_stages_answer,
    )
)
