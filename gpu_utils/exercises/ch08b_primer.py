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
number, as the exercise asks (a tensor is refused with the reason). Where the step's gradients
are not those, the loss itself is read from what reached the model's logits (hooks on the
forward pass and on its logits, and a count of ``backward()`` calls): how many times a gradient
reached one forward's logits (a second backward), none at all though backward ran (a loss cut
off from the model), -1/N at the targets only (no log-softmax), the distribution each position
was pulled towards (another position's target: logits and targets flattened in different
orders; a smoothed one: label smoothing; a token id at a padded position: padding scored), a
factor per micro-batch (its divisor: a running count, positions for tokens) and values that are
all bfloat16 or float16 numbers (a 16-bit loss).

``primer_block_forward`` compares the learner's forward with ``Block.forward`` on blocks whose
parameters are random (so that a missing LayerNorm or bias shows), several shapes. A wrong output
is first described by evidence, gathered as data (:class:`BlockEvidence`) before any hint is
chosen: whether two identical calls differ (dropout left on); the input of each of the block's
weights, however it is used (module, ``F.linear``, ``F.layer_norm``, ``u @ W.T``), compared
stage by stage with the block's, so the first wrong stage is named; which earlier positions (or
other sequences) move when only the last token of one sequence changes, at each stage and at the
output; whether a one-position sequence is wrong (no mask, scale or softmax axis can matter
there); probes with the attention's projection zeroed or every value vector equal (do a query's
weights sum to 1?); and the factor on q k^T that reproduces the output, fitted. An output equal
to a known variant (post-LN, no residual, ReLU, heads merged without a transpose...) is named as
a complement; where the evidence does not single out a cause, the message says what was
observed and what to check.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import math
import re
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..many_gpus import gpt
from . import _pyerrors
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "08b_pytorch_primer"

# --- shared ------------------------------------------------------------------------------------


_learner_line = _pyerrors.where  # ' at line N: `text`' for the learner's failing line
_line_values = _pyerrors.line_values  # the values of the names on that line


def _described(values: dict[str, object]) -> str:
    """'`future` is a 2 x 2 tensor of bool; `scores` is 2 x 2 x 5 x 5 (float32)' for the
    tensors and plain numbers among ``values``; '' when there are none."""
    parts = []
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).removeprefix("torch.")
            size = " x ".join(map(str, value.shape)) if value.dim() else "a single number"
            parts.append(f"`{name}` is {size} ({dtype})")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"`{name}` is the Python {type(value).__name__} {value}")
    return "; ".join(parts)


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
    # the line's code, for hints that read it (a reduction without keepdim, ...); an exception
    # type without a __dict__ keeps none
    with contextlib.suppress(AttributeError):
        error._course_where = where
        error._course_values = _line_values(error, answer)
    hint = ""
    if "cannot be multiplied" in text:  # a linear layer's sizes, read from the modules first
        found = _pyerrors.explain(error, answer)
        hint = found if found and found[1] else ""
    hint = hint or hints(error, text)
    if not hint:  # the chapter names nothing: read the values on the failing line
        hint = _pyerrors.explain(error, answer) or ""
    if isinstance(hint, tuple):  # (what the checker observed besides the error, hint)
        seen, hint = hint
        if seen:
            what = what + ("" if what.endswith(".") else ".") + " " + seen
    return failed(exercise_id, what, hint or "run it in a cell of its own to see the full error.")


def _with_source_evidence(run):
    """``run``, whose wrong-result verdicts (not an exception's) put first what the cell's source
    shows: an out-of-place tensor method whose result is thrown away."""

    def checked(answer) -> CheckResult:
        result = run(answer)
        if result.passed or not result.attempted or result.what.startswith("Your function"):
            return result
        found = _pyerrors.dropped_evidence(answer)
        if found is None:
            return result
        seen, hint = found
        return failed(result.exercise_id, f"{result.what} {seen}", hint)

    return checked


# --- 1. one training step ------------------------------------------------------------------------

STEP_CONFIG = dict(vocab_size=32, seq_len=8, d_model=16, n_layers=1, n_heads=2)
STEP_SEED, STEP_LR, MOMENTUM = 3, 0.1, 0.9
#: sequences per call: the last call holds one, where `squeeze()` would also drop the batch axis
STEP_BATCHES = (4, 4, 4, 1)
STEPS = len(STEP_BATCHES)

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
CROSS_ENTROPY_SHAPES = (
    "`F.cross_entropy` takes logits of shape (N, vocab) and targets of shape (N,): flatten "
    "batch and sequence together, `F.cross_entropy(logits.flatten(0, 1), targets.flatten())` "
    "(or put the vocabulary second, `logits.transpose(1, 2)`)."
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
FLOOR_DIVISION = (
    "`//` is floor division: it rounds the loss down to a whole number, which has no gradient "
    "(autograd has no derivative for it). Divide with `/`."
)
NOT_THE_OPTIMIZER = (
    "update the parameters with the optimizer you are given, `optimizer.step()`: a new "
    "optimizer (or a manual update) starts without the given one's momentum."
)


#: per call, the smallest and largest target id drawn: call 2's targets hold neither token 0 nor
#: the vocabulary's last id, so that a size taken from the data (``F.one_hot`` without
#: ``num_classes``, ``targets.max() + 1``) differs from the vocabulary there (calls 1 and 3 hold
#: both, which a test asserts)
TARGET_RANGES = ((0, STEP_CONFIG["vocab_size"] - 1), (1, STEP_CONFIG["vocab_size"] - 2), None, None)


def _step_batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(STEP_SEED + 1)
    v, s = STEP_CONFIG["vocab_size"], STEP_CONFIG["seq_len"]
    batches = []
    for k, batch in enumerate(STEP_BATCHES):
        low, high = TARGET_RANGES[k] or (0, v - 1)
        tokens = torch.randint(v, (batch, s), generator=g)
        batches.append((tokens, torch.randint(low, high + 1, (batch, s), generator=g)))
    return batches


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


IGNORE = -100  # F.cross_entropy's default ignore_index: a padded position's target
_ITEM_TEXTS = ("'float' object has no attribute", "'int' object has no attribute")


def _round(value: float) -> bool:
    """Whether ``value`` is a number a person would type: two significant digits at most."""
    if not math.isfinite(value) or value <= 0:
        return False
    return math.isclose(value, float(f"{value:.2g}"), rel_tol=1e-4)


def _step_exception_hint(error: BaseException, text: str):
    if isinstance(error, AttributeError) and any(t in text for t in _ITEM_TEXTS):
        numbers = {
            n: v
            for n, v in (getattr(error, "_course_values", None) or {}).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        if "attribute 'backward'" in text or not numbers:
            return ITEM_TOO_EARLY
        name, value = next(iter(numbers.items()))
        kind = type(value).__name__
        return (
            f"On that line `{name}` is the Python {kind} {value}, where a tensor is needed.",
            f"check where `{name}` comes from: a loop that unpacks pairs must name both parts in "
            "their order (`enumerate(...)` yields (index, item) pairs: `for i, (tokens, "
            "targets) in enumerate(micro_batches)`), and `.item()` turns a tensor into a "
            "number only for the value you return.",
        )
    if "expected target dtype to be Long" in text or (
        "expected scalar type Long" in text and "Float" in text
    ):
        return (
            "`F.cross_entropy`'s targets are class indices, integers (int64, 'Long'): pass "
            "the targets as they are, without `.float()`; a float target would be read as "
            "a probability per class, of the logits' shape."
        )
    if "does not require grad" in text:
        return DETACHED
    if isinstance(error, AttributeError) and "'NoneType' object has no attribute" in text:
        return (
            "a parameter's `.grad` is None until the first `backward()` reaches it (and again "
            "after `zero_grad()`, which sets it to None): clear the gradients with "
            "`optimizer.zero_grad()`, or skip the parameters whose `.grad` is None."
        )
    if "Expected target size" in text or "Expected input batch_size" in text:
        return CROSS_ENTROPY_SHAPES
    if "floor_divide" in text:
        return FLOOR_DIVISION
    if "Target -100 is out of bounds" in text:
        return (
            "-100 marks a padded position: `F.cross_entropy` skips it only while `ignore_index` "
            "is -100, its default; with another `ignore_index` (or a mask that leaves -100 in), "
            "-100 is read as a class id, out of range. Keep the default, or drop those positions "
            "before the loss."
        )
    line = getattr(error, "_course_where", "")
    made = re.search(r"\bnn\.([A-Z]\w*Loss)\(\s*[^)\s]", line)
    if made:
        name = made.group(1)
        return (
            f"`nn.{name}` is a module class: its constructor takes settings (reduction, "
            f"ignore_index, ...), not the logits and targets. Make the module, then call it, "
            f"`nn.{name}()(logits, targets)`, or use the function, `F.cross_entropy(logits, "
            "targets)`."
        )
    longer = re.search(r"sequence of (\d+) tokens is longer than seq_len (\d+)", text)
    if longer:
        got, most = (int(g) for g in longer.groups())
        joined = (
            f" {got} = {got // most} x {most}: sequences joined end to end along the sequence axis."
            if got % most == 0
            else ""
        )
        return (
            f"the model read sequences of {got} positions, and it takes at most {most}.{joined} "
            "Tokens are (batch, seq): sequences (and micro-batches) are stacked along the batch, "
            "`torch.cat(..., dim=0)`, or run through the model one micro-batch at a time."
        )
    if "backward through the graph a second time" in text:
        return "call `loss.backward()` once per step: the graph is freed after the first call."
    if "grad can be implicitly created only for scalar" in text:
        return (
            "`backward()` needs one number: reduce the loss to its mean over every position "
            "(`F.cross_entropy`'s default) before calling it."
        )
    return ""


# --- evidence on an error: what backward ran on, what the model read, what the data provoked -----

LOGITS_NOT_LOSS = (
    "`backward()` runs on the loss, one number, not on the logits. The model returns a pair, "
    "`(logits, loss)`, in that order: `logits, loss = model(tokens, targets)` (or "
    "`logits, _ = model(tokens)` and `loss = F.cross_entropy(...)`), then `loss.backward()`."
)
PER_POSITION_LOSS = (
    "`backward()` needs one number: the mean over every position, `F.cross_entropy`'s default "
    "(reduction='mean'), not one loss per position (reduction='none') left unreduced."
)
NOT_A_NUMBER = (
    "`backward()` needs one number (a tensor of shape ()): the loss and every count or factor "
    "it is multiplied or divided by must be single numbers; `.sum(dim=...)` or `.mean(dim=...)` "
    "keeps the other axes, `.sum()` counts over all of them."
)
SIZE_FROM_DATA = (
    "a size was taken from the data: the ids present in the targets change from batch to batch, "
    "the vocabulary does not. Size anything that spans the vocabulary by it, `logits.shape[-1]` "
    "(e.g. `F.one_hot(targets, num_classes=logits.shape[-1])`), never by `targets.max() + 1`."
)
INPUTS_SWAPPED = (
    "the model reads the tokens and the loss scores against the targets: unpack each pair in "
    "its order, `tokens, targets`, and call `model(tokens)`."
)


def _tied(model) -> dict[str, list[str]]:
    """For each parameter that several modules share (a tied weight): its other names."""
    names: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return {n[0]: n[1:] for n in names.values() if len(n) > 1}


def _with_target(task, call, value: int):
    """A copy of ``call`` whose first target (a real token in every batch) is ``value``."""
    copied = _clone(call)
    for _, targets in task.pairs(copied):
        targets[0, 0] = value
    return copied


def _scratch(model_before):
    """A model at ``model_before``'s weights and a new optimizer for it, as the exercise gives."""
    model = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
    model.load_state_dict(model_before.state_dict())
    return model, torch.optim.SGD(model.parameters(), lr=STEP_LR, momentum=MOMENTUM)


def _runs(answer, model_before, call) -> bool:
    """Whether the answer runs without an error on ``call`` (a scratch model and optimizer)."""
    model, optimizer = _scratch(model_before)
    try:
        answer(model, optimizer, *call)
    except (Exception, SystemExit):
        return False
    return True


def _shape(t: torch.Tensor) -> str:
    return str(tuple(t.shape))


def _step_error_evidence(k, answer, task, call, model_before, backwards, watch, error, text):
    """(what the checker observed, hint) for an exception of a step answer, or a hint alone:
    the tensor ``backward()`` ran on when it was not one number, a model input that is the
    call's targets, and whether the error follows the targets' values (the same call with one
    target changed runs)."""
    pairs = task.pairs(call)
    if "grad can be implicitly created only for scalar" in text and backwards.on:
        on = backwards.on[-1]
        logits = [f.logits for f in watch.forwards]
        if any(t.shape == on.shape and torch.equal(t, on) for t in logits):
            return (
                f"`backward()` ran on a tensor of shape {_shape(on)}, and its values are "
                "exactly the logits the model returned (batch, sequence, vocabulary).",
                LOGITS_NOT_LOSS,
            )
        per_position = {tuple(t.shape) for t, _ in pairs} | {(t.numel(),) for t, _ in pairs}
        if tuple(on.shape) in per_position:
            return (
                f"`backward()` ran on a tensor of shape {_shape(on)}: one value per position.",
                PER_POSITION_LOSS,
            )
        return f"`backward()` ran on a tensor of shape {_shape(on)}, not one number.", NOT_A_NUMBER
    if (
        k > 0
        and len(pairs) == 1
        and pairs[0][0].shape[0] == 1
        and _runs(answer, model_before, tuple(t.repeat(2, 1) for t in pairs[0]))
    ):  # the same sequence twice runs: the error is the batch of one's
        earlier = "Call 1" if k == 1 else f"Calls 1-{k}"
        return (
            f"{earlier} ran without an error; call {k + 1} holds a batch of one sequence, and "
            "it raised, while the same sequence twice (a batch of 2) runs: the code treats an "
            "axis of size 1 differently.",
            "keep the batch axis when it is 1: no `squeeze()` (it drops every axis of size 1); "
            "flatten with `logits.flatten(0, 1)` or `logits.reshape(-1, logits.shape[-1])`.",
        )
    for seen in watch.inputs:
        if any(seen.shape == t.shape and torch.equal(seen, t) for _, t in pairs):
            padded = " (with -100 at the padding, which no embedding has)" if seen.min() < 0 else ""
            return f"The model was given the targets as its input{padded}.", INPUTS_SWAPPED
    v = STEP_CONFIG["vocab_size"]
    control = None  # whether the call itself, unchanged, raises again on a scratch model
    for value, name in ((v - 1, f"token {v - 1}, the vocabulary's last id"), (0, "token 0")):
        missing = [i for i, (_, t) in enumerate(pairs) if not bool((t == value).any())]
        if not missing or not _runs(answer, model_before, _with_target(task, call, value)):
            continue
        if control is None:
            control = not _runs(answer, model_before, _clone(call))
        if not control:  # the error did not come back: it was not the data's
            break
        if len(pairs) == 1:
            where = f"Call {k + 1}'s targets hold no {name}"
        else:
            which = ", ".join(str(i + 1) for i in missing)
            where = (
                f"In call {k + 1}, the targets of micro-batch{'es' if len(missing) > 1 else ''} "
                f"{which} hold no {name}"
            )
        earlier = ("Call 1 ran" if k == 1 else f"Calls 1-{k} ran") + " without an error. "
        return (
            (earlier if k else "")
            + f"{where}, and the same call with one target "
            + ("" if len(pairs) == 1 else "of each micro-batch ")
            + f"set to {value} runs: the error depends on which ids the targets hold.",
            SIZE_FROM_DATA,
        )
    return _step_exception_hint(error, text)


# --- evidence at the logits: what the loss did, from the gradient it sent back -------------------

#: a gradient at the logits whose values are all this dtype's numbers was computed in it
_HALF_DTYPES = (torch.bfloat16, torch.float16)
DOUBLE_BACKWARD = (
    "call `backward()` once per forward pass: every call adds its gradients into `.grad`, a "
    "first `backward(retain_graph=True)` (to print a norm, say) included. To look at the "
    "gradients, read `.grad` after the one backward."
)
NLL_ON_LOGITS = (
    "`F.nll_loss` expects log-probabilities: give it `F.log_softmax(logits, dim=-1)`, or give "
    "the raw logits to `F.cross_entropy`, which applies the log-softmax itself."
)
WRONG_TARGETS = (
    "flatten the logits and the targets in the same order: `logits.flatten(0, 1)` (batch, then "
    "position, as `targets.flatten()`), or `logits.transpose(1, 2)` against `targets` as they are."
)
SMOOTHED = (
    "the exercise's loss is the plain mean cross-entropy: no `label_smoothing` (a training "
    "recipe's choice, with its own value to tune)."
)
LOW_PRECISION = (
    "compute the loss in float32, as the model's logits come: no `.bfloat16()`, `.half()` or "
    "`.to(...)` before `F.cross_entropy` (a 16-bit loss rounds the gradient; mixed-precision "
    "training keeps the loss in float32)."
)
SCORED_INPUTS = (
    "score the logits against `targets`: position t's target is the next token, which "
    "`targets` already holds; `tokens` is what the model reads. "
    "`F.cross_entropy(logits.flatten(0, 1), targets.flatten())`."
)
OTHER_TARGETS = (
    "score each position's logits against the target at the same (batch, position): reshape "
    "the logits and the targets the same way, `logits.flatten(0, 1)` with `targets.flatten()`."
)
ZERO_IS_A_TOKEN = (
    "token 0 is a real token: every position has a target, and the only targets to skip are "
    "-100 (padding; `F.cross_entropy`'s default ignore_index). No `ignore_index=0`, no "
    "`targets > 0` mask."
)
LAST_POSITION = (
    "every position has a target: `targets` already holds each position's next token (the "
    "shift is done), so score all of them, with no `[:, :-1]` on the logits or the targets."
)
UNSCORED = (
    "positions without gradient were left out of the loss: score every position whose target "
    "is not -100, `F.cross_entropy(logits.flatten(0, 1), targets.flatten())`."
)
PADDING_SCORED = (
    "padded positions (target -100) must not be scored: pass the targets as they are to "
    "`F.cross_entropy`, which skips -100 (`ignore_index`), instead of replacing -100 by a "
    "token id."
)
ONE_DIVISOR = (
    "divide every micro-batch's summed loss by the same N, the real tokens (targets other than "
    "-100) of all micro-batches, counted before the loop; a micro-batch's mean loss weighs "
    "n_i / N, n_i its own real tokens."
)


class _Backwards:
    """Counts the calls of ``backward()`` during the learner's call (``loss.backward()`` goes
    through ``torch.autograd.backward``; ``torch.autograd.grad`` counts too): both are wrapped
    while the context is open, so that no other call gains a frame of the checker's (a warning
    the learner's code triggers keeps pointing at the learner's line)."""

    NAMES = ("backward", "grad")

    def __init__(self) -> None:
        self.count = 0
        self.grad_calls = 0  # of them, calls of torch.autograd.grad (which fills no .grad)
        self.saved: dict = {}
        self.on: list[torch.Tensor] = []  # the tensors backward() ran on, in order

    def _counting(self, function, name: str):
        @functools.wraps(function)
        def counted(*args, **kwargs):
            self.count += 1
            self.grad_calls += name == "grad"
            first = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
            for t in first if isinstance(first, (list, tuple)) else (first,):
                if isinstance(t, torch.Tensor):
                    self.on.append(t.detach())
            return function(*args, **kwargs)

        return counted

    def __enter__(self) -> _Backwards:
        for name in self.NAMES:
            self.saved[name] = getattr(torch.autograd, name)
            setattr(torch.autograd, name, self._counting(self.saved[name], name))
        return self

    def __exit__(self, *_) -> None:
        for name, function in self.saved.items():
            setattr(torch.autograd, name, function)


@dataclass
class _Forward:
    """One forward pass of the model during the learner's call: its input tokens, its logits,
    and each gradient that reached those logits (one per backward through them)."""

    tokens: torch.Tensor
    logits: torch.Tensor
    tracked: bool  # the logits carry autograd
    grads: list


class _Watch:
    """Hooks on the model recording every forward pass and the gradients at its logits."""

    def __init__(self, model) -> None:
        self.forwards: list[_Forward] = []
        self.inputs: list[torch.Tensor] = []  # every forward's input, recorded before it runs
        model.register_forward_pre_hook(self._input)
        model.register_forward_hook(self._record)

    def _input(self, module, inputs) -> None:
        if inputs and isinstance(inputs[0], torch.Tensor):
            self.inputs.append(inputs[0].detach().clone())

    def _record(self, module, inputs, output) -> None:
        logits = output[0] if isinstance(output, (tuple, list)) else output
        if not (inputs and isinstance(inputs[0], torch.Tensor) and torch.is_tensor(logits)):
            return
        seen = _Forward(inputs[0].detach().clone(), logits.detach().clone(), False, [])
        if logits.requires_grad:
            seen.tracked = True
            logits.register_hook(lambda g, seen=seen: seen.grads.append(g.detach().clone()))
        self.forwards.append(seen)


def _targets_of(tokens: torch.Tensor, pairs) -> torch.Tensor | None:
    """The targets of the (tokens, targets) pair whose tokens these are, or of all of them."""
    for tok, tgt in pairs:
        if tok.shape == tokens.shape and torch.equal(tok, tokens):
            return tgt
    whole = torch.cat([tok for tok, _ in pairs])
    if whole.shape == tokens.shape and torch.equal(whole, tokens):
        return torch.cat([tgt for _, tgt in pairs])
    return None


def _near(a: torch.Tensor, b: torch.Tensor, scale: float) -> bool:
    return bool((a - b).abs().max() <= 1e-4 * scale + 1e-7)


def _logit_evidence(k: int, forwards: list[_Forward], pairs, n: int) -> tuple[str, str] | None:
    """(what, hint) read from the gradients that reached the logits, compared with those of the
    whole batch's mean cross-entropy over its ``n`` real tokens; None when they say nothing.

    Per forward pass: G the gradient at its logits, P = softmax(logits); a correct loss sends
    G = (P - onehot(target)) / n at each real token and 0 at padding. ``R = P - n G`` is then the
    distribution each position was pulled towards: one-hot at its own target when right, at
    another position's target when logits and targets were paired in another order, smoothed
    by label smoothing, one-hot at a token id where padding was scored."""
    nth = f"In call {k + 1}"
    twice = [f for f in forwards if len(f.grads) > 1]
    if twice:
        return (
            f"{nth}, the gradient reached the logits of one forward pass {len(twice[0].grads)} "
            "times: `backward()` ran that many times through the same graph, and `.grad` "
            "added every pass.",
            DOUBLE_BACKWARD,
        )
    seen = []  # (G, expected G, P, targets, real mask, input tokens)
    raw = []  # the logits of each entry of seen
    for f in forwards:
        if not f.grads:
            continue
        targets = _targets_of(f.tokens, pairs)
        if targets is None and any(
            f.tokens.shape == t.shape and torch.equal(f.tokens, t) for _, t in pairs
        ):
            return (
                f"{nth}, the model's input was not the tokens of a pair you were given but its "
                "targets: tokens and targets were swapped.",
                INPUTS_SWAPPED,
            )
        if targets is None or f.grads[0].shape != f.logits.shape:
            return None
        p = f.logits.float().softmax(-1)
        real = targets != IGNORE
        onehot = F.one_hot(targets.clamp(min=0), p.shape[-1]).float()
        expected = (p - onehot) * real[..., None] / n
        seen.append((f.grads[0].float(), expected, p, targets, real, f.tokens))
        raw.append(f.logits.float())
    if not seen:
        return None
    scale = max(float(e.abs().max()) for _, e, *_ in seen)
    if all(_near(g, e, scale) for g, e, *_ in seen):
        return None  # the loss was right: the problem is elsewhere
    for g, *_ in seen:  # a softmax along the vocabulary sends gradients that sum to 0 over it
        tol = 1e-4 * scale * g.shape[-1]
        if g.dim() != 3 or float(g.sum(-1).abs().max()) <= tol:
            continue
        for axis, along in (
            (0, "the sequences of the batch"),
            (1, "the positions of each sequence"),
        ):
            if g.shape[axis] > 1 and float(g.sum(axis).abs().max()) <= tol:
                return (
                    f"{nth}, the gradient at the logits sums to 0 over {along} (dim {axis}), "
                    "not over the vocabulary at each position: the loss normalised the scores "
                    f"along dim {axis}.",
                    "take the (log-)softmax over the vocabulary, the last dimension: "
                    "`F.log_softmax(logits, dim=-1)`, or let `F.cross_entropy` do it on "
                    "`logits.flatten(0, 1)`.",
                )
    # one factor per forward pass (micro-batch): the divisor each was given
    factors = []
    for g, e, *_ in seen:
        c = float((g * e).sum() / (e * e).sum()) if bool(e.any()) else math.nan
        factors.append(c if math.isfinite(c) and _near(g, c * e, scale * max(1, abs(c))) else None)
    if len(seen) > 1 and all(c is not None and c > 0 for c in factors):
        counts = [int(real.sum()) for _, _, _, _, real, _ in seen]
        divisors = [n / c for c in factors]
        what = (
            f"{nth}, each micro-batch's gradient at the logits is its share of the whole "
            f"batch's mean times {', '.join(f'{c:.3g}' for c in factors)}: the micro-batches' "
            f"summed losses (real tokens {counts}) were divided by "
            f"{', '.join(f'{d:.4g}' for d in divisors)}, not all by N = {n}."
        )
        running = [sum(counts[: i + 1]) for i in range(len(counts))]
        positions = [int(t.numel()) for _, _, _, t, _, _ in seen]
        if all(math.isclose(d, r, rel_tol=1e-3) for d, r in zip(divisors, running, strict=True)):
            what += f" Those are the running counts of real tokens, {running}."
        elif all(
            math.isclose(c, q / r, rel_tol=1e-3)
            for c, q, r in zip(factors, positions, counts, strict=True)
        ):
            what += (
                f" That weighs each micro-batch's mean by its positions, {positions}, padding "
                f"included, instead of its real tokens, {counts}."
            )
        if len({round(c, 4) for c in factors}) > 1:
            return what, ONE_DIVISOR
    padded = [
        (g, p, t) for g, _, p, t, real, _ in seen if bool((g[~real].abs() > 1e-7 * scale).any())
    ]
    if padded and all(_near(g[real], e[real], scale) for g, e, _, _, real, _ in seen):
        g, p, t = padded[0]
        r = p[t == IGNORE] - n * g[t == IGNORE]
        ids = sorted({int(i) for i in r.argmax(-1)})
        pulled = (
            f"; their logits were pulled towards token {ids[0]}, as if -100 were replaced by "
            f"{ids[0]}"
            if len(ids) == 1 and bool((r.max(-1).values > 0.99).all())
            else ""
        )
        return (
            f"{nth}, the gradient at the logits is right at every real token, but not zero at "
            f"the padded positions (target -100): they were scored{pulled}.",
            PADDING_SCORED,
        )
    if (found := _shifted(nth, seen, scale)) is not None:
        return found
    if (found := _unscored(nth, seen, n, scale)) is not None:
        return found
    g, e, p, targets, real, tokens = seen[0]
    vocab = p.shape[-1]
    onehot = F.one_hot(targets.clamp(min=0), vocab).float() * real[..., None]
    if _near(n * g, -onehot, 1.0):
        return (
            f"{nth}, the gradient at the logits is -1/{n} at each target token and 0 at every "
            "other: the loss was minus the target's logit, with no softmax in it.",
            NLL_ON_LOGITS,
        )
    pull = p - n * g  # the distribution each position was pulled towards
    one = bool((pull[real].max(-1).values > 0.999).all())
    used = pull.argmax(-1)
    if one and not torch.equal(used[real], targets[real]):
        wrong = int((used[real] != targets[real]).sum())
        pulls = f"{nth}, the gradient at the logits pulls {wrong} of {int(real.sum())} positions"
        if tokens.shape == used.shape and torch.equal(used[real], tokens[real]):
            return (
                f"{pulls} towards the token at the same position of the input: each position "
                "was scored against its own input token, not against its target (the next "
                "token).",
                SCORED_INPUTS,
            )
        other = f"{pulls} towards a token that is not their target, but another position's."
        if targets.dim() == 2:
            b, s = targets.shape
            places = torch.arange(s * b)
            orders = (  # (what position (b, t) was scored against, in which order)
                (
                    targets.flatten()[places.view(s, b).T],
                    " Position (b, t) was scored against the target at place t x batch + b of "
                    "`targets.flatten()`: the logits were flattened position-major, (seq, "
                    "batch), the targets batch-major.",
                ),
                (
                    targets.T.flatten()[places.view(b, s)],
                    " Position (b, t) was scored against the target at place b x seq + t of "
                    "`targets.T.flatten()`: the targets were flattened position-major, (seq, "
                    "batch), the logits batch-major.",
                ),
            )
            for swapped, why in orders:
                if torch.equal(used, swapped):
                    return other + why, WRONG_TARGETS
        if bool(torch.isin(used[real], targets[real]).all()):
            return other, OTHER_TARGETS
        return f"{pulls} towards a token that is not their target.", OTHER_TARGETS
    sigmoid = torch.sigmoid(raw[0])
    if sigmoid.shape == g.shape:
        base = (sigmoid - onehot) * real[..., None]
        c = float((g * base).sum() / (base * base).sum()) if bool(base.any()) else math.nan
        if math.isfinite(c) and c > 0 and _near(g, c * base, scale):
            return (
                f"{nth}, the gradient at the logits is sigmoid(logits) - onehot(target), scaled: "
                "each vocabulary entry was scored on its own, by a sigmoid (binary "
                "cross-entropy), not by one softmax over the vocabulary.",
                "the next token is one class out of the vocabulary: use the softmax "
                "cross-entropy, `F.cross_entropy(logits.flatten(0, 1), targets.flatten())`, "
                "not `binary_cross_entropy_with_logits` against one-hot targets.",
            )
    share = onehot[real].sum(0) / max(1, int(real.sum()))  # each target's share of the batch
    if int(real.sum()) > 1 and _near(pull[real], share.expand_as(pull[real]), 1.0):
        return (
            f"{nth}, the gradient at the logits pulls every position towards the same "
            "distribution: each target's share of the whole batch. Each position was scored "
            "against every target of the batch, not against its own.",
            "score each position against its own target only: `F.cross_entropy(logits.flatten("
            "0, 1), targets.flatten())`, or by hand `-logp.gather(-1, targets.unsqueeze(-1))` "
            "(indexing `logp[..., targets]` with the whole targets tensor picks every target "
            "at every position).",
        )
    off = pull[real] * (1 - onehot[real])
    eps = float(off.sum(-1).mean()) * vocab / (vocab - 1)
    smoothed = (1 - eps) * onehot + eps / vocab
    if 0 < eps < 1 and _near(g, (p - smoothed) * real[..., None] / n, scale):
        return (
            f"{nth}, the gradient at the logits pulls each position towards its target with "
            f"weight {1 - eps + eps / vocab:.3g} and towards every other token with "
            f"{eps / vocab:.3g}: targets smoothed by {eps:.2g}.",
            SMOOTHED,
        )
    gap = float((g - e).abs().max())
    if gap <= 0.02 * scale:
        for dtype in _HALF_DTYPES:
            if all(torch.equal(x, x.to(dtype).float()) for x, *_ in seen):
                name = str(dtype).replace("torch.", "")
                return (
                    f"{nth}, the gradient at the logits differs from the mean cross-entropy's "
                    f"by at most {gap / scale:.2%} of its largest value, and every value of it "
                    f"is a {name} number: the loss was computed in {name}.",
                    LOW_PRECISION,
                )
    return _gathered_rows(nth, g, targets, real, scale) or _other_loss(
        nth, raw[0], g, targets, real, scale
    )


#: Losses a hand-written cross-entropy turns into, each as a function of the logits, the
#: targets and the real-token mask, with what it is (the gradient at the logits tells them apart).
_OTHER_LOSSES = (
    (
        lambda z, t, r: -(z.softmax(-1) * z.log_softmax(-1)).sum(-1)[r].mean(),
        "the entropy of the model's own distribution, -sum p log p over the vocabulary: a loss "
        "that never reads the targets",
        "the cross-entropy scores each position's target: -log p[target], "
        "`F.cross_entropy(logits.flatten(0, 1), targets.flatten())`.",
    ),
    (
        lambda z, t, r: (
            -(z.gather(-1, t.clamp(min=0)[..., None])[..., 0] - z.exp().sum(-1))[r].mean()
        ),
        "-(logit of the target - sum of exp(logits)): the log-softmax without its log, the sum "
        "of exponentials subtracted where its logarithm belongs",
        "log-softmax is logits - logsumexp(logits): `logits - torch.logsumexp(logits, dim=-1, "
        "keepdim=True)` (or `F.log_softmax(logits, dim=-1)`).",
    ),
)


def _other_loss(nth: str, logits, g, targets, real, scale: float) -> tuple[str, str] | None:
    """(what, hint) when the gradient at the logits is, up to a positive factor, that of one of
    :data:`_OTHER_LOSSES`."""
    for loss, what, hint in _OTHER_LOSSES:
        z = logits.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            try:
                (grad,) = torch.autograd.grad(loss(z, targets, real), z)
            except RuntimeError:
                continue
        c = float((g * grad).sum() / (grad * grad).sum()) if bool(grad.any()) else math.nan
        if math.isfinite(c) and c > 0 and _near(g, c * grad, scale):
            return f"{nth}, the gradient at the logits is that of {what}.", hint
    return None


def _gathered_rows(nth: str, g, targets, real, scale: float) -> tuple[str, str] | None:
    """(what, hint) when the gradient at the logits reaches only the positions whose flat index
    is a target id, raising one and the same token there: the log-probabilities indexed with the
    targets along the positions' axis (``logp.gather(0, ...)``, ``logp[targets, 0]``)."""
    flat = g.reshape(-1, g.shape[-1])
    reached = (flat.abs().amax(-1) > 1e-7 * scale).nonzero().flatten().tolist()
    if not reached:
        return None
    raised = {int(flat[r].argmin()) for r in reached}
    ids = {int(t) for t in targets[real].flatten().tolist()}
    if len(raised) != 1 or set(reached) != {t for t in ids if t < flat.shape[0]}:
        return None
    token = raised.pop()
    return (
        f"{nth}, the gradient at the logits reaches only the {len(reached)} positions whose "
        f"place in the flattened batch is one of the target ids, and raises token {token} at "
        "each: the targets picked positions (rows), and a fixed column picked the token.",
        "pick each position's own target along the vocabulary, the last axis: "
        "`logp.gather(-1, targets.unsqueeze(-1))` (or `logp[torch.arange(n), targets]` on "
        "flattened (n, vocab) log-probabilities), not along the positions (dim 0).",
    )


def _shifted(nth: str, seen: list, scale: float) -> tuple[str, str] | None:
    """(what, hint) when every position the loss reached is pulled towards the target of a
    position ``d`` places later in its sequence (and the last ``d`` positions are not scored):
    targets shifted again although they are already the next tokens."""
    for d in (1, 2):
        found = 0
        for g, _, p, targets, real, _ in seen:
            if targets.dim() != 2 or targets.shape[1] <= d:
                return None
            scored = real & (g.abs().amax(-1) > 1e-7 * scale)
            if not bool(scored.any()):
                continue
            later = torch.full_like(targets, IGNORE)
            later[:, :-d] = targets[:, d:]
            pull = _pull(g, p, scored)
            if pull is None or not bool((later[scored] != IGNORE).all()):
                break
            if not torch.equal(pull[scored], later[scored]) or torch.equal(
                pull[scored], targets[scored]
            ):
                break
            found += int(scored.sum())
        else:
            if found:
                return (
                    f"{nth}, the gradient at the logits pulls each of the {found} positions it "
                    + (
                        "reaches towards the target of the next position, and the last "
                        "position of each sequence gets none"
                        if d == 1
                        else f"reaches towards the target of the position {d} places later, "
                        f"and the last {d} positions of each sequence get none"
                    )
                    + ": the targets were shifted again. `targets` is already the next "
                    "token of each position (targets[:, t] = tokens[:, t + 1]).",
                    "score the logits at position t against `targets[:, t]` as given, with no "
                    "further shift: `F.cross_entropy(logits.flatten(0, 1), targets.flatten())`.",
                )
    return None


def _pull(g, p, scored) -> torch.Tensor | None:
    """The token each scored position is pulled towards, when the gradient at its logits is
    c (p - onehot(token)) with one positive factor c for all (a mean over some count); None when
    it is not."""
    i = g[scored].argmin(-1)
    base = p[scored] - F.one_hot(i, p.shape[-1]).float()
    c = float((g[scored] * base).sum() / (base * base).sum()) if bool(base.any()) else math.nan
    scale = float(g.abs().max())
    if not (math.isfinite(c) and c > 0 and _near(g[scored], c * base, scale)):
        return None
    out = torch.full(scored.shape, IGNORE, dtype=torch.long)
    out[scored] = i
    return out


def _unscored(nth: str, seen: list, n: int, scale: float) -> tuple[str, str] | None:
    """(what, hint) when the gradient at the logits is zero at some real positions (left out of
    the loss) and, at every other, the mean cross-entropy's times one factor."""
    dead = [real & (g.abs().amax(-1) <= 1e-7 * scale) for g, _, _, _, real, _ in seen]
    if not any(bool(d.any()) for d in dead):
        return None
    kept = [real & ~d for d, (*_, real, _) in zip(dead, seen, strict=True)]
    num = sum(float((g[k] * e[k]).sum()) for k, (g, e, *_) in zip(kept, seen, strict=True))
    den = sum(float((e[k] ** 2).sum()) for k, (g, e, *_) in zip(kept, seen, strict=True))
    c = num / den if den else math.nan
    if not (
        math.isfinite(c)
        and all(
            _near(g[k], c * e[k], scale * max(1.0, abs(c)))
            for k, (g, e, *_) in zip(kept, seen, strict=True)
        )
    ):
        return None
    count = sum(int(d.sum()) for d in dead)
    left = n - count
    rest = (
        f" The other {left} positions carry {c:.4g} times the whole mean's gradient: a mean over "
        f"those {left} alone."
        if math.isclose(c, n / left, rel_tol=1e-3)
        else f" The other positions carry {c:.4g} times the whole mean's gradient."
    )
    head = f"{nth}, the gradient at the logits is zero at {count} of {n} positions"
    ids = {int(i) for d, (*_, t, _, _) in zip(dead, seen, strict=True) for i in t[d]}
    if len(ids) == 1:
        (value,) = ids
        if all(
            torch.equal(d, real & (t == value))
            for d, (*_, t, real, _) in zip(dead, seen, strict=True)
        ):
            return (
                f"{head}: exactly those whose target is token {value}, which carry no gradient."
                + rest,
                ZERO_IS_A_TOKEN
                if value == 0
                else f"token {value} is a real token: score every position whose target is "
                f"{value} too; the only targets to skip are -100 (padding).",
            )
    columns = {int(c) for d in dead for c in torch.nonzero(d)[:, -1]}
    whole = all(
        torch.equal(d, real & torch.isin(torch.arange(d.shape[-1]), torch.tensor(sorted(columns))))
        for d, (*_, real, _) in zip(dead, seen, strict=True)
    )
    last = seen[0][4].shape[-1] - 1
    if whole and columns == {last}:
        return (
            f"{head}: the last position ({last}) of every sequence carries no gradient." + rest,
            LAST_POSITION,
        )
    where = (
        f"position{'s' if len(columns) > 1 else ''} {', '.join(map(str, sorted(columns)))} of "
        "every sequence"
        if whole
        else "some positions"
    )
    return f"{head}: {where} carry no gradient." + rest, UNSCORED


TIED_ONCE = (
    "a tied weight is one tensor shared by two modules (here the embedding and the output "
    "layer), so a loop over modules meets it twice: change gradients once per parameter, "
    "looping over `model.parameters()` (which yields a shared tensor once), or divide the loss "
    "before `backward()` instead of the gradients after it."
)


def _some_parameters(nth, got, expected, tokens, counted, tied) -> tuple[str, str] | None:
    """(what, hint) when only some parameters' gradients are wrong, each by a factor of its own."""
    wrong = [n for n in expected if not _close({n: got[n]}, {n: expected[n]})]
    if not wrong or len(wrong) == len(expected):
        return None
    factors = {}
    for n in wrong:
        c = _scale({n: got[n]}, {n: expected[n]})
        if not (math.isfinite(c) and c != 0 and _close({n: got[n]}, {n: c * expected[n]})):
            return None
        factors[n] = c
    parts = []
    for n, c in factors.items():
        inverse = f" = 1/{1 / c:.4g}" if 0 < c < 1 else ""
        parts.append(f"`{n}`'s is {c:.4g}{inverse} times the right one")
    what = (
        f"In {nth}, `optimizer.step()` saw the right gradient for every parameter but "
        f"{len(wrong)}: " + "; ".join(parts[:3]) + ("; ..." if len(parts) > 3 else "") + "."
    )
    if any(math.isclose(1 / c, tokens, rel_tol=1e-3) for c in factors.values()):
        what += f" {tokens} = {counted}: divided by it once more than the others."
    shared = [n for n in wrong if n in tied]
    if shared:
        n = shared[0]
        what += (
            f" `{n}` is also `{tied[n][0]}`: one tensor shared by two modules (tied weights), "
            "and it alone is off."
        )
        return what, TIED_ONCE
    return what, (
        "treat every parameter's gradient alike: whatever scales or changes the gradients must "
        "reach all of them once (or scale the loss instead, before `backward()`)."
    )


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
    calls: int | None = None,
    grad_calls: int = 0,
    tracked: bool | None = None,
    logits=lambda: None,
    tied: dict | None = None,
    params: dict | None = None,
    zero_at_logits: bool = False,
    last=lambda: None,
):
    """(what, hint) when the gradients seen by ``optimizer.step()`` in call ``k`` are wrong.

    ``backward`` is (gradients accumulated before the step ran, in the whole call), counted by
    hooks on the parameters: whether and when ``backward()`` ran. ``calls``: how many times
    ``backward()`` was called (None: not counted), ``grad_calls`` how many of them were
    ``torch.autograd.grad``; ``tracked``: whether the model's forward
    passes returned logits that carry autograd (None: no forward pass); ``logits()``: (what,
    hint) read from the gradients at the logits (:func:`_logit_evidence`), tried before a
    factor or a generic message; ``params``: the parameters the gradients were taken at (a
    gradient that is the right one plus a multiple of them: a penalty on the weights);
    ``zero_at_logits``: every gradient that reached the model's logits was zero; ``last()``:
    (what, hint) from the task's own evidence, tried before the generic message."""
    nth = f"call {k + 1}"
    before_step, in_call = backward
    if _empty(at_step):
        if in_call == 0 and grad_calls and grad_calls == calls:
            return (
                f"In {nth}, `torch.autograd.grad` ran ({grad_calls}x), but when "
                "`optimizer.step()` ran no parameter's `.grad` held a gradient.",
                "`torch.autograd.grad` returns the gradients, it does not store them: the step "
                "reads `.grad`. Assign each to its parameter (`p.grad = g`), looping over a "
                "list of the parameters (`model.parameters()` is a generator, used up after "
                "one pass), or call `loss.backward()`, which fills `.grad` itself.",
            )
        if in_call == 0 and calls and tracked:
            return (
                f"In {nth}, `backward()` ran ({calls}x), but no gradient reached the logits "
                "the model returned, nor any parameter: the loss it ran on was cut off from "
                "the model's output.",
                DETACHED,
            )
        if in_call == 0 and calls and tracked is False:
            return (
                f"In {nth}, `backward()` ran ({calls}x), but the model's forward returned "
                "logits without autograd (computed under `torch.no_grad()` or inference mode), "
                "so no gradient could reach a parameter.",
                DETACHED,
            )
        if in_call == 0 and calls == 0:
            return (
                f"In {nth}, no gradient was computed: `backward()` never ran, so "
                "`optimizer.step()` had nothing to apply.",
                NO_BACKWARD,
            )
        if in_call == 0:
            return (
                f"In {nth}, no parameter received a gradient: either `backward()` never ran, "
                "or the loss it ran on has no path back to the parameters.",
                NO_BACKWARD + " " + DETACHED[0].upper() + DETACHED[1:],
            )
        if zero_at_logits:
            return (
                f"In {nth}, `backward()` ran, but the gradient that reached the model's logits "
                "was zero at every position: the loss it ran on does not change with the "
                "logits, so every parameter's gradient is 0 (a factor that came out as 0?).",
                "check each factor the loss is multiplied or divided by: an integer division "
                "such as `n // N` is 0 whenever n < N; use `/` for fractions.",
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
    infinite = [n for n in expected if not torch.isfinite(got[n]).all()]
    if infinite:
        names = ", ".join(f"`{n}`" for n in infinite[:3]) + (", ..." if len(infinite) > 3 else "")
        return (
            f"In {nth}, the gradients `optimizer.step()` used hold inf or NaN (in {names}), so "
            "the loss they came from was not a finite number.",
            "a division by zero does this, or the log of 0: check every number you divide the "
            "loss by (a count that can be 0? the real tokens are `(targets != -100).sum()`, "
            "never 0 in a batch), and any log or exp of your own.",
        )
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
        if c < 0:
            return (
                f"In {nth}, the gradients `optimizer.step()` used are {c:.4g} times those of "
                "the mean loss: they point the other way, so the step climbs the loss.",
                "minimise the loss itself: no minus sign on the loss or its gradients "
                "(`optimizer.step()` already subtracts lr x gradient).",
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
        if (found := logits()) is not None:
            return found
        vocab = STEP_CONFIG["vocab_size"]
        if math.isclose(c, 1 / vocab, rel_tol=1e-3):
            return (
                f"In {nth}, the gradients `optimizer.step()` used are {c:.4g} times those of "
                f"the mean loss: 1/{vocab}, one over the vocabulary size. The loss was also "
                "averaged over the vocabulary axis.",
                "sum over the vocabulary (one class per position) and average over the "
                "positions only: `F.cross_entropy(logits.flatten(0, 1), targets.flatten())` "
                "does both.",
            )
        return (
            f"The gradients `optimizer.step()` used are {c:.4g} times those of the mean loss.",
            scale_hint,
        )
    wrong = [n for n in expected if not _close({n: got[n]}, {n: expected[n]})]
    stale = _left_over(got, expected, left)
    if stale:  # the whole model's leftovers were named above: these are some parameters'
        names = ", ".join(f"`{n}`" for n in stale[:3]) + (", ..." if len(stale) > 3 else "")
        return (
            f"In {nth}, {len(expected) - len(stale)} parameters' gradients are this batch's, "
            f"but those of {names} are this batch's plus what the previous call left in "
            "`.grad`: only part of the model's gradients were cleared.",
            "clear every parameter's gradient before the backward: `optimizer.zero_grad()` "
            "(or `model.zero_grad()`) on the whole model, not on some of its modules.",
        )
    if params is not None and wrong:
        extra = {n: got[n] - expected[n] for n in expected}
        weights = {n: params[n] for n in expected}
        square = sum(float((w * w).sum()) for w in weights.values())
        decay = sum(float((extra[n] * weights[n]).sum()) for n in expected) / square
        if decay != 0 and _close(got, {n: expected[n] + decay * weights[n] for n in expected}):
            return (
                f"In {nth}, the gradients `optimizer.step()` used are this batch's plus "
                f"{decay:.3g} times the weights themselves: a term like {decay / 2:.3g} x "
                "(sum of the squared weights) was added to the loss (an L2 penalty, weight "
                "decay).",
                "the loss is the plain mean cross-entropy of this batch: add no penalty on the "
                "weights (weight decay, when wanted, is the optimizer's setting, not part of "
                "this step).",
            )
    missing = [n for n in expected if not got[n].any() and expected[n].any()]
    if missing and all(_close({n: got[n]}, {n: expected[n]}) for n in expected if n not in missing):
        names = ", ".join(f"`{n}`" for n in missing[:3]) + (", ..." if len(missing) > 3 else "")
        return (
            f"In {nth}, `optimizer.step()` saw no gradient for {names}, and the right "
            "gradients for every other parameter.",
            "every parameter of the model trains: leave `requires_grad` on, and compute the "
            "loss from the model's output without `.detach()` on the way.",
        )
    if (found := _some_parameters(nth, got, expected, tokens, counted, tied or {})) is not None:
        return found
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
    if (found := logits()) is not None:
        return found
    if (found := last()) is not None:
        return found
    name, gap = max(
        ((n, float((got[n] - expected[n]).abs().max())) for n in expected), key=lambda t: t[1]
    )
    return (
        f"In {nth}, the gradients `optimizer.step()` used are not those of this batch's mean "
        f"cross-entropy (largest difference {gap:.3g}, in `{name}`).",
        recipe,
    )


@dataclass(frozen=True)
class UpdateEvidence:
    """How a step's parameter changes compare with a correct step's, when the gradients it saw
    were right: per parameter, and the optimizer's own settings after the call."""

    call: int
    factor: float | None  # one common factor on every parameter's change, if there is one
    still: tuple[str, ...]  # parameters a correct step moves that did not move
    wrong: tuple[str, ...]  # parameters whose change differs
    settings: tuple[tuple[str, float, float], ...]  # (setting, its value now, the given one)

    @staticmethod
    def of(k, optimizer, before, after, ref_before, ref_after) -> UpdateEvidence:
        mine = {n: after[n] - before[n] for n in after}
        theirs = {n: ref_after[n] - ref_before[n] for n in ref_after}
        c = _scale(mine, theirs)
        common = None
        if math.isfinite(c) and _close(mine, {n: c * t for n, t in theirs.items()}):
            common = c
        still = tuple(n for n in mine if not mine[n].any() and theirs[n].any())
        wrong = tuple(
            n for n in mine if not torch.allclose(mine[n], theirs[n], rtol=1e-4, atol=1e-6)
        )
        given = {"lr": STEP_LR, "momentum": MOMENTUM, "weight_decay": 0.0, "dampening": 0.0}
        settings = []
        for key, value in given.items():
            now = {g.get(key, value) for g in optimizer.param_groups}
            for v in now:
                if isinstance(v, (int, float)) and not math.isclose(v, value, abs_tol=1e-12):
                    settings.append((key, float(v), value))
        return UpdateEvidence(k, common, still, wrong, tuple(settings))

    def hint(self) -> tuple[str, str]:
        nth = f"In call {self.call + 1}"
        if self.settings:
            key, now, given = self.settings[0]
            return (
                f"{nth}, `optimizer.step()` saw the right gradients, but the optimizer's {key} "
                f"is now {now:g}; it was given as {given:g}.",
                "use the optimizer as it is given: its settings (lr, momentum) are part of the "
                "exercise; do not change `optimizer.param_groups`.",
            )
        if self.still and set(self.still) == set(self.wrong):
            names = ", ".join(f"`{n}`" for n in self.still[:3])
            return (
                f"{nth}, `optimizer.step()` saw the right gradients, but {names} did not move "
                "while every other parameter moved as in a correct step.",
                "every parameter of the model trains: leave `requires_grad` on and give the "
                "optimizer all of `model.parameters()`.",
            )
        if self.factor is not None:
            return (
                f"{nth}, `optimizer.step()` saw the right gradients, but every parameter moved "
                f"{self.factor:.4g} times as far as in a correct step.",
                "change the parameters only through one `optimizer.step()`: no second update "
                "by hand, no change to the learning rate.",
            )
        names = ", ".join(f"`{n}`" for n in self.wrong[:3])
        return (
            f"{nth}, `optimizer.step()` saw the right gradients, but the parameters afterwards "
            f"are not those of a correct step ({names}"
            + (", ..." if len(self.wrong) > 3 else "")
            + ").",
            NOT_THE_OPTIMIZER,
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
    pristine = _pristine(answer)  # the answer as it was before its first call
    model = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
    reference = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
    optimizer = torch.optim.SGD(model.parameters(), lr=STEP_LR, momentum=MOMENTUM)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=STEP_LR, momentum=MOMENTUM)
    seen: list[tuple[dict, int, int]] = []  # per step: its gradients, accumulations, forwards
    accumulated = [0]  # gradients accumulated into .grad (backward passes, parameter by parameter)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(
            lambda _: accumulated.__setitem__(0, accumulated[0] + 1)
        )
    watch = _Watch(model)
    _on_step(optimizer, lambda: (_grads(model), accumulated[0], len(watch.forwards)), seen)
    tied = _tied(model)
    left: dict | None = None
    losses = []
    for k, call in enumerate(calls):
        model_before = gpt.build(seed=STEP_SEED, **STEP_CONFIG)
        model_before.load_state_dict(reference.state_dict())
        ref_optimizer.zero_grad()
        ref_loss = task.loss(reference, *call)
        ref_loss.backward()
        expected = {n: g for n, g in _grads(reference).items() if g is not None}
        ref_before = _params(reference)
        ref_optimizer.step()
        before, n_seen, start = _params(model), len(seen), accumulated[0]
        watch.forwards.clear()
        watch.inputs.clear()
        backwards = _Backwards()
        try:
            with backwards:
                value = answer(model, optimizer, *_clone(call))
        except (Exception, SystemExit) as error:
            hint = functools.partial(
                _step_error_evidence, k, answer, task, call, model_before, backwards, watch
            )
            return _raised(exercise_id, error, answer, hint)
        forwards = list(watch.forwards)
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
        at_step, count, ran = steps[0]
        backward = (count - start, accumulated[0] - start)
        problem = None
        got = None if _empty(at_step) else _dense(at_step, expected)
        if got is not None and not _close(got, expected):
            if (
                k > 0
                and not _left_over(got, expected, left)
                and _right_when_first(pristine, model_before, call, expected)
            ):
                return failed(exercise_id, *_kept_between_calls(k))
            problem = task.evidence(k, got, expected, model_before, call, ran=ran)
        if problem is None:
            words = dict(counted=task.counted, recipe=task.recipe)
            words.update(getattr(task, "hints", {}))
            problem = _judge_step(
                k,
                at_step,
                expected,
                left,
                backward,
                task.tokens(call),
                calls=backwards.count,
                grad_calls=backwards.grad_calls,
                tracked=any(f.tracked for f in forwards) if forwards else None,
                tied=tied,
                params=before,
                zero_at_logits=any(f.grads for f in forwards)
                and not any(bool(g.any()) for f in forwards for g in f.grads),
                last=functools.partial(task.last, k, got, expected, model_before, call)
                if got is not None and hasattr(task, "last")
                else lambda: None,
                logits=functools.partial(
                    _logit_evidence, k, forwards, task.pairs(call), task.tokens(call)
                ),
                **words,
            )
        if problem is not None:
            return failed(exercise_id, *problem)
        ref_after = _params(reference)
        if not _close(after, ref_after, rtol=1e-4, atol=1e-6):
            moves = UpdateEvidence.of(k, optimizer, before, after, ref_before, ref_after)
            return failed(exercise_id, *moves.hint())
        left = _grads(model)
        seems = None
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and not math.isclose(value, ref_loss.item(), rel_tol=1e-4, abs_tol=1e-6)
        ):
            seems = _returned_relation(value, task, model_before, reference, call)
        losses.append((value, ref_loss.item(), seems))
    for k, (value, loss, seems) in enumerate(losses):
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
                f"Your step is right, but call {k + 1} returned {value:.6g}"
                + (f", {seems}" if seems else "")
                + f"; the loss of that batch before the step is {loss:.6g}.",
                task.return_hint,
            )
    return passed(exercise_id, task.success)


def _returned_relation(value: float, task, model_before, model_after, call) -> str | None:
    """What a wrong returned loss equals, among the values a step computes on its way (the loss
    after the step, a micro-batch's share or mean, a sum not divided...); None when none."""
    with torch.no_grad():
        candidates = [(float(task.loss(model_after, *call)), "the loss after the step")]
        candidates += task.returned(model_before, call)
    for candidate, words in candidates:
        if math.isclose(value, candidate, rel_tol=1e-4, abs_tol=1e-6):
            return f"which is {words}"
    return None


def _pristine(answer):
    """A way to call ``answer`` as it was before any call: a function made again from its code,
    with a copy of its module's variables and of its default arguments taken now (so a value it
    caches in a global or a default on its first call is not there); None for other callables."""
    if not inspect.isfunction(answer):
        return None
    names = {}
    for key, value in answer.__globals__.items():
        try:
            names[key] = copy.deepcopy(value) if isinstance(value, (list, dict, set)) else value
        except Exception:
            names[key] = value
    try:
        defaults = copy.deepcopy(answer.__defaults__)
        kwdefaults = copy.deepcopy(answer.__kwdefaults__)
    except Exception:
        return None

    def again():
        function = type(answer)(
            answer.__code__, dict(names), answer.__name__, defaults, answer.__closure__
        )
        function.__kwdefaults__ = kwdefaults
        return function

    return again


def _left_over(got: dict, expected: dict, left: dict | None) -> list[str]:
    """The parameters whose gradient is the right one plus what the previous call left in
    ``.grad`` (not cleared), when that explains every wrong gradient; else []."""
    if left is None or _empty(left):
        return []
    previous = _dense(left, expected)
    wrong = [n for n in expected if not _close({n: got[n]}, {n: expected[n]})]
    stale = [
        n
        for n in wrong
        if previous[n].any() and _close({n: got[n]}, {n: previous[n] + expected[n]})
    ]
    return stale if len(stale) == len(wrong) else []


def _on_step(optimizer, record, seen: list) -> None:
    """Append ``record()`` to ``seen`` for each ``optimizer.step()``, taken when the step reads
    the gradients: before it runs, or, for a step given a closure (``optimizer.step(closure)``,
    which runs the forward and backward itself), once the step has run."""
    closing = [False]

    def before(optimizer, args, kwargs) -> None:
        seen.append(record())
        # args starts with the optimizer itself (torch passes the step's self), then a closure
        closing[0] = any(callable(a) for a in args[1:]) or callable(kwargs.get("closure"))

    def after(optimizer, args, kwargs) -> None:
        if closing[0]:
            seen[-1] = record()

    optimizer.register_step_pre_hook(before)
    optimizer.register_step_post_hook(after)


def _right_when_first(pristine, model_before, call, expected) -> bool:
    """Whether the answer, made again as before its first call and given this call first (a
    scratch model at the same weights, a new optimizer), steps on the right gradients."""
    if pristine is None:
        return False
    model, optimizer = _scratch(model_before)
    seen = []
    _on_step(optimizer, lambda: _grads(model), seen)
    try:
        pristine()(model, optimizer, *_clone(call))
    except (Exception, SystemExit):
        return False
    return len(seen) == 1 and not _empty(seen[0]) and _close(_dense(seen[0], expected), expected)


def _kept_between_calls(k: int) -> tuple[str, str]:
    earlier = "call 1" if k == 1 else f"calls 1-{k}"
    return (
        f"In call {k + 1}, the gradients `optimizer.step()` used are wrong, but the same call "
        f"made first (your function as defined, a fresh model and optimizer) gets them right: "
        f"something from {earlier} stays in your function's state and changes this call.",
        "compute everything a step needs from this call's arguments: no value cached in a "
        "global variable or a default argument on an earlier call (a count, a tensor, a "
        "length), and no state kept between calls except the model's and the optimizer's.",
    )


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
    def pairs(call) -> list:
        return [call]

    @staticmethod
    def returned(model, call) -> list[tuple[float, str]]:
        tokens, targets = call
        mean = float(model(tokens, targets)[1])
        return [
            (mean * targets.numel(), f"the loss summed over the {targets.numel()} tokens"),
            (mean * tokens.shape[0], "the loss summed over the sequences"),
        ]

    @staticmethod
    def evidence(k, got, expected, model_before, call, ran=None):
        tokens, targets = call
        batch, seq = tokens.shape
        c = _scale(got, expected)
        common = math.isfinite(c) and _close(got, {n: c * g for n, g in expected.items()})
        for size, axis, other in (
            (batch, "sequences of the batch", "positions"),
            (seq, "positions of each sequence", "sequences"),
        ):
            if common and size != batch * seq and math.isclose(c, size, rel_tol=1e-3):
                return (
                    f"In call {k + 1}, the gradients `optimizer.step()` used are {c:.4g} times "
                    f"those of the mean loss: {size} = the number of {axis}. The loss was summed over "
                    f"the {axis} and averaged over the {other}.",
                    SUM_REDUCTION,
                )
        logits, _ = model_before(tokens)
        probs = logits.softmax(-1).flatten(0, 1)
        variant = _grads_of(model_before, F.cross_entropy(probs, targets.flatten()))
        if _close(got, variant):
            return (
                f"In call {k + 1}, the gradients `optimizer.step()` used are those of "
                "`F.cross_entropy` applied to softmax probabilities, not to the logits.",
                "`F.cross_entropy` takes the raw logits and applies log-softmax itself: give it "
                "`logits`, not `logits.softmax(-1)` (a second softmax flattens the "
                "probabilities and their gradients).",
            )
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
        launch=f"{STEPS} calls (batches of {', '.join(map(str, STEP_BATCHES))} sequences) on a "
        f"1-layer gu.gpt model with torch.optim.SGD(lr={STEP_LR}, "
        f"momentum={MOMENTUM}), compared with a correct run from the same seed",
        run=_with_source_evidence(functools.partial(_run_train_step, "primer_train_step")),
        kind="function",
        time_limit=30.0,
    )
)


# --- 2. a pre-LN block, written out ------------------------------------------------------------

#: (d_model, n_heads, batch, seq): head sizes 8, 4 and 6; seq not equal to n_heads.
BLOCK_CASES = ((16, 2, 2, 5), (12, 3, 1, 7), (24, 4, 3, 6))
BLOCK_SEED = 8
#: How many positions longer than x each case's model allows (its config's seq_len - s): in the
#: last case x is shorter than the model's context, as in generation, so a causal mask sized by
#: the config instead of x does not fit.
BLOCK_SPARE = (0, 0, 2)

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
HEADS_CONTIGUOUS = (
    "head i is the contiguous slice of d_head features i x d_head to (i + 1) x d_head - 1: "
    "split with the heads first, `view(b, s, n_heads, d_head).transpose(1, 2)`, and merge back "
    "with `transpose(1, 2).reshape(b, s, h)`."
)
D_HEAD_INT = (
    "sizes given to `view` or `reshape` must be integers: `d_head = h // n_heads` (`/` always "
    "returns a float, even when it divides exactly)."
)
STALE_LENGTH = (
    "build whatever depends on the sequence length inside the function, from this call's "
    "`s = x.shape[1]`, on every call (e.g. `torch.ones(s, s, dtype=torch.bool).triu(1)`): a "
    "tensor kept from an earlier call, or a length written as a number, fits only that length."
)
SCALE_PLACE = (
    "the 1/sqrt(d_head) scale goes on the scores, before the mask and the softmax: "
    "`softmax(q @ k.transpose(-2, -1) / sqrt(d_head))`. After the softmax a query's weights "
    "sum to 1, so a factor on the probabilities, on v or on the heads' output multiplies "
    "attention's output instead."
)
AFTER_SOFTMAX = (
    "a query's weights sum to 1, so attention's output at a one-position sequence is v itself: "
    "a constant factor there was applied after the softmax (to the probabilities, to v or to "
    "the heads' output). Remove it; the only factor in attention is 1/sqrt(d_head) on the "
    "scores, before the softmax."
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
        elif heads == "strided":
            q, k, v = (t.view(b, s, d, a).permute(0, 3, 1, 2) for t in (q, k, v))
        elif heads == "one":  # never split: one head over all d_model features
            q, k, v = (t[:, None] for t in (q, k, v))
        else:
            q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
        factors = {"sqrt": 1 / math.sqrt(d), "none": 1.0, "d": 1 / d, "h": 1 / math.sqrt(h)}
        factor = scale if isinstance(scale, float) else factors[scale]
        scores = (q @ k.transpose(-2, -1)) * factor
        if mask:
            scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
        y = scores.softmax(dim=dim) @ v
        if heads == "strided":
            y = y.permute(0, 2, 3, 1).reshape(b, s, h)
        else:
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


ONE_HEAD = (
    "split q, k and v into n_heads heads of d_head = d_model // n_heads features, "
    "`.view(b, s, n_heads, d_head).transpose(1, 2)`, so that each head has its own scores and "
    "softmax, and merge them back after `@ v` with `transpose(1, 2).reshape(b, s, h)`."
)
#: (variant arguments, what the output equals, hint), tried in this order.
BLOCK_MISTAKES = (
    (
        dict(heads="one"),
        "the block with q, k and v never split into heads: one attention over all d_model "
        "features (one softmax per query instead of one per head)",
        ONE_HEAD,
    ),
    (
        dict(heads="one", scale="h"),
        "the block with q, k and v never split into heads and scaled by 1/sqrt(d_model): one "
        "attention over all d_model features",
        ONE_HEAD,
    ),
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
    (
        dict(heads="strided"),
        "the block whose head i is made of every n_heads-th feature of q, k and v (i, "
        "i + n_heads, i + 2 n_heads, ...: a split by `view(b, s, d_head, n_heads)`), not of the "
        "contiguous features i x d_head to (i + 1) x d_head - 1",
        HEADS_CONTIGUOUS,
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


# --- 2b. evidence on a wrong block -----------------------------------------------------------------

#: The block's stages in the order a correct forward reaches them: each is the input of one of the
#: block's weights (a LayerNorm's or a linear layer's), which the checker records however it is
#: used (the module, `F.linear`, `F.layer_norm`, `u @ W.T`, a slice of W).
STAGES = ("ln1", "qkv", "proj", "ln2", "fc1", "fc2")
STAGE_CALL = {
    "ln1": "block.ln1",
    "qkv": "block.attn.qkv",
    "proj": "block.attn.proj",
    "ln2": "block.ln2",
    "fc1": "block.mlp.fc1",
    "fc2": "block.mlp.fc2",
}
#: What each stage's input is in a correct forward.
STAGE_INPUT = {
    "ln1": "x itself",
    "qkv": "ln1(x), each position normalised over its d_model features",
    "proj": "the heads' outputs softmax(q k^T / sqrt(d_head), causal) v, merged back to "
    "(batch, seq, d_model) with `transpose(1, 2).reshape(b, s, h)`",
    "ln2": "x1 = x + attn.proj(...), the sum after the attention residual",
    "fc1": "ln2(x1), each position normalised over its d_model features",
    "fc2": "gelu(fc1(ln2(x1)))",
}
#: Between the previous stage and each stage: what could have put a wrong value there.
STAGE_CHECK = {
    "ln1": "in a pre-LN block ln1 normalises the block's input x itself, before anything is "
    "added to it: `x = x + attn(ln1(x))`.",
    "qkv": "apply `block.ln1` to x (it normalises each position over its last dimension, with "
    "its weight and bias) and give its output to `block.attn.qkv`.",
    "proj": "the attention core: q, k, v = qkv(...).split(h, dim=-1), split into heads with "
    "`view(b, s, n_heads, d_head).transpose(1, 2)`, scores q @ k^T / sqrt(d_head), causal "
    "mask with -inf, softmax over the keys (dim=-1), times v, merged with `transpose(1, 2)"
    ".reshape(b, s, h)`.",
    "ln2": "the attention sub-layer adds its output to its input: x1 = x + attn.proj(y), with x "
    "the block's input (not ln1(x)).",
    "fc1": "apply `block.ln2` to x1 (each position over its last dimension, with its weight "
    "and bias) and give its output to `block.mlp.fc1`.",
    "fc2": GELU,
    "out": "the MLP sub-layer adds its output to its input: return x1 + fc2(...), with x1 the "
    "sum after the attention residual.",
}
RANDOM = (
    "a forward pass of this block draws no random numbers: its dropout probability is 0 "
    "(`block.attn.config.dropout`), and `F.dropout(t, p)` drops with p > 0 whenever it is "
    "called (its training=True is the default), as does `F.scaled_dot_product_attention(..., "
    "dropout_p=p)`. Remove the dropout, or take p from `block.attn.config.dropout`."
)
NORM_AXIS = (
    "LayerNorm normalises each position (and each sequence) on its own, over its d_model "
    "features: the last dimension, `F.layer_norm(x, (h,), ...)` or `block.ln1(x)`; a mean or "
    "variance over the sequence (dim=1) or the batch (dim=0) mixes positions."
)
WEIGHTS = (
    "check the scores, q @ k.transpose(-2, -1) (each query against every key, per head; q "
    "and k not swapped, split in the order q, k, v), their scale 1/sqrt(d_head), and that the heads are split with "
    "`view(b, s, n_heads, d_head).transpose(1, 2)` and merged back with "
    "`transpose(1, 2).reshape(b, s, h)`."
)
IN_PLACE = (
    "the checker's x carries a gradient, as a block's input does inside a model, and autograd "
    "cannot let a tensor it needs be changed in place: write `x = x + attn(...)`, not "
    "`x += ...`."
)
MASK_INVERTED = (
    "the mask is inverted: it hid position t and every earlier key, leaving the last query "
    "nothing. `masked_fill` fills where the mask is True, so pass the keys to hide, "
    "`triu(1)`; `F.scaled_dot_product_attention`'s boolean `attn_mask` keeps where it is True, "
    "so pass the keys to keep, `tril()` (or use `is_causal=True`)."
)
MASK_SHIFTED = (
    "the causal mask hides one key too few: position t may attend to keys 0..t, so hide "
    "exactly the keys after t, `torch.ones(s, s, dtype=torch.bool).triu(1)` (diagonal 1; "
    "`triu(2)` or `tril(-1)`-style offsets let t see t + 1)."
)
NOT_NORMALISED = (
    "after the mask, each query's weights must sum to 1 over its keys: fill the later keys' "
    "scores with -inf and then take `softmax(dim=-1)`; masking the probabilities after the "
    "softmax (or a softmax over another dimension) leaves weights that do not sum to 1."
)
NORM_OR_MASK = (
    "two things are observed: a one-position sequence, where no mask matters, is wrong, so "
    "something that does not mix positions differs (a LayerNorm, a residual, v, proj or the "
    "MLP); and later tokens reach earlier positions, which a missing causal mask or a "
    "normalisation over the sequence (dim=1 instead of the last dimension) would do. Check each "
    "LayerNorm's axis first, then the mask (`triu(1)` filled with -inf before the softmax)."
)
POSITIONWISE = (
    "the part of the block that works on each position alone is wrong (a one-position "
    "sequence, where mask, scale and softmax cannot matter, is already wrong): "
)


def _stage_weights(block) -> dict[str, torch.Tensor]:
    return {
        "ln1": block.ln1.weight,
        "qkv": block.attn.qkv.weight,
        "proj": block.attn.proj.weight,
        "ln2": block.ln2.weight,
        "fc1": block.mlp.fc1.weight,
        "fc2": block.mlp.fc2.weight,
    }


class _Stages(TorchFunctionMode):
    """While active, records the input of the first use of each of the block's weights: a
    module call, `F.linear`, `F.layer_norm`, `u @ W.T` or `u @ W[:h].T` alike."""

    def __init__(self, block) -> None:
        super().__init__()
        weights = _stage_weights(block)
        self.owner = {w.untyped_storage().data_ptr(): n for n, w in weights.items()}
        self.inputs: dict[str, torch.Tensor] = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        try:
            weight = data = None
            if name in ("linear", "matmul", "__matmul__", "mm") and len(args) >= 2:
                data, weight = args[0], args[1]
            elif name == "layer_norm" and args:
                data = args[0]
                weight = args[2] if len(args) > 2 else kwargs.get("weight")
            if isinstance(weight, torch.Tensor) and isinstance(data, torch.Tensor):
                stage = self.owner.get(weight.untyped_storage().data_ptr())
                if stage is not None and stage not in self.inputs:
                    self.inputs[stage] = data.detach().clone()
        except Exception:  # a tensor without storage (a subclass): nothing recorded
            pass
        return func(*args, **kwargs)


@dataclass(frozen=True)
class StageEvidence:
    """The first stage whose input is wrong, or moves when only a later token changes."""

    name: str
    rows: tuple[int, ...]  # positions where the input is wrong (in some sequence)
    moved: tuple[int, ...]  # earlier positions of sequence 0 moved by a change to its last token
    other_sequences: bool  # another sequence's input moved by that change
    #: "" or what the input equals: "x", "unaffine", "uncentred", "permuted", "shuffled", "shape",
    #: "plus_x" (the right input plus the block's input), "plus_ln1" (plus ln1(x)), or
    #: "isolated" (each position's input depends on its own token alone), "own_value" (and it
    #: is that position's own v), "same_heads" (every head's slice holds the same numbers),
    #: "residual" (x1 is one of RESIDUAL_RELATIONS, named by ``detail``), "swapped_affine" (a
    #: LayerNorm's weight and bias exchanged)
    relation: str
    detail: str = ""


@dataclass(frozen=True)
class BlockEvidence:
    """What the checker observed of a wrong block, read by :func:`_block_hint` (never parsed)."""

    shape: str
    seq: int
    first: tuple[int, ...]
    got: float
    expected: float
    rows: tuple[int, ...]  # output positions wrong in some sequence
    varies: float  # largest difference between two calls on the same block and x (0: none)
    recorded: tuple[str, ...]  # the stages whose input was recorded
    stage: StageEvidence | None  # the first recorded stage that is wrong
    moved: tuple[int, ...]  # earlier output positions moved by a change to the last token
    other_sequences: bool  # another sequence's output moved by that change
    single: bool | None  # wrong on a one-position sequence (None: could not be run)
    after_attention: bool | None  # wrong with the attention's output projection zeroed
    sums: tuple[float, ...] | None  # per position, the weights' sum, when they do not sum to 1
    scale: float | None  # the factor on q k^T that reproduces the output, when one does
    d_head: int = 0
    #: at a one-position sequence, with the inputs of ln1 and qkv right: the one constant factor
    #: between the input of proj and the right one (attention's output there is v itself)
    single_factor: float | None = None
    #: (line, text) of a line of the answer that reduces over the queries' axis of the scores
    #: (dim=-2 or 2: a max, sum or softmax across positions), or None
    query_reduction: tuple[int, str] | None = None


def _moved(a: torch.Tensor, b: torch.Tensor) -> tuple[tuple[int, ...], bool]:
    """(earlier positions of sequence 0 where a and b differ, whether other sequences differ)."""
    if a.shape != b.shape or a.dim() != 3:
        return (), False
    diff = (a - b).abs()
    earlier = diff[0, :-1].amax(dim=-1) > 1e-5
    others = bool(diff[1:].numel()) and float(diff[1:].max()) > 1e-5
    return tuple(int(t) for t in torch.nonzero(earlier)[:, 0]), others


def _rows(got: torch.Tensor, expected: torch.Tensor) -> tuple[int, ...]:
    bad = ~torch.isclose(got, expected, rtol=1e-4, atol=1e-5)
    return tuple(
        int(t)
        for t in torch.nonzero(bad.reshape(bad.shape[0], bad.shape[1], -1).any(-1).any(0))[:, 0]
    )


def _heads_map(got, expected, heads: int) -> dict[tuple[int, int], tuple[int, int]] | None:
    """For merged heads (batch, seq, h): where each (position, head) slice of ``got`` is found in
    ``expected`` of the same sequence, when every slice is found somewhere; else None."""
    b, s, h = expected.shape
    d = h // heads
    g = got.reshape(b, s, heads, d)
    e = expected.reshape(b, s, heads, d)
    found = {}
    for t in range(s):
        for a in range(heads):
            spots = [
                (t2, a2)
                for t2 in range(s)
                for a2 in range(heads)
                if torch.allclose(g[:, t, a], e[:, t2, a2], rtol=1e-4, atol=1e-5)
            ]
            if not spots:
                return None
            found[(t, a)] = (t, a) if (t, a) in spots else spots[0]
    return found


def _stage_evidence(
    name, got, expected, perturbed, block, raw, first=None, normed=None
) -> StageEvidence | None:
    """How one stage's input ``got`` differs from ``expected`` (None: it does not). For proj:
    ``raw`` is the block's input x, ``normed`` ln1(x), ``first`` the stage's input when the
    first token of every sequence was changed."""
    if got.numel() != expected.numel():
        return StageEvidence(name, (), (), False, "shape", str(tuple(got.shape)))
    got = got.reshape(expected.shape).float()
    moved, others = (), False
    if perturbed is not None and perturbed.numel() == got.numel():
        moved, others = _moved(perturbed.reshape(expected.shape).float(), got)
    if torch.allclose(got, expected, rtol=1e-4, atol=1e-5) and not moved and not others:
        return None
    relation, detail = "", ""
    if name in ("qkv", "fc1"):
        norm = block.ln1 if name == "qkv" else block.ln2
        if raw is not None and torch.allclose(got, raw, rtol=1e-4, atol=1e-5):
            relation = "x"
        else:
            with torch.no_grad():
                inner = (expected - norm.bias) / norm.weight
                swapped = norm.bias * inner + norm.weight  # scale and shift exchanged
            if torch.allclose(got, inner, rtol=1e-3, atol=1e-4):
                relation = "unaffine"
            elif torch.allclose(got, swapped, rtol=1e-3, atol=1e-4):
                relation = "swapped_affine"
            elif name == "qkv" and raw is not None and raw.shape == got.shape:
                with torch.no_grad():  # divided by the root mean square, the mean left in
                    u = raw.float()
                    rms = u / torch.sqrt(u.pow(2).mean(-1, keepdim=True) + norm.eps)
                    rms = rms * norm.weight + norm.bias
                if torch.allclose(got, rms, rtol=1e-3, atol=1e-4):
                    relation = "uncentred"
    if name == "proj":
        heads = _heads_map(got, expected, block.attn.config.n_heads)
        if heads is not None and any(k != v for k, v in heads.items()):
            relation = "permuted"
            (t, a), (t2, a2) = next((k, v) for k, v in heads.items() if k != v)
            detail = f"position {t}, head {a} holds position {t2}, head {a2}'s values"
        elif torch.allclose(
            got.sort(dim=-1).values, expected.sort(dim=-1).values, rtol=1e-4, atol=1e-5
        ):
            relation = "shuffled"
        elif (heads := block.attn.config.n_heads) > 1 and torch.allclose(
            split := got.reshape(*got.shape[:-1], heads, -1),
            split[..., :1, :].expand_as(split),
            rtol=1e-4,
            atol=1e-5,
        ):
            relation = "same_heads"
        elif raw is not None and torch.allclose(got, expected + raw, rtol=1e-4, atol=1e-5):
            relation = "plus_x"
        elif normed is not None and torch.allclose(got, expected + normed, rtol=1e-4, atol=1e-5):
            relation = "plus_ln1"
        elif not (moved or others) and first is not None and first.numel() == got.numel():
            changed = (first.reshape(expected.shape).float() - got).abs()[:, 1:]
            if changed.numel() and float(changed.amax()) <= 1e-6:
                h = expected.shape[-1]
                own_v = None
                if normed is not None:
                    with torch.no_grad():
                        qkv = block.attn.qkv
                        own_v = F.linear(normed, qkv.weight[2 * h :], qkv.bias[2 * h :])
                if own_v is not None and torch.allclose(got, own_v, rtol=1e-4, atol=1e-5):
                    relation = "own_value"  # each position attended to itself alone
                else:
                    relation = "isolated"
    return StageEvidence(name, _rows(got, expected), moved, others, relation, detail)


#: What x1 (the input of ln2) is instead of x + attn.proj(y), when proj's input y is right.
RESIDUAL_RELATIONS = {
    "untransposed": (
        "It equals x + y @ W + b with W = `block.attn.proj.weight` as stored: the projection "
        "used its weight without the transpose `nn.Linear` applies.",
        "apply the projection as the module does, `block.attn.proj(y)`, or by hand "
        "`y @ W.T + b` (`F.linear(y, W, b)`): a Linear's weight is stored (out, in).",
    ),
    "from_ln1": (
        "It equals ln1(x) + attn.proj(y): the residual added the normalised input.",
        "the attention sub-layer adds its output to the block's input itself: "
        "x1 = x + attn.proj(y), with x as it came in (not ln1(x)).",
    ),
    "no_proj": (
        "It equals x + y: the heads' output was added without the output projection.",
        "after merging the heads, apply the output projection: x1 = x + attn.proj(y).",
    ),
    "no_residual": (
        "It equals attn.proj(y) alone: the block's input was not added back.",
        "the attention sub-layer is residual: x1 = x + attn.proj(y).",
    ),
    "no_bias": (
        "It equals x + y @ W.T without the projection's bias.",
        "use `block.attn.proj(y)` (weight and bias) or `F.linear(y, W, b)`.",
    ),
}


def _residual_relation(block, x, y, x1, normed) -> str:
    """Which of :data:`RESIDUAL_RELATIONS` x1 equals, given x and proj's input y ("" none)."""
    proj = block.attn.proj
    if y.numel() != x.numel() or x1.numel() != x.numel():
        return ""
    y, x1 = y.reshape(x.shape).float(), x1.reshape(x.shape).float()
    with torch.no_grad():
        w, b = proj.weight, proj.bias
        candidates = {
            "untransposed": x + y @ w + b if w.shape[0] == w.shape[1] else None,
            "from_ln1": (normed + proj(y)) if normed is not None else None,
            "no_proj": x + y,
            "no_residual": proj(y),
            "no_bias": x + y @ w.T,
        }
    for key, value in candidates.items():
        if value is not None and torch.allclose(x1, value, rtol=1e-4, atol=1e-5):
            return key
    return ""


def _probe_block(block, **zero) -> gpt.Block:
    """A copy of ``block`` with some parameters set: proj=0, fc2=0, or the value projection
    made constant (``values``) with proj the identity, so y is what attention outputs."""
    probe = copy.deepcopy(block)
    h = probe.ln1.weight.shape[0]
    with torch.no_grad():
        if zero.get("proj"):
            probe.attn.proj.weight.zero_()
            probe.attn.proj.bias.zero_()
        if zero.get("fc2"):
            probe.mlp.fc2.weight.zero_()
            probe.mlp.fc2.bias.zero_()
        if zero.get("values"):
            probe.attn.qkv.weight[2 * h :].zero_()
            probe.attn.qkv.bias[2 * h :].copy_(torch.linspace(0.5, 1.5, h))
            probe.attn.proj.weight.copy_(torch.eye(h))
            probe.attn.proj.bias.zero_()
    return probe


def _differs(answer, block, x) -> tuple[bool | None, torch.Tensor | None]:
    """(whether the answer differs from ``block`` on x, its output); None when it fails."""
    try:
        with torch.no_grad():
            out = answer(block, x.clone())
            expected = block(x)
    except (Exception, SystemExit):
        return None, None
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape:
        return None, None
    return not torch.allclose(out.float(), expected, rtol=1e-4, atol=1e-5), out.float()


def _fit_scale(block, x, out) -> float | None:
    """The factor c on q k^T for which the block equals ``out``, if one does (a search over
    log c, then a check)."""

    def error(log_c: float) -> float:
        with torch.no_grad():
            return float((_variant(block, x, scale=math.exp(log_c)) - out).abs().max())

    lo, hi = math.log(1e-3), math.log(1e2)
    grid = [lo + (hi - lo) * i / 60 for i in range(61)]
    best = min(grid, key=error)
    step = (hi - lo) / 60
    a, b = best - step, best + step
    for _ in range(40):  # golden-section search on the bracket around the grid's best
        c1, c2 = b - 0.618 * (b - a), a + 0.618 * (b - a)
        if error(c1) < error(c2):
            b = c2
        else:
            a = c1
    c = math.exp((a + b) / 2)
    with torch.no_grad():
        if torch.allclose(_variant(block, x, scale=c), out, rtol=1e-3, atol=1e-4):
            return c
    return None


NONFINITE = "look for a division by zero or a row of scores that is entirely -inf."
ATTENTION_NAN = (
    "NaN appears between the projection to q, k, v and the output projection: in the scores, "
    "the mask or the softmax. A mask made by multiplying by -inf gives NaN wherever it "
    "multiplies 0 (0 x inf is NaN): put -inf only where a key is masked (`masked_fill`, "
    "`torch.where`), and leave at least one key (the query's own position) to every query."
)


def _nonfinite_evidence(answer, block, x, shape, rows) -> tuple[str, str]:
    """(what, hint) for an output with inf or NaN: the first stage whose input is not finite
    (the answer is run again with each weight's first use recorded)."""
    what = f"({shape}) your output is not finite at positions {rows[:5]}."
    stages = _Stages(block)
    try:
        with torch.no_grad(), stages:
            answer(block, x.clone())
    except (Exception, SystemExit):
        return what, NONFINITE
    seen = [n for n in STAGES if n in stages.inputs]
    bad = [n for n in seen if not bool(torch.isfinite(stages.inputs[n]).all())]
    if not bad:
        return what, NONFINITE
    first = bad[0]
    fine = [n for n in seen[: seen.index(first)] if n not in bad]
    where = f"The input of `{STAGE_CALL[first]}` is already not finite"
    if fine:
        names = " and ".join(f"`{STAGE_CALL[n]}`" for n in fine)
        where += f", while the input{'s' if len(fine) > 1 else ''} of {names} "
        where += "are finite" if len(fine) > 1 else "is finite"
    what += f" {where}."
    if first == "proj" and "qkv" in fine:
        return what, ATTENTION_NAN
    return what, NONFINITE


def _block_evidence(answer, block, x, out, expected, shape, g) -> BlockEvidence:
    """Everything the hint needs, gathered by calling the answer again on probes."""
    s, h = x.shape[1], x.shape[2]
    out = out.detach().float()
    first = tuple(int(i) for i in torch.nonzero(~torch.isclose(out, expected, 1e-4, 1e-5))[0])
    rows = _rows(out, expected)

    def recorded(blk, inp):
        stages = _Stages(blk)
        try:
            with torch.no_grad(), stages:
                result = answer(blk, inp.clone())
        except (Exception, SystemExit):
            return None, stages.inputs
        return result, stages.inputs

    again, mine = recorded(block, x)
    earlier = x.clone()
    earlier[:, 0] += torch.randn(earlier.shape[0], h, generator=g)
    _, mine_first = recorded(block, earlier)
    varies = 0.0
    if isinstance(again, torch.Tensor) and again.shape == out.shape:
        varies = float((again.float() - out).abs().max())
    later = x.clone()
    later[0, -1] += torch.randn(h, generator=g)
    moved_out, mine_later = recorded(block, later)
    reference = _Stages(block)
    with torch.no_grad(), reference:
        block(x)
    theirs = reference.inputs
    ref_later = _Stages(block)
    with torch.no_grad(), ref_later:
        block(later)
    stage = None
    if not varies:
        for name in STAGES:
            if name in mine and name in theirs:
                raw = {"qkv": x, "fc1": theirs.get("ln2"), "proj": x}.get(name)
                stage = _stage_evidence(
                    name,
                    mine[name],
                    theirs[name],
                    mine_later.get(name),
                    block,
                    raw,
                    first=mine_first.get(name),
                    normed=theirs.get("qkv"),
                )
                if stage is not None:
                    break
        # x1 wrong while proj's input is right: what the residual sum is instead
        if stage is not None and stage.name == "ln2" and not stage.moved and "proj" in mine:
            found = _residual_relation(block, x, mine["proj"], mine["ln2"], theirs.get("qkv"))
            if found:
                stage = StageEvidence("ln2", stage.rows, (), False, "residual", found)
        # ln2's first use wrong while fc1 received x1 itself: ln2 was moved after the MLP
        if stage is not None and stage.name == "ln2" and "fc1" in mine and "ln2" in theirs:
            fed = mine["fc1"]
            if fed.numel() == theirs["ln2"].numel() and torch.allclose(
                fed.reshape(theirs["ln2"].shape).float(), theirs["ln2"], rtol=1e-4, atol=1e-5
            ):
                stage = StageEvidence("fc1", stage.rows, (), False, "x", "after_mlp")
    moved, others = (), False
    if isinstance(moved_out, torch.Tensor) and moved_out.shape == out.shape:
        moved, others = _moved(moved_out.detach().float(), out)
    single, _ = _differs(answer, block, x[:, :1])
    single_factor = _single_factor(answer, block, x[:, :1]) if single else None
    after_attention, _ = _differs(answer, _probe_block(block, proj=True), x)
    sums, scale = None, None
    if not varies and single is False and after_attention is False:
        probe = _probe_block(block, fc2=True, values=True)
        wrong, got = _differs(answer, probe, x)
        if wrong and got is not None:
            c = probe.attn.qkv.bias[2 * h :].detach()
            ratio = (got - x) / c  # each position's weights' sum, if the values' shape is kept
            per_row = ratio[..., :1].expand_as(ratio)
            if torch.allclose(ratio, per_row, rtol=1e-3, atol=1e-4):
                sums = tuple(round(float(v), 3) for v in ratio[0, :, 0])
        if sums is None and not moved and not others:
            with torch.no_grad():
                scale = _fit_scale(block, x, out)
    return BlockEvidence(
        shape=shape,
        seq=s,
        first=first,
        got=float(out[first]),
        expected=float(expected[first]),
        rows=rows,
        varies=varies,
        recorded=tuple(n for n in STAGES if n in mine),
        stage=stage,
        moved=moved,
        other_sequences=others,
        single=single,
        after_attention=after_attention,
        sums=sums,
        scale=scale,
        d_head=h // block.attn.config.n_heads,
        single_factor=single_factor,
        query_reduction=_query_reduction(answer),
    )


_QUERY_AXIS = re.compile(
    r"\.(amax|max|sum|softmax|log_softmax|logsumexp|mean)\(\s*(dim\s*=\s*)?(-2|2)\b"
    r"|\b(softmax|log_softmax|logsumexp|amax|max|sum)\([^()]*,\s*dim\s*=\s*(-2|2)\b"
)


def _query_reduction(answer) -> tuple[int, str] | None:
    """The first line of the answer's source that reduces over dim -2 (or 2): on the
    (batch, heads, seq, seq) scores, across the queries instead of the keys."""
    try:
        lines, first = inspect.getsourcelines(answer)
    except (OSError, TypeError):
        return None
    for offset, text in enumerate(lines):
        code = text.split("#", 1)[0]
        if _QUERY_AXIS.search(code):
            return first + offset, text.strip()
    return None


def _single_factor(answer, block, x) -> float | None:
    """At a one-position sequence (attention's output is v itself): the constant c with the
    answer's input of ``block.attn.proj`` = c x the block's, its earlier stages right."""
    mine, theirs = _Stages(block), _Stages(block)
    try:
        with torch.no_grad(), mine:
            answer(block, x.clone())
    except (Exception, SystemExit):
        return None
    with torch.no_grad(), theirs:
        block(x)
    got, want = mine.inputs, theirs.inputs
    if any(n not in got or got[n].shape != want[n].shape for n in ("ln1", "qkv", "proj")):
        return None
    if not all(torch.allclose(got[n], want[n], rtol=1e-4, atol=1e-5) for n in ("ln1", "qkv")):
        return None
    g, w = got["proj"].float(), want["proj"]
    c = float((g * w).sum() / (w * w).sum()) if bool(w.any()) else math.nan
    if not math.isfinite(c) or math.isclose(c, 1.0, rel_tol=1e-3):
        return None
    return c if torch.allclose(g, c * w, rtol=1e-4, atol=1e-5) else None


def _positions(rows: tuple[int, ...], seq: int) -> str:
    if len(rows) == seq:
        return "every position"
    if len(rows) == 1:
        return f"position {rows[0]} only"
    return "positions " + ", ".join(str(r) for r in rows[:8]) + (", ..." if len(rows) > 8 else "")


def _leak_words(moved: tuple[int, ...], others: bool, seq: int, where: str) -> str:
    parts = []
    if moved:
        which = "every earlier position" if len(moved) == seq - 1 else _positions(moved, seq)
        parts.append(f"changing only the last token of a sequence changed {where} at {which}")
    if others:
        parts.append(f"changing one sequence changed {where} in another sequence of the batch")
    return "; ".join(parts)


def _weights_hint(ev: BlockEvidence, head: str) -> tuple[str, str] | None:
    """(what, hint) when the attention weights' sums or scale explain a wrong output."""
    if ev.sums is not None:
        return (
            head + " With every value vector the same, attention should return that vector; "
            f"yours returns it times {list(ev.sums)} at positions 0..{ev.seq - 1} of the first "
            "sequence: the weights of a query do not sum to 1.",
            NOT_NORMALISED,
        )
    if ev.scale is not None:
        return (
            head + f" It equals the block with q k^T multiplied by {ev.scale:.4g} = "
            f"1/{1 / ev.scale:.4g}; here d_head = {ev.d_head}, so 1/sqrt(d_head) = "
            f"{ev.d_head**-0.5:.4g} is expected.",
            SCALE,
        )
    return None


def _block_hint(ev: BlockEvidence) -> tuple[str, str]:
    """(what was observed, hint): a cause named only where the evidence singles it out."""
    head = (
        f"({ev.shape}) your output differs from the block's at {_positions(ev.rows, ev.seq)}, "
        f"first at index {ev.first}: yours {ev.got:.5g}, expected {ev.expected:.5g}."
    )
    if ev.varies:
        return (
            f"({ev.shape}) two calls on the same block and the same x returned outputs that "
            f"differ by up to {ev.varies:.3g}: your forward is random.",
            RANDOM,
        )
    st = ev.stage
    if st is not None:
        call = STAGE_CALL[st.name]
        before = [
            n
            for n in ev.recorded
            if STAGES.index(n) < STAGES.index(st.name)
            and not (st.detail == "after_mlp" and n == "ln2")  # its first use was wrong
        ]
        right = ""
        if before:
            names = ", ".join(f"`{STAGE_CALL[n]}`" for n in before)
            right = f" The input{'s' if len(before) > 1 else ''} of {names} "
            right += "are right." if len(before) > 1 else "is right."
        if st.relation == "permuted":
            return (
                f"({ev.shape}) the input of `{call}` holds the right numbers in the wrong "
                f"places: {st.detail}.{right}",
                HEADS_SHAPE,
            )
        if st.relation == "shuffled":
            return (
                f"({ev.shape}) the input of `{call}` holds, at each position, the right "
                f"numbers in other feature places: the heads' outputs were merged back in "
                f"another order.{right}",
                "merge with `y.transpose(1, 2).reshape(b, s, h)`: from (batch, heads, seq, "
                "d_head) to (batch, seq, heads, d_head), so that head i's d_head features sit "
                "together, i x d_head to (i + 1) x d_head - 1.",
            )
        if st.relation in ("plus_x", "plus_ln1"):
            added = "x, the block's input" if st.relation == "plus_x" else "ln1(x)"
            return (
                f"({ev.shape}) the input of `{call}` is the heads' merged output plus {added}: "
                f"the residual was added before the output projection.{right}",
                "project the heads alone, then add the residual: "
                "`x = x + block.attn.proj(y)`, with y the merged heads.",
            )
        if st.relation == "same_heads":
            return (
                f"({ev.shape}) every head's slice of the input of `{call}` holds the same "
                "numbers: the heads were averaged (or one head repeated), not concatenated."
                f"{right}",
                "each head keeps its own output: merge the heads side by side, "
                "`y.transpose(1, 2).reshape(b, s, h)`, head i in features i x d_head to "
                "(i + 1) x d_head - 1; the output projection mixes them.",
            )
        if st.relation == "own_value":
            return (
                f"({ev.shape}) the input of `{call}` at each position is that position's own "
                f"v: every position attended to itself alone, with weight 1.{right}",
                "the causal mask hides only the later keys: keep key j for query i when j <= i "
                "(`torch.tril`), so that position i averages the values of positions 0 to i.",
            )
        if st.relation == "isolated":
            return (
                f"({ev.shape}) the input of `{call}` at each position depends on that "
                "position's own token alone: changing the first token of every sequence "
                "changed no later position's, so attention never looked across positions. It "
                f"ran over another axis than the sequence.{right}",
                "q, k and v must meet as (batch, heads, seq, d_head): `view(b, s, n_heads, "
                "d_head).transpose(1, 2)` before the scores (or before "
                "`F.scaled_dot_product_attention`), so that each head's scores are seq x seq.",
            )
        if st.moved or st.other_sequences:
            leak = _leak_words(st.moved, st.other_sequences, ev.seq, f"the input of `{call}`")
            what = f"({ev.shape}) {leak[0].upper()}{leak[1:]}.{right}"
            if st.name in ("qkv", "fc1"):  # only a LayerNorm lies between: it mixed positions
                norm = "ln1" if st.name == "qkv" else "ln2"
                return (
                    what + f" Only {norm} comes before it, so the normalisation mixes them.",
                    NORM_AXIS,
                )
            if st.name == "ln1":  # before the first LayerNorm: something mixed positions
                what += " Something computed before `block.ln1` mixed them."
                hint = LOOKS_AHEAD if len(st.moved) == ev.seq - 1 else PARTIAL_LEAK
                return what, STAGE_CHECK["ln1"] + " Then: " + hint
            if st.name == "proj":
                if len(st.moved) == ev.seq - 1:
                    return what + " Later tokens reached them inside attention.", LOOKS_AHEAD
                if st.moved == (ev.seq - 2,) and not st.other_sequences:
                    return (
                        what + f" Only position {ev.seq - 2} saw token {ev.seq - 1}: each "
                        "position also sees the next one.",
                        MASK_SHIFTED,
                    )
                if st.other_sequences and not st.moved:  # across the batch, not ahead
                    return (
                        what + " Within a sequence no later token reached an earlier position: "
                        "attention ran across the sequences of the batch.",
                        "each sequence attends to its own tokens only: keep the batch axis apart "
                        "from the sequence, scores of shape (batch, heads, seq, seq), and do not "
                        "merge batch and sequence (`view(b * s, ...)`, a reshape that drops the "
                        "batch axis) before the scores.",
                    )
                if ev.query_reduction:
                    line, text = ev.query_reduction
                    return (
                        what + f" A later token reached them inside attention; line {line}, "
                        f"`{text}`, reduces over dim -2, the queries' axis of the scores.",
                        "a softmax's maximum and sum run over the keys, the last axis: "
                        "`.amax(dim=-1, keepdim=True)`, `.sum(dim=-1, keepdim=True)`, "
                        "`softmax(dim=-1)`. Over dim -2 each key's column mixes every query, "
                        "later ones included, and the weights are no longer each row's "
                        "softmax.",
                    )
                return what + " A later token reached them inside attention.", PARTIAL_LEAK
            if ev.single is False:
                return what + " A one-position sequence is right.", LOOKS_AHEAD
            if ev.single:
                return what + " A one-position sequence is wrong too.", NORM_OR_MASK
        if st.relation == "shape":
            return (
                f"({ev.shape}) `{call}` received a tensor of shape {st.detail}; it should "
                f"receive {STAGE_INPUT[st.name]}.",
                HEADS_SHAPE if st.name == "proj" else STAGE_CHECK[st.name],
            )
        if st.relation == "x":
            norm, fed = ("ln1", "x") if st.name == "qkv" else ("ln2", "x1")
            moved = (
                " `block.ln2` was applied after the MLP, not to its input."
                if st.detail == "after_mlp"
                else ""
            )
            return (
                f"({ev.shape}) `{call}` received {fed} itself, not normalised.{moved}{right}",
                f"normalise first: `{call}(block.{norm}({fed}))`.",
            )
        if st.relation == "residual":
            what, hint = RESIDUAL_RELATIONS[st.detail]
            return (
                f"({ev.shape}) the first place your forward goes wrong is the input of "
                f"`{call}`, x1 = x + attn.proj(y), though `block.attn.proj`'s input y is right. "
                f"{what}{right}",
                hint,
            )
        if st.relation == "swapped_affine":
            norm = "ln1" if st.name == "qkv" else "ln2"
            return (
                f"({ev.shape}) `{call}` received {norm}'s normalisation with its weight and bias "
                f"exchanged: bias x x_hat + weight.{right}",
                f"a LayerNorm scales by its weight and shifts by its bias: `x_hat * "
                f"block.{norm}.weight + block.{norm}.bias` (or `block.{norm}(...)` itself).",
            )
        if st.relation == "uncentred":
            return (
                f"({ev.shape}) `{call}` received x divided by its root mean square over the "
                f"features (then ln1's weight and bias): an RMSNorm, the mean never subtracted."
                f"{right}",
                "a LayerNorm centres each position first: (x - mean) / sqrt(var + eps), with "
                "the mean and the (biased) variance over the last dimension; or use "
                "`block.ln1(x)` itself.",
            )
        if st.relation == "unaffine":
            norm = "ln1" if st.name == "qkv" else "ln2"
            return (
                f"({ev.shape}) `{call}` received a normalisation without {norm}'s weight and "
                f"bias.{right}",
                f"use `block.{norm}(...)` itself, or `F.layer_norm(t, (h,), block.{norm}.weight, "
                f"block.{norm}.bias, block.{norm}.eps)`.",
            )
        what = (
            f"({ev.shape}) the first place your forward goes wrong is the input of `{call}`, "
            f"at {_positions(st.rows, ev.seq)}: it should be {STAGE_INPUT[st.name]}.{right}"
        )
        if st.name != "proj":
            return what, STAGE_CHECK[st.name]
        if ev.single and ev.single_factor is not None:
            c, d = ev.single_factor, ev.d_head
            named = {d**-0.5: "1/sqrt(d_head)", d**0.5: "sqrt(d_head)", 1 / d: "1/d_head"}
            which = [w for value, w in named.items() if math.isclose(c, value, rel_tol=1e-3)]
            seen = (
                f"({ev.shape}) at a one-position sequence, where attention's output is v itself "
                f"(one key, weight 1), the input of `{call}` is v times {c:.4g}, at every "
                "position and feature; the inputs of `block.ln1` and `block.attn.qkv` are right."
            )
            if which:
                return (
                    seen + f" {c:.4g} = {which[0]} with d_head = {d}: the scale was applied "
                    "after the softmax.",
                    SCALE_PLACE,
                )
            return seen + " A constant factor came after the softmax.", AFTER_SOFTMAX
        if ev.single:
            return (
                what + " A one-position sequence, where each position attends only to itself "
                "(output = its own v), is wrong too: the values themselves differ.",
                "check v: `q, k, v = block.attn.qkv(u).split(h, dim=-1)` in that order (the "
                "layer's bias included), and the merge back to (batch, seq, d_model).",
            )
        head = what
    weights = _weights_hint(ev, head)
    if weights is not None:
        return weights
    if ev.single is False and 0 not in ev.rows and ev.seq > 1:
        return (
            head + " Position 0, which attends only to itself, is right, and so is a "
            "one-position sequence: v, the merge and the projection are right; the weights "
            "of the later positions are not.",
            WEIGHTS,
        )
    if st is not None:
        return head, STAGE_CHECK["proj"]
    if ev.moved or ev.other_sequences:
        leak = _leak_words(ev.moved, ev.other_sequences, ev.seq, "your output")
        what = f"({ev.shape}) {leak[0].upper()}{leak[1:]}."
        if ev.single is False and not ev.other_sequences:
            if len(ev.moved) == ev.seq - 1:
                return what + " A one-position sequence is right.", LOOKS_AHEAD
            return what + " A one-position sequence is right.", PARTIAL_LEAK
        if ev.other_sequences:
            return what, NORM_AXIS
        return what + " A one-position sequence is wrong too.", NORM_OR_MASK
    if ev.recorded and "fc2" in ev.recorded:  # every stage right: the last residual
        return head + " Every stage's input up to `block.mlp.fc2` is right.", STAGE_CHECK["out"]
    if ev.single:
        part = (
            "with attention's output projection set to zero it is still wrong, so look at "
            "ln2, fc1, GeLU, fc2 and the residuals."
            if ev.after_attention
            else "with attention's output projection set to zero it is right, so look at ln1, "
            "v, proj and the residual around attention."
        )
        return head, POSITIONWISE + part
    return (
        head + " A one-position sequence is right and no later token reaches an earlier "
        "position: what differs is how positions are mixed.",
        WEIGHTS,
    )


def _block_error_evidence(case: int, error: BaseException, text: str):
    """(what was observed, hint) for an error at ``BLOCK_CASES[case]`` after the earlier cases
    ran: sizes in the error that are an earlier case's sequence length and not one of this
    case's sizes (a tensor kept from an earlier call); else the hint from the error alone."""
    if BLOCK_SPARE[case] and isinstance(error, RuntimeError):
        h, a, b, s = BLOCK_CASES[case]
        context = s + BLOCK_SPARE[case]
        numbers = {int(n) for n in re.findall(r"\d+", text)}
        if {context, s} <= numbers and context not in (h, a, b, h // a):
            return (
                f"In this case x holds {s} positions and the model allows {context} "
                f"(block.attn.config.seq_len): the sizes in the error are {context} and {s}, "
                "so something was sized by the model's context instead of by x.",
                "size everything that spans positions by x itself, `s = x.shape[1]`: a causal "
                "mask of s x s (`torch.ones(s, s, dtype=torch.bool).triu(1)`), or a mask made "
                "for the longest sequence cut to `[:s, :s]`.",
            )
    if case > 0 and isinstance(error, RuntimeError):
        h, a, b, s = BLOCK_CASES[case]
        numbers = {int(n) for n in re.findall(r"\d+", text)}
        earlier = [c[3] for c in BLOCK_CASES[:case]]
        stale = [t for t in earlier if t in numbers and t not in (h, a, b, s, h // a)]
        if stale and s in numbers:
            lengths = ", ".join(str(t) for t in earlier)
            return (
                f"It ran on the earlier shape{'s' if case > 1 else ''} (sequence length "
                f"{lengths}) and raised at sequence length {s}: the sizes in the error are "
                f"{stale[0]}, an earlier call's sequence length, and {s}, this call's.",
                STALE_LENGTH,
            )
    return _block_exception_hint(error, text, BLOCK_CASES[case])


def _shape_evidence(error: BaseException, sizes: tuple | None = None) -> tuple[str, str] | None:
    """For a shape error: (the sizes of the tensors on the failing line, a hint read from them,
    or "" when they name no cause); None when the line holds no tensor the checker can see.
    ``sizes``: the case's (d_model, heads, batch, seq), when known."""
    h, heads, batch, seq = sizes or (None, None, None, None)
    values = getattr(error, "_course_values", None) or {}
    seen = _described(values)
    if not seen:
        return None
    what = f"On that line {seen}."
    line = getattr(error, "_course_where", "")
    tensors = {n: v for n, v in values.items() if isinstance(v, torch.Tensor)}
    for name in re.findall(r"\b(\w+)\.T\b", line):
        t = tensors.get(name)
        if t is not None and t.dim() > 2:
            return what, (
                f"`{name}.T` reverses all {t.dim()} axes of `{name}` (batch and heads too), not "
                f"just the last two: to swap the positions and the head features, use "
                f"`{name}.transpose(-2, -1)` (or `{name}.mT`)."
            )
    masks = [(n, t) for n, t in tensors.items() if t.dim() == 2 and t.shape[0] == t.shape[1]]
    scores = [t for t in tensors.values() if t.dim() >= 3 and t.shape[-1] == t.shape[-2]]
    for name, mask in masks:
        for score in scores:
            if score.shape[-1] != mask.shape[0]:
                m, positions = mask.shape[0], score.shape[-1]
                batch = " (the batch size, `x.shape[0]`)" if m == score.shape[0] else ""
                return what, (
                    f"`{name}` is {m} x {m}{batch}, but the scores it goes with are "
                    f"{positions} x {positions} (query by key positions): size the mask by the "
                    "sequence length, `s = x.shape[1]`, "
                    "`torch.ones(s, s, dtype=torch.bool).triu(1)`."
                )
    if seq and heads and seq != heads:
        for name, t in tensors.items():
            if t.dim() == 4 and t.shape[1] == seq and t.shape[2] == heads:
                return what, (
                    f"`{name}` is (batch, seq, heads, ...) = {' x '.join(map(str, t.shape))}: "
                    "the heads are split but still behind the positions, so the scores pair "
                    "heads instead of positions: " + HEADS_SHAPE
                )
    if h:
        for name, t in tensors.items():
            if t.dim() >= 2 and t.shape[-1] == 3 * h:
                return what, (
                    f"`{name}` still has 3 x d_model = {3 * h} features: q, k and v come out of "
                    "`qkv` side by side along the last dimension, so cut them apart along it, "
                    f"`.split({h}, dim=-1)` or `.chunk(3, dim=-1)` (another axis cuts the "
                    "positions or the batch instead)."
                )
    return what, ""


def _block_exception_hint(error: BaseException, text: str, sizes: tuple | None = None):
    shapes = (
        "must match the size",
        "shape '",
        "size mismatch",
        "cannot be multiplied",
        "view size",
    )
    if "in-place operation" in text or "modified by an inplace operation" in text:
        return IN_PLACE
    if (
        isinstance(error, TypeError)
        and "float" in text
        and any(w in text for w in ("view", "reshape", "size", "int"))
    ):
        return D_HEAD_INT
    line = getattr(error, "_course_where", "")
    reduction = re.search(
        r"\.(sum|mean|max|amax|min|amin|logsumexp|norm|std|var)\((?![^)]*keepdim)", line
    )
    if isinstance(error, RuntimeError) and "must match the size" in text and reduction:
        return (
            f"the `.{reduction.group(1)}(...)` on this line drops the dimension it reduces (a "
            "(batch, heads, seq, seq) block of scores becomes (batch, heads, seq)), so its "
            "result no longer lines up with the tensor it is combined with. Keep that "
            f"dimension: `.{reduction.group(1)}(dim=-1, keepdim=True)`."
        )
    if "only supports boolean masks" in text:
        return (
            "`masked_fill` takes a boolean mask (True where the value is replaced): make it "
            "with `dtype=torch.bool`, `torch.ones(s, s, dtype=torch.bool).triu(1)`, or turn a "
            "0/1 mask into one with `mask.bool()`."
        )
    if isinstance(error, RuntimeError) and any(t in text for t in shapes):
        evidence = _shape_evidence(error, sizes)
        if evidence is None:
            return HEADS_SHAPE
        what, hint = evidence
        if hint:
            return what, hint
        if re.search(r"\.(view|reshape|transpose|permute|split|chunk|flatten)\(", line) or any(
            isinstance(v, torch.Tensor) and v.dim() == 4
            for v in (getattr(error, "_course_values", None) or {}).values()
        ):
            return what, HEADS_SHAPE
        return what, (
            "compare those sizes with what a block works on: x is (batch, seq, d_model), and "
            "each head's q, k and v are (batch, heads, seq, d_head), with d_head = d_model // "
            "n_heads; the scores are (batch, heads, seq, seq)."
        )
    if isinstance(error, ValueError) and "values to unpack (expected 3)" in text:
        return (
            "q, k and v are three pieces of qkv's output along its last dimension, each of "
            "d_model features: `.chunk(3, dim=-1)` cuts it into 3 pieces, `.split(d_model, "
            "dim=-1)` into pieces of d_model features (`.split(3, ...)` makes pieces of 3 "
            "features, as many as there are)."
        )
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


def _repeats(answer, block, x, out) -> bool:
    """Whether a second call on the same block and x returns exactly ``out`` (not random)."""
    try:
        with torch.no_grad():
            again = answer(block, x.clone())
    except (Exception, SystemExit):
        return False
    return (
        isinstance(again, torch.Tensor)
        and again.shape == out.shape
        and torch.equal(again.detach().float(), out.detach().float())
    )


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
        block = _random_block(h, a, s + BLOCK_SPARE[case], BLOCK_SEED + case)
        g = torch.Generator().manual_seed(100 + case)
        x = torch.randn(b, s, h, generator=g)
        shape = f"batch {b}, seq {s}, d_model {h}, {a} heads"
        with torch.no_grad():
            expected = block(x)
        state = {n: p.detach().clone() for n, p in block.named_parameters()}
        try:
            out, calls = _call_block(answer, block, x.clone().requires_grad_())
        except (Exception, SystemExit) as error:
            hint = functools.partial(_block_error_evidence, case)
            return _raised(exercise_id, error, answer, hint)
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
            if rows == [s - 1]:  # only the last row: the one row an inverted mask empties
                return failed(
                    exercise_id,
                    f"({shape}) your output is NaN at position {s - 1}, the last, and only "
                    "there: that query had no key left to attend to.",
                    MASK_INVERTED,
                )
            return failed(exercise_id, *_nonfinite_evidence(answer, block, x, shape, rows))
        if not torch.allclose(out, expected, rtol=1e-4, atol=1e-5):
            if _repeats(answer, block, x, out):  # a known variant first: it costs little
                with torch.no_grad():
                    for options, what, hint in BLOCK_MISTAKES:
                        variant = _variant(block, x, **options)
                        if torch.allclose(out, variant, rtol=1e-4, atol=1e-5):
                            return failed(
                                exercise_id, f"({shape}) your output equals {what}.", hint
                            )
            evidence = _block_evidence(answer, block, x, out, expected, shape, g)
            return failed(exercise_id, *_block_hint(evidence))
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
        run=_with_source_evidence(functools.partial(_run_block, "primer_block_forward")),
        kind="function",
        time_limit=30.0,
    )
)


# --- 3. gradient accumulation over micro-batches of unequal token counts ---------------------------

#: real tokens of each sequence, per call and micro-batch (the rest of the 8 positions is padding):
#: call 1 has equal counts (dividing each mean by m is exact there), call 2 does not, and its first
#: micro-batch holds padding (so that m x its count differs from the positions, 48)
ACCUMULATE_LENGTHS = (((8, 8), (8, 8), (8, 8)), ((3, 2), (8, 8), (8, 4)))

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
    def pairs(call) -> list:
        return list(call[0])

    @staticmethod
    def returned(model, call) -> list[tuple[float, str]]:
        micro = call[0]
        counts = [int((t != IGNORE).sum()) for _, t in micro]
        means = [float(model(tok, tgt)[1]) for tok, tgt in micro]
        sums = [m * c for m, c in zip(means, counts, strict=True)]
        n, m = sum(counts), len(micro)
        return [
            (
                sums[-1] / n,
                "the last micro-batch's share of the mean (its summed loss over N): "
                "the shares of all micro-batches add up to the batch's loss",
            ),
            (means[-1], "the mean loss of the last micro-batch alone"),
            (
                sum(means) / m,
                f"the mean of the {m} micro-batches' means, not weighted by their "
                f"real tokens {counts}",
            ),
            (sum(means), f"the sum of the {m} micro-batches' means"),
            (sum(sums), f"the summed loss of all {n} real tokens, not divided by N = {n}"),
        ]

    @staticmethod
    def last(k, got, expected, model_before, call):
        """How the step's gradient weighs each sequence, when a weighted sum reproduces it."""
        return _sequence_weights(k, model_before, call[0], got, expected)

    @staticmethod
    def evidence(k, got, expected, model_before, call, ran=None):
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
        alones = []
        for i, (tok, tgt) in enumerate(micro):  # each micro-batch's own gradient
            alone = _grads_of(model_before, model_before(tok, tgt)[1])
            alones.append(alone)
            f = _scale(got, alone)
            if not (
                math.isfinite(f) and f > 0 and _close(got, {a: f * g for a, g in alone.items()})
            ):
                continue
            which = "the last micro-batch" if i == m - 1 else f"micro-batch {i + 1} of {m}"
            what = (
                f"In call {k + 1}, the gradients `optimizer.step()` used come from {which} "
                f"alone (they are {f:.4g} times its mean loss's)"
            )
            if i == m - 1:
                return (
                    what + ": the earlier micro-batches' gradients were cleared or never added.",
                    "clear the gradients once per call, before the loop over micro-batches "
                    "(`optimizer.zero_grad()`), and let each micro-batch's `backward()` add into "
                    "`.grad`; one `optimizer.step()` after the loop.",
                )
            if ran is not None and ran == i + 1:
                later = "the others" if m - i > 2 else f"micro-batch {i + 2}"
                return (
                    what + f"; when the step ran, only {ran} of the {m} micro-batches had gone "
                    f"through the model, and {later} never did in this call: the step (or a "
                    "`return`) came inside the loop.",
                    "run every micro-batch's forward and `backward()` first, then one "
                    "`optimizer.step()` after the loop (and return after it): a step or a "
                    "`return` inside the loop ends the accumulation before the last micro-batch.",
                )
            return (
                what + ": the other micro-batches' gradients were not in `.grad` when the step "
                "ran.",
                "clear the gradients once, before the loop, let every micro-batch's "
                "`backward()` add into `.grad`, and call `optimizer.step()` once, after the loop.",
            )
        for i in range(m if m > 2 else 0):  # every micro-batch but one: summed, scaled
            others = {
                a: sum(counts[j] * alones[j][a] for j in range(m) if j != i) for a in expected
            }
            f = _scale(got, others)
            if math.isfinite(f) and f > 0 and _close(got, {a: f * g for a, g in others.items()}):
                which = "the last one" if i == m - 1 else f"micro-batch {i + 1} of {m}"
                return (
                    f"In call {k + 1}, the gradients `optimizer.step()` used come from every "
                    f"micro-batch but {which}: its {counts[i]} real tokens never reached "
                    "`backward()`.",
                    "run the forward and `backward()` of every micro-batch of the list (a loop "
                    "over `micro_batches` itself, or `range(len(micro_batches))`), then one "
                    "`optimizer.step()`.",
                )
        c = _scale(got, expected)
        if math.isclose(c, m, rel_tol=1e-3) and _close(
            got, {a: m * g for a, g in expected.items()}
        ):
            each = f"{counts[0]} real tokens, one micro-batch's" if len(set(counts)) == 1 else ""
            return (
                f"In call {k + 1}, the gradients `optimizer.step()` used are {m} times the whole "
                f"batch's mean: the {m} micro-batches' means were added, not averaged"
                + (
                    f", or the summed loss was divided by {each} count instead of all {n} (a "
                    "count taken from one micro-batch, such as the loop's variable read after "
                    "the loop)."
                    if each
                    else "."
                ),
                TOKEN_WEIGHTED,
            )
        positions = sum(t.numel() for _, t in micro)
        implied = n / c if math.isfinite(c) and c > 0 else math.nan
        if not (
            math.isfinite(implied)
            and abs(implied - round(implied)) < 1e-3 * implied
            and round(implied) not in (n, 1)
            and _close(got, {a: c * g for a, g in expected.items()})
        ):
            return None
        d = round(implied)
        # what a divisor of d can count, from these micro-batches (several may give the same d)
        named = {
            "every position, padding included": positions,
            f"the first micro-batch's {counts[0]} real tokens x {m} micro-batches": counts[0] * m,
            f"the last micro-batch's {counts[-1]} real tokens x {m} micro-batches": counts[-1] * m,
            f"the last micro-batch's {counts[-1]} real tokens only (a count read after the "
            "loop, from the loop's last micro-batch)": counts[-1],
            f"the first micro-batch's {counts[0]} real tokens only": counts[0],
            f"the {sum(t.shape[0] for _, t in micro)} sequences of all micro-batches": sum(
                t.shape[0] for _, t in micro
            ),
            "the targets above 0 (a real token id 0 taken for padding)": sum(
                int((t > 0).sum()) for _, t in micro
            ),
        }
        reasons = [what for what, value in named.items() if value == d]
        if reasons == ["every position, padding included"]:
            return (
                f"In call {k + 1}, the gradients `optimizer.step()` used are {c:.4g} times "
                f"the whole batch's mean: {n} real tokens over {positions} positions. The "
                "padding was counted.",
                PADDING_COUNTED,
            )
        why = f" {d} = " + ", or ".join(reasons) + "." if reasons else ""
        return (
            f"In call {k + 1}, the gradients `optimizer.step()` used are {c:.4g} times the "
            f"whole batch's mean: the summed loss was divided by {d}, but these micro-batches "
            f"hold {n} real tokens (targets other than -100), {counts} per micro-batch.{why}",
            "count the real tokens as `(targets != -100).sum()` in every micro-batch and add "
            "them up (micro-batches may hold different numbers; a token id of 0 is a real "
            "token), and divide the summed loss by that N.",
        )


def _sequence_weights(k, model, micro, got, expected) -> tuple[str, str] | None:
    """(what, hint) when the step's gradient is a weighted sum of the sequences' own gradients
    (each sequence's summed loss), with weights other than 1/N each: fitted by least squares
    over every parameter, and named only when the sum reproduces the gradient."""
    names = list(expected)
    columns, where, real = [], [], []
    for i, (tokens, targets) in enumerate(micro):
        for r in range(tokens.shape[0]):
            logits, _ = model(tokens[r : r + 1])
            loss = F.cross_entropy(
                logits.flatten(0, 1), targets[r].flatten(), reduction="sum", ignore_index=IGNORE
            )
            g = _dense(_grads_of(model, loss), expected) if loss.requires_grad else {}
            g = {a: g.get(a, torch.zeros_like(expected[a])) for a in names}
            columns.append(torch.cat([g[a].flatten() for a in names]).double())
            where.append(i)
            real.append(int((targets[r] != IGNORE).sum()))
    n = sum(real)
    if not n or len(columns) < 2:
        return None
    matrix = torch.stack(columns, dim=1)
    target = torch.cat([got[a].flatten() for a in names]).double()
    if not (torch.isfinite(matrix).all() and torch.isfinite(target).all()):
        return None  # inf or NaN: no weights to fit (LAPACK rejects them); said elsewhere
    weights = torch.linalg.lstsq(matrix, target.unsqueeze(1)).solution[:, 0]
    fitted = (matrix @ weights).float()
    sizes = [expected[a].numel() for a in names]
    pieces = dict(zip(names, fitted.split(sizes), strict=True))
    if not _close(got, {a: pieces[a].reshape(expected[a].shape) for a in names}):
        return None
    ratio = [float(w) * n for w in weights]  # 1.0: the right weight 1/N
    scored = [j for j, t in enumerate(real) if t]
    if all(math.isclose(ratio[j], 1, rel_tol=1e-3) for j in scored):
        return None
    m = len(micro)
    per_micro = []
    for i in range(m):
        rs = [ratio[j] for j in scored if where[j] == i]
        if rs and all(math.isclose(r, rs[0], rel_tol=1e-3, abs_tol=1e-6) for r in rs):
            per_micro.append(rs[0])
    nth = f"In call {k + 1}"
    if len({real[j] for j in scored}) > 1 and all(
        math.isclose(ratio[j] * real[j], ratio[scored[0]] * real[scored[0]], rel_tol=1e-3)
        for j in scored
    ):
        return (
            f"{nth}, the step's gradient weighs every sequence the same, whatever its number of "
            f"real tokens ({[real[j] for j in scored]} here): a token of a short sequence counts "
            "more than one of a long sequence. It is a mean of per-sequence means, not the "
            "mean over every real token.",
            TOKEN_WEIGHTED,
        )
    if len(per_micro) == m and m > 1:
        shown = ", ".join(f"{r:.3g}" for r in per_micro)
        what = (
            f"{nth}, the step's gradient is a weighted sum of the {m} micro-batches' gradients, "
            f"with weights {shown} times the right 1/N (N = {n} real tokens) for micro-batches "
            f"1 to {m}."
        )
        later = [per_micro[i + 1] / per_micro[i] for i in range(m - 1) if per_micro[i]]
        if (
            len(later) == m - 1
            and all(math.isclose(q, later[0], rel_tol=1e-3) for q in later)
            and math.isclose(later[0], n, rel_tol=1e-3)
        ):
            return (
                what + f" Each earlier micro-batch's gradient was divided by {n} once more for "
                "every later one: the accumulated `.grad` was divided inside the loop.",
                "scale each micro-batch's loss by 1/N before its `backward()` (or divide `.grad` "
                "once, after the loop): dividing the accumulated `.grad` inside the loop divides "
                "the earlier micro-batches again and again.",
            )
        return what, TOKEN_WEIGHTED
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
        run=_with_source_evidence(
            functools.partial(_run_accumulate_step, "primer_accumulate_step")
        ),
        kind="function",
        time_limit=30.0,
    )
)
