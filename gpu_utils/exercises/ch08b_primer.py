"""Exercises of lab 08b, the PyTorch primer (chapter 08b): one training step, and the forward pass
of ``gu.gpt``'s pre-LN transformer block written out.

``primer_train_step`` runs the learner's ``train_step`` for several steps on a small ``gu.gpt``
model, in lockstep with a correct reference from the same seed. A hook on the optimizer
(``register_step_pre_hook``) records the gradients that ``optimizer.step()`` actually sees; the
verdict compares them with the gradient of this batch's mean loss, with the gradients the
previous call left behind and with their sum, so a hint names what happened: gradients added to
the previous step's (no ``zero_grad``), a step before ``backward``, a ``zero_grad`` between the
two, no step, a sum for a mean, gradients clipped (all scaled by one common factor below 1, to a
global norm a person would type). Clearing the gradients at the start or at the end of the step
both pass (chapter 09 does the first, chapter 11 the second); the loss comes back as a Python
number, as the exercise asks (a tensor is refused with the reason).

``primer_block_forward`` compares the learner's forward with ``Block.forward`` on blocks whose
parameters are random (so that a missing LayerNorm or bias shows), several shapes. Probes decide
the hints: an output equal to a known variant (post-LN, no residual, no 1/sqrt(d_head) scale,
ReLU, heads split or merged without a transpose...) names it; otherwise a change to the last token
that moves every earlier output is a missing causal mask, and one that moves only some of them
is a mask that hides too little or heads and positions mixed up (both named).
"""

from __future__ import annotations

import functools
import inspect
import linecache
import math
import traceback
from typing import ClassVar

import torch
import torch.nn.functional as F

from .. import gpt
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "08b_pytorch_primer"

# --- shared ------------------------------------------------------------------------------------


def _learner_line(error: BaseException, function) -> str:
    """' at line N: `text`' for the innermost frame of the learner's cell, or ''."""
    filename = getattr(getattr(function, "__code__", None), "co_filename", None)
    if filename is None:
        return ""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
    if not frames:
        return ""
    last = frames[-1]
    text = (linecache.getline(filename, last.lineno) or last.line or "").strip()
    return f" at line {last.lineno}" + (f": `{text}`" if text else "")


def _short(error: BaseException) -> str:
    try:
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    except Exception:  # an exception whose text cannot be made
        text = ""
    return text if len(text) < 200 else text[:197] + "..."


def _arity_problem(exercise_id: str, answer, names: tuple[str, ...]) -> CheckResult | None:
    if not callable(answer):
        return failed(
            exercise_id,
            f"Expected a function, got {type(answer).__name__}.",
            "pass the function itself: check(..., my_function), not my_function(...).",
        )
    try:
        inspect.signature(answer).bind(*names)
    except TypeError:
        mine = ", ".join(inspect.signature(answer).parameters)
        return failed(
            exercise_id,
            f"Your function takes ({mine}), but the checker calls it as f({', '.join(names)}).",
            f"define it as `def f({', '.join(names)}):`.",
        )
    except ValueError:  # no signature to read (a built-in): let the call decide
        return None
    return None


def _raised(exercise_id: str, error: BaseException, answer, hints) -> CheckResult:
    """The verdict on an exception of the learner's code: its type, line and a hint chosen by
    ``hints(error, text)`` (or a generic one)."""
    if isinstance(error, NotImplementedError):
        return not_attempted(exercise_id)
    text = _short(error)
    where = _learner_line(error, answer)
    what = f"Your function raised {type(error).__name__}{where}" + (f": {text}" if text else ".")
    hint = hints(error, text) or "run it in a cell of its own to see the full error."
    return failed(exercise_id, what, hint)


# --- 1. one training step ------------------------------------------------------------------------

STEP_CONFIG = dict(vocab_size=32, seq_len=8, d_model=16, n_layers=1, n_heads=2)
STEP_SEED, STEP_BATCH, STEPS, STEP_LR, MOMENTUM = 3, 4, 3, 0.1, 0.9

NO_ZERO_GRAD = (
    "`backward()` adds into `.grad`; clear the previous step's gradients with "
    "`optimizer.zero_grad()` before this step's backward (or after the step, as chapter 11 does)."
)
STEP_BEFORE_BACKWARD = (
    "`optimizer.step()` uses whatever is in `.grad` when it runs: call it after "
    "`loss.backward()`, never before."
)
ZERO_BETWEEN = (
    "`zero_grad()` between `backward()` and `step()` throws this batch's gradients away: clear "
    "them before the forward pass (or after the step) instead."
)
NO_BACKWARD = (
    "gradients come from `loss.backward()` (with its parentheses), called after the loss is "
    "computed and before `optimizer.step()`."
)
NO_STEP = "computing gradients changes nothing by itself: call `optimizer.step()` after backward."
SUM_REDUCTION = (
    "the loss must be the mean over every position (`F.cross_entropy`'s default, "
    "reduction='mean'): a sum makes the gradient, and so the step, grow with the batch."
)
ITEM_TOO_EARLY = (
    "`loss.item()` is a Python float, which autograd cannot differentiate: call "
    "`loss.backward()` on the tensor, and `.item()` only for the value you return."
)
DETACHED = (
    "the loss has no path back to the parameters: it was computed from a `.detach()`ed tensor "
    "or under `torch.no_grad()`. Compute the logits and the loss with autograd on."
)
CLIPPED = (
    "this exercise's step has no gradient clipping: remove `clip_grad_norm_` (or "
    "`clip_grad_value_`) and let "
    "`optimizer.step()` use the gradients of the mean loss as they are (clipping is a choice "
    "of a training recipe, with its own threshold to tune, not part of every step)."
)
RETURN_A_NUMBER = (
    "end with `return loss.item()`: the exercise asks for a Python number. A loss tensor kept "
    "by the caller (a list of losses) also keeps its autograd graph alive unless detached, and "
    "on a GPU it stays in device memory."
)
NOT_THE_OPTIMIZER = (
    "update the parameters with the optimizer you are given, `optimizer.step()`: a new "
    "optimizer (or a manual update) starts without the given one's momentum."
)


def _step_batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(STEP_SEED + 1)
    v, s = STEP_CONFIG["vocab_size"], STEP_CONFIG["seq_len"]
    return [
        (
            torch.randint(v, (STEP_BATCH, s), generator=g),
            torch.randint(v, (STEP_BATCH, s), generator=g),
        )
        for _ in range(STEPS)
    ]


def _grads(model) -> dict[str, torch.Tensor | None]:
    return {
        n: (None if p.grad is None else p.grad.detach().clone())
        for n, p in model.named_parameters()
    }


def _params(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def _empty(grads: dict) -> bool:
    """No gradient at all: every .grad None or zero."""
    return all(g is None or not bool(g.any()) for g in grads.values())


def _dense(grads: dict, like: dict) -> dict[str, torch.Tensor]:
    return {n: torch.zeros_like(like[n]) if g is None else g for n, g in grads.items()}


def _close(a: dict, b: dict, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    return all(torch.allclose(a[n], b[n], rtol=rtol, atol=atol) for n in b)


def _scale(got: dict, expected: dict) -> float:
    """The c minimising |got - c expected|."""
    num = sum(float((got[n] * expected[n]).sum()) for n in expected)
    den = sum(float((expected[n] * expected[n]).sum()) for n in expected)
    return num / den if den else math.nan


_ITEM_TEXTS = ("'float' object has no attribute", "'int' object has no attribute")


def _round(value: float) -> bool:
    """Whether ``value`` is a number a person would type: two significant digits at most."""
    if not math.isfinite(value) or value <= 0:
        return False
    return math.isclose(value, float(f"{value:.2g}"), rel_tol=1e-4)


def _step_exception_hint(error: BaseException, text: str) -> str:
    if isinstance(error, AttributeError) and any(t in text for t in _ITEM_TEXTS):
        return ITEM_TOO_EARLY
    if "does not require grad" in text:
        return DETACHED
    if "backward through the graph a second time" in text:
        return "call `loss.backward()` once per step: the graph is freed after the first call."
    if "grad can be implicitly created only for scalar" in text:
        return (
            "`backward()` needs one number: reduce the loss to its mean over every position "
            "(`F.cross_entropy`'s default) before calling it."
        )
    return ""


def _judge_step(
    k: int,
    at_step: dict,
    expected: dict,
    left: dict | None,
    backward: tuple,
    tokens: int,
    counted: str = "batch x sequence, the number of positions",
    recipe: str = (
        "compute the loss of this call's batch: `logits, _ = model(tokens)`, then "
        "`F.cross_entropy(logits.flatten(0, 1), targets.flatten())`."
    ),
    sum_hint: str = SUM_REDUCTION,
    scale_hint: str = (
        "the loss is the mean cross-entropy over every position of this batch, unscaled; "
        "check any factor you multiply or divide it by."
    ),
):
    """(what, hint) when the gradients seen by ``optimizer.step()`` in call ``k`` are wrong.

    ``backward`` is (gradients accumulated before the step ran, in the whole call), counted by
    hooks on the parameters: whether and when ``backward()`` ran."""
    nth = f"call {k + 1}"
    before_step, in_call = backward
    if _empty(at_step):
        if in_call == 0:
            return (
                f"In call {k + 1}, no gradient was computed: `backward()` never ran, so "
                "`optimizer.step()` had nothing to apply.",
                NO_BACKWARD,
            )
        if before_step == 0:
            return (
                f"In {nth}, `optimizer.step()` ran while `.grad` was still empty; this batch's "
                "gradients arrived afterwards, so they were never used.",
                STEP_BEFORE_BACKWARD,
            )
        return (
            f"In {nth}, `backward()` ran before `optimizer.step()`, but when the step ran "
            "`.grad` was empty (None or zero): the gradients were cleared in between.",
            ZERO_BETWEEN,
        )
    got = _dense(at_step, expected)
    if _close(got, expected):
        return None
    if left is not None and not _empty(left):
        previous = _dense(left, expected)
        if _close(got, {n: previous[n] + expected[n] for n in expected}):
            return (
                f"In {nth}, the gradients `optimizer.step()` used were this batch's plus those "
                "the previous call left in `.grad`: they accumulated.",
                NO_ZERO_GRAD,
            )
        if _close(got, previous):
            return (
                f"In {nth}, `optimizer.step()` used the previous batch's gradients, not this "
                "batch's.",
                STEP_BEFORE_BACKWARD,
            )
    c = _scale(got, expected)
    if (
        math.isfinite(c)
        and abs(c - 1) > 1e-3
        and _close(got, {n: c * expected[n] for n in expected})
    ):
        if math.isclose(c, tokens, rel_tol=1e-3):
            return (
                f"The gradients `optimizer.step()` used are {c:.4g} times the expected ones: "
                f"{tokens} = {counted}. The loss was a sum.",
                sum_hint,
            )
        norm = math.sqrt(sum(float((got[n] ** 2).sum()) for n in expected))
        full = math.sqrt(sum(float((expected[n] ** 2).sum()) for n in expected))
        if c < 1 and _round(norm) and not _round(1 / c):
            # one common factor min(1, c_max / norm) and a round global norm: clip_grad_norm_
            return (
                f"In {nth}, the gradients `optimizer.step()` used are this batch's, all scaled "
                f"by one common factor {c:.4g}: their global norm is {norm:.4g}, this batch's "
                f"is {full:.4g}. That is gradient clipping to a norm of {norm:.2g}.",
                CLIPPED,
            )
        return (
            f"The gradients `optimizer.step()` used are {c:.4g} times those of the mean loss.",
            scale_hint,
        )
    bound = max(float(got[n].abs().max()) for n in expected)
    largest = max(float(expected[n].abs().max()) for n in expected)
    if 0 < bound < largest and _close(got, {n: expected[n].clamp(-bound, bound) for n in expected}):
        # each element cut to [-v, v], the rest untouched: clip_grad_value_
        return (
            f"In {nth}, the gradients `optimizer.step()` used are this batch's with every "
            f"element cut to at most {bound:.4g} in size (this batch's largest is {largest:.4g}): "
            "that is clipping by value.",
            CLIPPED,
        )
    name, gap = max(
        ((n, float((got[n] - expected[n]).abs().max())) for n in expected), key=lambda t: t[1]
    )
    return (
        f"In {nth}, the gradients `optimizer.step()` used are not those of this batch's mean "
        f"cross-entropy (largest difference {gap:.3g}, in `{name}`).",
        recipe,
    )


def _run_steps(exercise_id: str, answer, names: tuple[str, ...], calls: list[tuple], task):
    """Run ``answer(model, optimizer, *call)`` for each call, in lockstep with a reference SGD
    step on ``task.loss(reference, *call)``: the verdict on the first wrong step, else passed.

    ``task`` has ``loss(model, *call)`` (the loss whose gradients a step must use),
    ``evidence(k, at_step, expected, model_before, call)`` (exercise-specific (what, hint), or
    None; tried before the shared judgement), ``tokens(call)``, ``counted``, ``recipe`` and
    optionally ``hints`` (words for :func:`_judge_step`), ``return_hint`` and ``success``."""
    if (problem := _arity_problem(exercise_id, answer, names)) is not None:
        return problem
    model = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
    reference = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
    optimizer = torch.optim.SGD(model.parameters(), lr=STEP_LR, momentum=MOMENTUM)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=STEP_LR, momentum=MOMENTUM)
    seen: list[tuple[dict, int]] = []  # per step: the gradients it saw, accumulations before it
    accumulated = [0]  # gradients accumulated into .grad (backward passes, parameter by parameter)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(
            lambda _: accumulated.__setitem__(0, accumulated[0] + 1)
        )
    optimizer.register_step_pre_hook(lambda *_: seen.append((_grads(model), accumulated[0])))
    left: dict | None = None
    losses = []
    for k, call in enumerate(calls):
        model_before = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
        model_before.load_state_dict(reference.state_dict())
        ref_optimizer.zero_grad()
        ref_loss = task.loss(reference, *call)
        ref_loss.backward()
        expected = {n: g for n, g in _grads(reference).items() if g is not None}
        ref_optimizer.step()
        before, n_seen, start = _params(model), len(seen), accumulated[0]
        try:
            value = answer(model, optimizer, *_clone(call))
        except (Exception, SystemExit) as error:
            return _raised(exercise_id, error, answer, _step_exception_hint)
        steps, after = seen[n_seen:], _params(model)
        if not steps:
            if all(torch.equal(before[n], after[n]) for n in before):
                return failed(
                    exercise_id,
                    f"After call {k + 1} of your function the parameters are unchanged: "
                    "`optimizer.step()` never ran.",
                    NO_STEP,
                )
            return failed(
                exercise_id,
                f"In call {k + 1} the parameters changed, but not through the optimizer "
                "you were given (its `step()` never ran).",
                NOT_THE_OPTIMIZER,
            )
        if len(steps) > 1:
            return failed(
                exercise_id,
                f"In call {k + 1}, `optimizer.step()` ran {len(steps)} times.",
                "one training step is one `optimizer.step()`.",
            )
        at_step, count = steps[0]
        backward = (count - start, accumulated[0] - start)
        problem = None
        if not _empty(at_step) and not _close(_dense(at_step, expected), expected):
            problem = task.evidence(k, _dense(at_step, expected), expected, model_before, call)
        if problem is None:
            words = dict(counted=task.counted, recipe=task.recipe)
            words.update(getattr(task, "hints", {}))
            problem = _judge_step(k, at_step, expected, left, backward, task.tokens(call), **words)
        if problem is not None:
            return failed(exercise_id, *problem)
        ref_after = _params(reference)
        if not _close(after, ref_after, rtol=1e-4, atol=1e-6):
            return failed(
                exercise_id,
                f"In call {k + 1}, `optimizer.step()` saw the right gradients, but the "
                "parameters afterwards are not those of a correct step.",
                NOT_THE_OPTIMIZER,
            )
        left = _grads(model)
        losses.append((value, ref_loss.item()))
    for k, (value, loss) in enumerate(losses):
        if isinstance(value, torch.Tensor):
            graph = "" if value.grad_fn is None else ", still attached to its autograd graph"
            return failed(
                exercise_id,
                f"Your step is right, but your function returned a tensor of shape "
                f"{tuple(value.shape)}{graph}, not a Python number.",
                RETURN_A_NUMBER,
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return failed(
                exercise_id,
                f"Your step is right, but your function returned {type(value).__name__}, "
                "not the loss.",
                "end with `return loss.item()` (a Python number).",
            )
        if not math.isclose(value, loss, rel_tol=1e-4, abs_tol=1e-6):
            return failed(
                exercise_id,
                f"Your step is right, but call {k + 1} returned {value:.6g}; the loss of that "
                f"batch before the step is {loss:.6g}.",
                task.return_hint,
            )
    return passed(exercise_id, task.success)


def _clone(call: tuple) -> tuple:
    """Fresh copies of a call's tensors (lists of tensor pairs too): an answer that changes its
    inputs cannot change the reference's."""
    if isinstance(call, torch.Tensor):
        return call.clone()
    if isinstance(call, (list, tuple)):
        return type(call)(_clone(c) for c in call)
    return call


class _TrainStep:
    """Exercise 1's task: one batch, its mean cross-entropy."""

    counted = "batch x sequence, the number of positions"
    recipe = (
        "compute the loss of this call's batch: `logits, _ = model(tokens)`, then "
        "`F.cross_entropy(logits.flatten(0, 1), targets.flatten())`."
    )
    return_hint = "return the loss computed in the forward pass of this call, `loss.item()`."
    success = (
        f"{STEPS} steps on a small gu.gpt model equal a correct SGD-with-momentum run from the "
        "same seed: each step used exactly its own batch's gradients."
    )

    @staticmethod
    def loss(model, tokens, targets):
        return model(tokens, targets)[1]

    @staticmethod
    def tokens(call) -> int:
        return call[0].numel()

    @staticmethod
    def evidence(*_):
        return None


def _run_train_step(exercise_id: str, answer) -> CheckResult:
    names = ("model", "optimizer", "tokens", "targets")
    return _run_steps(exercise_id, answer, names, _step_batches(), _TrainStep)


register(
    Exercise(
        id="primer_train_step",
        chapter=CHAPTER,
        title="One training step",
        signature="train_step(model, optimizer, tokens, targets) -> the loss as a number; one "
        "step: clear gradients, forward, mean cross-entropy, backward, optimizer.step()",
        launch=f"{STEPS} calls on a 1-layer gu.gpt model with torch.optim.SGD(lr={STEP_LR}, "
        f"momentum={MOMENTUM}), compared with a correct run from the same seed",
        run=functools.partial(_run_train_step, "primer_train_step"),
        kind="function",
        time_limit=30.0,
    )
)


# --- 2. a pre-LN block, written out ------------------------------------------------------------

#: (d_model, n_heads, batch, seq): head sizes 8, 4 and 6; seq not equal to n_heads.
BLOCK_CASES = ((16, 2, 2, 5), (12, 3, 1, 7), (24, 4, 3, 6))
BLOCK_SEED = 8

CALLS_THE_BLOCK = (
    "write the forward pass yourself from the submodules (`block.ln1`, `block.attn.qkv`, "
    "`block.attn.proj`, `block.ln2`, `block.mlp.fc1`, `block.mlp.fc2`); calling `block(x)`, "
    "`block.attn(...)` or `block.mlp(...)` reuses the answer."
)
NO_CAUSAL_MASK = (
    "position t may attend only to positions 0..t: set the scores of later positions to "
    "-inf before the softmax, e.g. `scores.masked_fill(torch.ones(s, s, dtype=torch.bool)"
    ".triu(1), float('-inf'))`."
)
LOOKS_AHEAD = (
    "position t may use only tokens 0..t: the scores of later keys must be -inf before a "
    "softmax that normalises over the keys (the last dimension)."
)
PARTIAL_LEAK = (
    "a missing mask would move every earlier position; only some moved. Two causes do this: "
    "a mask that hides too little (it must hide exactly the keys after t, `triu(1)`), or heads "
    "and positions mixed by a reshape without `transpose(1, 2)` when splitting "
    "(`view(b, s, n_heads, d_head).transpose(1, 2)`) or merging "
    "(`y.transpose(1, 2).reshape(b, s, h)`)."
)
MASKED_DIAGONAL = (
    "the mask hid every position of the first row, so its softmax is 0/0: mask only the "
    "positions after t, `triu(1)` (diagonal 1), and keep t itself."
)
POST_LN = (
    "that is the original Transformer's post-LN order, LayerNorm after the residual (Vaswani "
    "et al. 2017). GPT-2 and gu.gpt normalise each sub-layer's input: "
    "`x = x + attn(ln1(x))`, then `x + mlp(ln2(x))`."
)
NO_RESIDUAL = (
    "each sub-layer adds to its input: `x = x + attn(ln1(x))`, then `x + mlp(ln2(x))`; "
    "without the residual the block replaces x."
)
SCALE = (
    "scale the scores by 1/sqrt(d_head), d_head = d_model / n_heads (Vaswani et al. 2017, 3.2.1)."
)
SOFTMAX_DIM = (
    "the softmax normalises each query's row of scores, over the keys: the last dimension, "
    "`softmax(dim=-1)`."
)
GELU = "the MLP's activation is GeLU, `F.gelu` (exact, the default), between fc1 and fc2."
NO_PROJ = "after merging the heads, apply the output projection `block.attn.proj`."
HEADS_SHAPE = (
    "split q, k and v into heads as (batch, heads, seq, d_head): "
    "`t.view(b, s, n_heads, d_head).transpose(1, 2)`, and merge back with "
    "`y.transpose(1, 2).reshape(b, s, h)`."
)
NO_GRADIENT = (
    "compute with autograd on (no `torch.no_grad()`, no `.detach()`), so that the "
    "block's parameters receive gradients."
)


def _random_block(d_model: int, n_heads: int, seq: int, seed: int) -> gpt.Block:
    """A gu.gpt Block with every parameter random, so that LayerNorm and biases matter."""
    block = gpt.build(seed=seed, d_model=d_model, n_heads=n_heads, n_layers=1, seq_len=seq)
    block = block.blocks[0]
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in block.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
            elif "ln" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return block


def _variant(
    block,
    x,
    *,
    post_ln=False,
    res_attn=True,
    res_mlp=True,
    scale="sqrt",
    mask=True,
    dim=-1,
    act="gelu",
    proj=True,
    heads="ok",
):
    """The block's forward with one thing changed (the known mistakes).

    ``heads``: "merge" merges the heads with ``reshape(b, s, h)`` and no ``transpose(1, 2)``,
    "split" splits them with ``view(b, a, s, d)`` and no transpose: both mix heads and positions
    (the shapes come out right)."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    d = h // a

    def attn(u):
        q, k, v = block.attn.qkv(u).split(h, dim=-1)
        if heads == "split":
            q, k, v = (t.reshape(b, a, s, d) for t in (q, k, v))
        else:
            q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
        factor = {"sqrt": 1 / math.sqrt(d), "none": 1.0, "d": 1 / d, "h": 1 / math.sqrt(h)}[scale]
        scores = (q @ k.transpose(-2, -1)) * factor
        if mask:
            scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
        y = scores.softmax(dim=dim) @ v
        y = y.reshape(b, s, h) if heads == "merge" else y.transpose(1, 2).reshape(b, s, h)
        return block.attn.proj(y) if proj else y

    def mlp(u):
        f = {"gelu": F.gelu, "relu": F.relu, "tanh": functools.partial(F.gelu, approximate="tanh")}
        return block.mlp.fc2(f[act](block.mlp.fc1(u)))

    if post_ln:
        x = block.ln1(x + attn(x))
        return block.ln2(x + mlp(x))
    x = (x if res_attn else 0) + attn(block.ln1(x))
    return (x if res_mlp else 0) + mlp(block.ln2(x))


#: (variant arguments, what the output equals, hint), tried in this order.
BLOCK_MISTAKES = (
    (dict(post_ln=True), "the post-LN block: LayerNorm applied after each residual sum", POST_LN),
    (
        dict(res_attn=False, res_mlp=False),
        "the block without either residual connection",
        NO_RESIDUAL,
    ),
    (dict(res_attn=False), "the block without the residual around attention", NO_RESIDUAL),
    (dict(res_mlp=False), "the block without the residual around the MLP", NO_RESIDUAL),
    (
        dict(heads="merge"),
        "the block with the heads merged by `reshape(b, s, h)` without `transpose(1, 2)`, "
        "which mixes heads and positions",
        HEADS_SHAPE,
    ),
    (
        dict(heads="split"),
        "the block with q, k, v split by `view(b, n_heads, s, d_head)` without a transpose, "
        "which mixes heads and positions",
        HEADS_SHAPE,
    ),
    (dict(mask=False), "the block without the causal mask", NO_CAUSAL_MASK),
    (dict(scale="none"), "the block with unscaled attention scores", SCALE),
    (dict(scale="d"), "the block with scores divided by d_head instead of sqrt(d_head)", SCALE),
    (dict(scale="h"), "the block with scores divided by sqrt(d_model), not sqrt(d_head)", SCALE),
    (dict(dim=-2), "the block with the softmax over the queries (dim=-2)", SOFTMAX_DIM),
    (dict(act="relu"), "the block with ReLU in the MLP", GELU),
    (dict(act="tanh"), "the block with the tanh approximation of GeLU", GELU),
    (dict(proj=False), "the block without the output projection", NO_PROJ),
)


def _block_exception_hint(error: BaseException, text: str) -> str:
    shapes = (
        "must match the size",
        "shape '",
        "size mismatch",
        "cannot be multiplied",
        "view size",
    )
    if isinstance(error, RuntimeError) and any(t in text for t in shapes):
        return HEADS_SHAPE
    return ""


class _Calls:
    """Counts the calls of a module's forward (the block, its attention, its MLP)."""

    def __init__(self, *modules) -> None:
        self.names: list[str] = []
        self.handles = [
            m.register_forward_hook(lambda *_, name=name: self.names.append(name))
            for name, m in modules
        ]

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _call_block(answer, block, x):
    watch = _Calls(
        ("block(x)", block), ("block.attn(...)", block.attn), ("block.mlp(...)", block.mlp)
    )
    try:
        return answer(block, x), watch.names
    finally:
        watch.remove()


def _run_block(exercise_id: str, answer) -> CheckResult:
    if (problem := _arity_problem(exercise_id, answer, ("block", "x"))) is not None:
        return problem
    for case, (h, a, b, s) in enumerate(BLOCK_CASES):
        block = _random_block(h, a, s, BLOCK_SEED + case)
        g = torch.Generator().manual_seed(100 + case)
        x = torch.randn(b, s, h, generator=g)
        shape = f"batch {b}, seq {s}, d_model {h}, {a} heads"
        with torch.no_grad():
            expected = block(x)
        state = {n: p.detach().clone() for n, p in block.named_parameters()}
        try:
            out, calls = _call_block(answer, block, x.clone().requires_grad_())
        except (Exception, SystemExit) as error:
            return _raised(exercise_id, error, answer, _block_exception_hint)
        if calls:
            called = "block(x)" if "block(x)" in calls else calls[0]
            return failed(exercise_id, f"Your function calls `{called}`.", CALLS_THE_BLOCK)
        if not isinstance(out, torch.Tensor):
            return failed(
                exercise_id,
                f"Your function returned {type(out).__name__}, not a tensor.",
                "return the block's output, a tensor of the same shape as x.",
            )
        changed = [n for n, p in block.named_parameters() if not torch.equal(p, state[n])]
        if changed:
            return failed(
                exercise_id,
                f"Your function changed the block's parameter `{changed[0]}`.",
                "a forward pass only reads the parameters: compute new tensors from them, "
                "never assign to them or change them in place.",
            )
        if out.dtype != x.dtype:
            return failed(
                exercise_id,
                f"Your output is {out.dtype}; the block computes in {x.dtype}.",
                "keep the dtype of x: no `.double()`, `.half()` or conversions to NumPy.",
            )
        if tuple(out.shape) != (b, s, h):
            return failed(
                exercise_id,
                f"For x of shape {(b, s, h)} your output has shape {tuple(out.shape)}.",
                HEADS_SHAPE,
            )
        if not bool(torch.isfinite(out).all()):
            rows = sorted({int(t) for t in torch.nonzero(~torch.isfinite(out))[:, 1]})
            if rows == [0]:  # only the first row: the one row a mask on the diagonal empties
                return failed(
                    exercise_id,
                    f"({shape}) your output is NaN at position 0, and only there.",
                    MASKED_DIAGONAL,
                )
            return failed(
                exercise_id,
                f"({shape}) your output is not finite at positions {rows[:5]}.",
                "look for a division by zero or a row of scores that is entirely -inf.",
            )
        if not torch.allclose(out, expected, rtol=1e-4, atol=1e-5):
            with torch.no_grad():
                for options, what, hint in BLOCK_MISTAKES:
                    if torch.allclose(out, _variant(block, x, **options), rtol=1e-4, atol=1e-5):
                        return failed(exercise_id, f"({shape}) your output equals {what}.", hint)
            later = x.clone()
            later[:, -1] += torch.randn(b, h, generator=g)
            try:
                moved, _ = _call_block(answer, block, later)
            except (Exception, SystemExit) as error:
                return _raised(exercise_id, error, answer, _block_exception_hint)
            if isinstance(moved, torch.Tensor) and moved.shape == out.shape:
                shift = (moved[:, :-1] - out[:, :-1]).detach().abs().amax(dim=(0, 2))
                early = float(shift.max())
                leaked = [int(t) for t in torch.nonzero(shift > 1e-5)[:, 0]]
                if leaked and len(leaked) == s - 1:  # every earlier position saw the last token
                    return failed(
                        exercise_id,
                        f"({shape}) changing only the last token changed your output at every "
                        f"earlier position (by up to {early:.3g}): they looked at a later token.",
                        LOOKS_AHEAD,
                    )
                if leaked:  # some only: a mask that hides too little, or heads mixed up
                    return failed(
                        exercise_id,
                        f"({shape}) changing only the last token changed your output at earlier "
                        f"positions {leaked[:6]} (by up to {early:.3g}) but not at the others: "
                        "a later token's values reached them.",
                        PARTIAL_LEAK,
                    )
            where = tuple(
                int(i) for i in torch.nonzero(~torch.isclose(out, expected, 1e-4, 1e-5))[0]
            )
            return failed(
                exercise_id,
                f"({shape}) your output differs from the block's, first at index {where}: "
                f"yours {float(out[where]):.5g}, expected {float(expected[where]):.5g}.",
                "go through the block in order: ln1, q k v split into heads, scores / "
                "sqrt(d_head), causal mask, softmax over the keys, times v, heads merged, proj, "
                "residual; then ln2, fc1, GeLU, fc2, residual.",
            )
        if out.grad_fn is None:
            return failed(
                exercise_id,
                f"({shape}) your output has the right values but carries no gradient.",
                NO_GRADIENT,
            )
        grad_out = torch.randn(out.shape, generator=g)
        block.zero_grad()
        try:
            out.backward(grad_out)
        except RuntimeError as error:
            return failed(
                exercise_id,
                f"({shape}) the backward pass through your output failed: {_short(error)}",
                NO_GRADIENT,
            )
        mine = {n: p.grad for n, p in block.named_parameters()}
        block.zero_grad()
        block(x).backward(grad_out)
        for name, p in block.named_parameters():
            if mine[name] is None or not torch.allclose(mine[name], p.grad, rtol=1e-3, atol=1e-5):
                return failed(
                    exercise_id,
                    f"({shape}) your output has the right values, but the gradient of "
                    f"`{name}` is not the block's.",
                    NO_GRADIENT,
                )
    n = gpt.layer_params(BLOCK_CASES[0][0])
    return passed(
        exercise_id,
        f"Your forward equals gu.gpt's Block (values and parameter gradients) for {len(BLOCK_CASES)} "
        f"shapes, and no output looks at a later token. (The first block has {n:,} parameters: "
        "12 h^2 + 13 h with h = 16.)",
    )


register(
    Exercise(
        id="primer_block_forward",
        chapter=CHAPTER,
        title="A pre-LN transformer block, written out",
        signature="block_forward(block, x) -> tensor like x; block is a gu.gpt.Block, x is "
        "(batch, seq, d_model); use its submodules, not block(x)",
        launch=f"{len(BLOCK_CASES)} blocks with random parameters, shapes (d_model, heads, batch, "
        f"seq) {', '.join(str(c) for c in BLOCK_CASES)}; values and gradients compared",
        run=functools.partial(_run_block, "primer_block_forward"),
        kind="function",
        time_limit=30.0,
    )
)


# --- 3. gradient accumulation over micro-batches of unequal token counts ---------------------------

IGNORE = -100  # F.cross_entropy's default ignore_index: a padded position's target
#: real tokens of each sequence, per call and micro-batch (the rest of the 8 positions is padding):
#: call 1 has equal counts (dividing each mean by m is exact there), call 2 does not
ACCUMULATE_LENGTHS = (((8, 8), (8, 8), (8, 8)), ((8, 8), (3, 2), (8, 4)))

TOKEN_WEIGHTED = (
    "the whole batch's mean is the sum of every real token's loss divided by N, the real tokens "
    "(targets other than -100) of all micro-batches: count N first, then give each micro-batch "
    "`F.cross_entropy(..., reduction='sum') / N` (or its mean times n_i / N). Dividing each "
    "micro-batch's mean by m is exact only when all hold the same number of real tokens "
    "(huggingface/transformers#34191)."
)
PADDING_COUNTED = (
    "padded positions (target -100) are not tokens: divide the summed loss by the number of "
    "real tokens, `(targets != -100).sum()` over all micro-batches, not by every position."
)


def _accumulate_calls() -> list[tuple[list[tuple[torch.Tensor, torch.Tensor]]]]:
    g = torch.Generator().manual_seed(STEP_SEED + 2)
    v, s = STEP_CONFIG["vocab_size"], STEP_CONFIG["seq_len"]
    calls = []
    for lengths in ACCUMULATE_LENGTHS:
        micro = []
        for row_lengths in lengths:
            tokens = torch.randint(v, (len(row_lengths), s), generator=g)
            targets = torch.randint(v, (len(row_lengths), s), generator=g)
            for row, n in enumerate(row_lengths):
                tokens[row, n:] = 0  # a padding token; its targets are ignored
                targets[row, n:] = IGNORE
            micro.append((tokens, targets))
        calls.append((micro,))
    return calls


def _grads_of(model, loss) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {n: g for n, g in _grads(model).items() if g is not None}


class _AccumulateStep:
    """Exercise 3's task: micro-batches with padding, the token mean of the whole batch."""

    counted = "the real tokens (targets other than -100) of all micro-batches"
    recipe = (
        "for each micro-batch, `logits, _ = model(tokens)` and `F.cross_entropy(logits.flatten("
        "0, 1), targets.flatten(), reduction='sum') / N`, N the real tokens of all micro-batches; "
        "backward on each, one `optimizer.step()` at the end."
    )
    hints: ClassVar[dict[str, str]] = dict(
        sum_hint="the loss is the whole batch's mean: divide the summed losses by N, the real "
        "tokens of all micro-batches, or the gradient (and the step) grows with the batch.",
        scale_hint="the loss is the whole batch's mean over its real tokens, unscaled: check "
        "each factor you multiply or divide a micro-batch's loss by.",
    )
    return_hint = (
        "return the whole batch's mean loss: the sum of the micro-batches' summed losses over N, "
        "as a Python number."
    )
    success = (
        f"{len(ACCUMULATE_LENGTHS)} accumulated steps (micro-batches of equal, then unequal "
        "token counts) equal SGD steps on each whole batch's token mean."
    )

    @staticmethod
    def loss(model, micro):
        tokens = torch.cat([t for t, _ in micro])
        return model(tokens, torch.cat([t for _, t in micro]))[1]

    @staticmethod
    def tokens(call) -> int:
        return sum(int((t != IGNORE).sum()) for _, t in call[0])

    @staticmethod
    def evidence(k, got, expected, model_before, call):
        micro = call[0]
        counts = [int((t != IGNORE).sum()) for _, t in micro]
        m, n = len(micro), sum(counts)
        means = sum(model_before(tok, tgt)[1] for tok, tgt in micro)
        variant = _grads_of(model_before, means / m)
        if len(set(counts)) > 1 and _close(got, variant):
            few, many = min(counts), max(counts)
            return (
                f"In call {k + 1}, the gradients `optimizer.step()` used are the mean of the "
                f"{m} micro-batches' means. Their real tokens are {counts}: that weights one "
                f"token of the {few}-token micro-batch {many / few:.3g} times as much as one of "
                f"the {many}-token one, so it is not the whole batch's mean.",
                TOKEN_WEIGHTED,
            )
        c = _scale(got, expected)
        if math.isclose(c, m, rel_tol=1e-3) and _close(
            got, {a: m * g for a, g in expected.items()}
        ):
            return (
                f"In call {k + 1}, the gradients `optimizer.step()` used are {m} times the whole "
                f"batch's mean: the {m} micro-batches' means were added, not averaged.",
                TOKEN_WEIGHTED,
            )
        positions = sum(t.numel() for _, t in micro)
        scaled = {name: c * g for name, g in expected.items()}
        if n != positions and math.isclose(c, n / positions, rel_tol=1e-3) and _close(got, scaled):
            return (
                f"In call {k + 1}, the gradients `optimizer.step()` used are {c:.4g} times "
                f"the whole batch's mean: {n} real tokens over {positions} positions. The "
                "padding was counted.",
                PADDING_COUNTED,
            )
        return None


def _run_accumulate_step(exercise_id: str, answer) -> CheckResult:
    names = ("model", "optimizer", "micro_batches")
    return _run_steps(exercise_id, answer, names, _accumulate_calls(), _AccumulateStep)


register(
    Exercise(
        id="primer_accumulate_step",
        chapter=CHAPTER,
        title="Gradient accumulation over micro-batches with padding",
        signature="accumulate_step(model, optimizer, micro_batches) -> the whole batch's mean "
        "loss as a number; micro_batches is a list of (tokens, targets), padded targets are -100; "
        "one optimizer.step() on the gradients of the mean over every real token",
        launch=f"{len(ACCUMULATE_LENGTHS)} calls of 3 micro-batches (2 sequences of "
        f"{STEP_CONFIG['seq_len']} positions) on a 1-layer gu.gpt model with torch.optim.SGD("
        f"lr={STEP_LR}, momentum={MOMENTUM}); real tokens per micro-batch "
        + ", then ".join(str([sum(r) for r in c]) for c in ACCUMULATE_LENGTHS),
        run=functools.partial(_run_accumulate_step, "primer_accumulate_step"),
        kind="function",
        time_limit=30.0,
    )
)
