"""Exercises of lab 11's "profile first" capstone (chapter 11, training in practice): a slow
training script whose problems are planted but not named (``gu.capstone_profile``), found with
``torch.profiler`` first, then fixed.

- ``capstone_profile_diagnose``: the learner's ``diagnose(prof)`` names the problems a profile
  shows. The checker profiles two scripts of its own whose planted problems complement each
  other (so every kind is once present, once absent) and compares the named set with the planted
  one; a missed problem gets what that profile shows for it, a wrongly named one what in that
  profile contradicts it (counts, dtypes and shapes read from the same profile, never a timing).
- ``capstone_profile_fix``: the learner's fixed ``train(text, steps)``. The checker runs it with
  probes that count what each problem leaves behind: items tokenised in the training process,
  host synchronisations inside the loop, the dtype of the linear layers' outputs, tokens per
  optimizer step, the optimizer's code path, block forwards per model forward; and checks that
  it still computes what the script does: the model's parameter shapes against
  ``capstone_profile.build_model()``'s, each step's gradients against what its own backward
  delivered (none carried over from earlier steps), a new token batch every step, AdamW's first
  update from the same weights and gradients, and a loss that goes down. Speed is not judged:
  on a shared CPU the same fix measures anywhere from slower to several times faster from run
  to run.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import itertools
import math
import os
import re

import torch
import torch.nn.functional as F

from ..many_gpus import capstone_profile as cp
from ..many_gpus import gpt, training
from . import _pyerrors
from ._errors import parse_line
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register
from .ch11_training import TIME_LIMIT as _LAB_TIME_LIMIT
from .ch11_training import _line_of, _not_callable, _SyncCounter

CHAPTER = "11_training_in_practice"
#: Seconds of processor time a check may use, as for the rest of lab 11: a correct answer's
#: check takes 2.5-3.5 s of it (two profiles, or one probed run) on a 2-core machine, so an
#: endless loop is stopped, with its line, after 8 s on an idle machine.
TIME_LIMIT = _LAB_TIME_LIMIT
#: The diagnosis's limit: its first check in a checker process profiles five scripts (three,
#: then one with a DataLoader's workers and one with every problem), and a correct answer that
#: reads ``key_averages()`` of each took 7.2-8.5 s on the clock on a 2-core machine
#: (tests/heldout/report.py lab11_profile --half tune --name key_averages_counts); an endless
#: loop is still stopped, with its line, within 14 s of processor time.
DIAGNOSE_TIME_LIMIT = 14.0
#: The fix's limit: its check runs the answer three times (the probed run of FIX_STEPS steps, a
#: second call stopped at its first step, one step on a short text), and under the test
#: suite's load four right answers went past 8 s of processor time (torch's threads spin while
#: they wait on a busy machine); an endless loop is still stopped within 12 s.
FIX_TIME_LIMIT = 12.0
#: The scripts the diagnosis is judged on: the first two complementary, so each kind is present
#: in one. The second reads its loss exactly once per step and nothing else reads (no DataLoader
#: seed): one read per step is the sign, not more reads than steps. The third is sound: it feeds
#: its batches through a DataLoader with LOADER_WORKERS worker processes (a DataLoader alone is
#: not the problem) and stacks its losses on the device (an `aten::stack` is not a DataLoader).
LOADER_WORKERS = 2
SCRIPTS = (
    frozenset({"loader", "fp32", "recompute"}),
    frozenset({"host_sync", "small_batch", "optimizer_loop"}),
    frozenset(),
)
#: One more script, tried once the three are named right: host_sync alone, its batches through a
#: DataLoader with LOADER_WORKERS workers, whose seed is read once more (steps + 1 reads): a
#: diagnosis that wants exactly one read per step misses it (lab11_profile_r5).
EXTRA = frozenset({"host_sync"})
#: And a last one with every kind planted at once: a diagnosis whose reading of one problem
#: depends on another (steps counted from layer-norm forwards, which recompute multiplies, so
#: host_sync went unseen: lab11_profile_r8) is caught where they meet.
EVERY = frozenset(cp.KINDS)
PROFILE_STEPS = 2
#: The script with every problem is profiled for more steps: a count summed over the whole
#: profile (a batch of 2 windows added up over the steps) then no longer looks like one step's
#: (lab11_profile_r9).
EVERY_STEPS = 5


def _steps(kinds: frozenset[str]) -> int:
    """The sound script is profiled for as many steps as the one with every problem: a count
    compared with a fixed threshold (layer norms of one 3-step profile) then shows."""
    return EVERY_STEPS if kinds in (EVERY, frozenset()) else PROFILE_STEPS


#: What ends every line of the fix's text: a character outside ASCII (code point 182, below the
#: model's 256 tokens; two bytes in UTF-8), so that nearly every window of SEQ_LEN tokens holds
#: one and tokens made from code points (`ord`) differ from the script's bytes.
FIX_LINE_END = "¶\n"
FIX_STEPS = 4
#: Host synchronisations allowed inside a fixed loop of FIX_STEPS steps: none (a log line every
#: few steps already reads the loss at step 0, after the first training forward pass).
SYNCS_ALLOWED = 0
#: The model's vocabulary (bytes): the token embedding is the one with this many rows.
VOCAB = 256
#: Largest distance allowed between a fixed script's first update and the script's AdamW's from
#: the same weights and gradients: AdamW's per-parameter loop, foreach and fused paths agree to
#: 2e-9 on this model; Adam with L2 decay lands 3e-5 away (lr x decay x weight), SGD 3e-3.
UPDATE_TOLERANCE = 1e-6


def _in_backward() -> bool:
    """Whether autograd's backward pass is running now (a checkpointed forward is recomputed
    inside it); torch's own test of this, ``_current_graph_task_id``, -1 outside backward."""
    return torch._C._current_graph_task_id() != -1


@functools.cache
@functools.cache
def _text() -> str:
    return training.corpus()


@functools.cache
def _fix_text() -> str:
    """The text the fix's check trains on: half of the chapter's corpus (the documents of the
    first half of its modules), so that a train(text, steps) that reads T.corpus() instead of
    its argument trains on windows the text it was given does not hold. Its lines end with
    :data:`FIX_LINE_END`, which holds a character outside ASCII."""
    half = training.corpus(training.MODULES[: len(training.MODULES) // 2])
    return half.replace("\n", FIX_LINE_END)


def _call(exercise_id: str, function, *args):
    """(value, None), or (None, CheckResult) when the learner's function raised."""
    try:
        return function(*args), None
    except NotImplementedError:
        return None, not_attempted(exercise_id)
    except RecursionError:
        return None, failed(
            exercise_id,
            "Your function called itself without end (RecursionError).",
            "look for a function that calls itself, directly or through another.",
        )
    except Exception as error:
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
        what = f"Your function raised {type(error).__name__}: {text[:300]}{_line_of(error)}."
        hint = _error_hint(text, _line_of(error))
        if not hint:  # read the values on the failing line
            seen, hint = _pyerrors.explain(error, function) or ("", "")
            what += f" {seen}" if seen else ""
        return None, failed(
            exercise_id, what, hint or "run it yourself in a new cell to see the full traceback."
        )


def _positional_optimizer(line: str) -> str:
    """The hint when the failing line builds a torch optimizer with a setting passed by
    position into another parameter (``AdamW(params, lr, 0.01)``: 0.01 becomes betas)."""
    code = line.split("`", 1)[1].rsplit("`", 1)[0] if line.count("`") >= 2 else ""
    if not code:
        return ""
    for node in ast.walk(parse_line(code) or ast.parse("")):
        if not isinstance(node, ast.Call):
            continue
        name = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        optimizer = getattr(torch.optim, name, None)
        if not (isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer)):
            continue
        parameters = list(inspect.signature(optimizer).parameters)
        if len(node.args) < 3 or len(parameters) < len(node.args):
            continue
        given = ast.unparse(node.args[2])
        return (
            f"`{name}`'s parameters in order are ({', '.join(parameters[:5])}, ...): the third "
            f"value you pass by position, `{given}`, becomes `{parameters[2]}`. Pass every "
            "setting after the learning rate by name (`weight_decay=...`, `betas=...`)."
        )
    return ""


def _error_hint(text: str, line: str = "") -> str:
    """A hint read from the error's own words (and the failing ``line``, ' (line N: `code`)'),
    where they name the cause; else ""."""
    optimizer = _positional_optimizer(line)
    if optimizer:
        return optimizer
    if "view size is not compatible with input tensor's size and stride" in text:
        return (
            "`.view` needs a tensor whose elements lie in order in memory; a slice such as "
            "get_batch's targets (`window[:, 1:]`) does not: flatten it with `.reshape(-1)` "
            "(or `.flatten()`), which copies when it must, or let the model compute the loss, "
            "`model(x, y)`."
        )
    if "stack expects a non-empty TensorList" in text or "expected a non-empty list of" in text:
        return (
            "your loop made no step, so there was no loss to stack: fixed_train(text, steps) "
            f"runs exactly `steps` optimizer steps (the check asks for {FIX_STEPS}), one "
            "loss each, like the script's `for step in range(steps):`."
        )
    if "'NoneType' object has no attribute" in text:
        parent = ".cpu_parent." in line
        return (
            "an event at the top of the profile (the loss read in the loop, a DataLoader's "
            "seed) has no parent: its `cpu_parent` is None. Check `is not None` before reading "
            "a parent's name, or walk up with `while event is not None:`."
            if parent
            else "a value on that line is None where an object was expected: check what "
            "returned None (a function without `return`, a missing parent or attribute) "
            "before using it."
        )
    if "does not require grad and does not have a grad_fn" in text:
        return (
            "the loss carries no autograd graph: the training forward pass ran under "
            "`torch.no_grad()` (or inference mode), or the loss was detached. Keep the forward "
            "and the loss outside `no_grad`; only autocast wraps them."
        )
    if "optimizer got an empty parameter list" in text:
        return (
            "the optimizer received no parameters. `model.parameters()` is a generator: once "
            "something has iterated over it (a count, a loop), it is empty. Pass "
            "`model.parameters()` afresh, or make a list of them once and use that list."
        )
    if "zero-dimensional tensor" in text and "cannot be concatenated" in text:
        return (
            "each step's loss is a 0-d tensor, which `torch.cat` cannot join: stack them, "
            "`torch.stack(losses).tolist()`."
        )
    if "'indices'" in text and "Long, Int" in text:  # an embedding given non-integer ids
        return (
            "token ids index the embedding and must stay integers (int64): leave x and y as "
            "they come and let `torch.autocast` choose the matmuls' dtype; cast nothing by hand."
        )
    return ""


# --- 1. the diagnosis ------------------------------------------------------------------------


@functools.cache
def _profile(kinds: frozenset[str]):
    """The stopped profiler of the script with ``kinds`` planted (one per check process)."""
    workers = LOADER_WORKERS if not kinds or kinds == EXTRA else 0
    return cp.profile(cp.script(kinds, "checker", workers).train, _steps(kinds), _text())


def _inside(event, words: str) -> bool:
    while event is not None:
        if words in event.name:
            return True
        event = event.cpu_parent
    return False


@functools.cache
def _evidence(kinds: frozenset[str]) -> dict[str, str]:
    """For each kind, one sentence on what the profile of ``kinds`` shows about it."""
    events = list(_profile(kinds).events())
    count = collections.Counter(e.name for e in events)
    steps = count["Optimizer.step#AdamW.step"] or _steps(kinds)
    top = [e for e in events if e.cpu_parent is None]
    total = sum(e.cpu_time_total for e in top) or 1.0
    loader = [e for e in events if "DataLoaderIter.__next__" in e.name]
    workers = [e for e in loader if "_MultiProcessingDataLoaderIter" in e.name]
    loader_share = sum(e.cpu_time_total for e in loader) / total
    items_out = sum(
        1 for e in events if e.name == "aten::item" and not _inside(e, "Optimizer.step")
    )
    items_in = count["aten::item"] - items_out
    # cp.profile gives every event input_dtypes, also on torch 2.10-2.11 (cp.add_input_dtypes)
    matmuls = [e for e in events if e.name in ("aten::addmm", "aten::mm") and e.input_dtypes]
    float_mm = sum(1 for e in matmuls if "float" in e.input_dtypes)
    bf16_mm = sum(1 for e in matmuls if "c10::BFloat16" in e.input_dtypes)
    embed = next(
        (
            e.input_shapes[1]
            for e in events
            if e.name == "aten::embedding"
            and len(e.input_shapes) > 1
            and len(e.input_shapes[1]) == 2
        ),
        [0, 0],
    )
    foreach = sum(v for k, v in count.items() if k.startswith("aten::_foreach"))
    addcdiv = count["aten::addcdiv_"]
    ln, ln_back = count["aten::native_layer_norm"], count["aten::native_layer_norm_backward"]
    present = {
        "loader": (
            "its profile has `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`, the "
            f"DataLoader fetching each batch in the training process itself: {len(loader)} "
            f"calls, {loader_share:.0%} of the run's CPU time in this profile; look at the share "
            "of time in DataLoader __next__ in `prof.key_averages()`."
        ),
        "host_sync": (
            f"outside `Optimizer.step`, `aten::item` runs {items_out} times in {steps} steps: "
            "the loss read back to the host every step. (The "
            f"{items_in} inside `Optimizer.step#AdamW.step` read the optimizer's step counter, "
            "kept on the CPU, and wait for nothing: walk up `event.cpu_parent` to tell them "
            "apart.)"
        ),
        "fp32": (
            f"its matmuls (`aten::addmm`, `aten::mm`) record `float` input dtypes, {float_mm} "
            f"of {len(matmuls)}: fp32 everywhere, no autocast (`event.input_dtypes`, recorded "
            "with record_shapes=True)."
        ),
        "small_batch": (
            f"the token ids, the second input of `aten::embedding` (`event.input_shapes[1]`; "
            f"the first is the embedding table), are {embed[0]} x {embed[1]}: {embed[0]} "
            f"windows, {embed[0] * embed[1]} tokens per step, far too few to keep a processor "
            "busy."
        ),
        "optimizer_loop": (
            "its optimizer step runs no `aten::_foreach_*` operation: inside "
            f"`Optimizer.step#AdamW.step`, `aten::addcdiv_` runs {addcdiv // steps} times per "
            "step, once per parameter tensor, in a Python loop."
        ),
        "recompute": (
            f"`aten::native_layer_norm` runs {ln} times but its backward only {ln_back}: "
            "forward work done twice, i.e. the blocks are recomputed during backward "
            "(activation checkpointing). Count an operator inside the blocks: the embeddings, "
            "the final norm and the head run outside them and are never recomputed."
        ),
    }
    absent = {
        "loader": (
            f"its DataLoader's batches come from worker processes "
            f"(`_MultiProcessingDataLoaderIter.__next__`, {len(workers)} calls), cut from a "
            "tensor tokenised once: nothing is tokenised in the training process (a "
            "DataLoader is not the problem; `_SingleProcessDataLoaderIter` is)."
            if workers
            else "this profile has no DataLoader `__next__` event: its batches are one gather "
            "(`aten::index`) from a tensor tokenised once."
        ),
        "host_sync": (
            f"outside `Optimizer.step`, `aten::item` runs {items_out} time(s) in {steps} steps, "
            "fewer than once per step (a DataLoader's shuffling draws one seed per epoch with "
            "it); the ones inside `Optimizer.step` read a CPU step counter."
        ),
        "fp32": (
            f"its matmuls record `c10::BFloat16` inputs ({bf16_mm} of {len(matmuls)}): the "
            "forward pass runs under bf16 autocast."
        ),
        "small_batch": (
            f"its `aten::embedding` input is {embed[0]} x {embed[1]} = {embed[0] * embed[1]} "
            "tokens per step, the batch the script means to train with."
        ),
        "optimizer_loop": (
            f"its optimizer step runs `aten::_foreach_*` operations ({foreach // steps} per "
            "step), each one call over the list of all parameters."
        ),
        "recompute": (
            f"`aten::native_layer_norm` runs as many times as its backward ({ln} and "
            f"{ln_back}): nothing is computed twice."
        ),
    }
    return {k: (present if k in kinds else absent)[k] for k in cp.KINDS}


def _names(exercise_id: str, value) -> tuple[frozenset[str] | None, CheckResult | None]:
    """The learner's returned names as a set, or the failure that explains the return value."""
    known = ", ".join(f'"{k}"' for k in cp.KINDS)
    if isinstance(value, (str, bytes)):
        return None, failed(
            exercise_id,
            f"Your diagnose returned one string, {str(value)[:60]!r}, not a set of names.",
            f'return a set such as {{"{cp.KINDS[0]}", "{cp.KINDS[2]}"}} (an empty set when '
            "the profile shows none).",
        )
    if isinstance(value, dict):
        value = [k for k, v in value.items() if v]
    if not isinstance(value, (set, frozenset, list, tuple)):
        return None, failed(
            exercise_id,
            f"Your diagnose returned {type(value).__name__}, not a set of names.",
            f"return the set of problem names the profile shows, out of {known}.",
        )
    odd = [v for v in value if not isinstance(v, str)]
    if odd:
        return None, failed(
            exercise_id,
            f"Your diagnose returned {type(odd[0]).__name__} values, not names.",
            f"each element is one of the names {known}.",
        )
    unknown = sorted({v for v in value if v not in cp.KINDS})
    if unknown:
        return None, failed(
            exercise_id,
            f"Your diagnose returned {', '.join(repr(u[:40]) for u in unknown[:3])}, which "
            "is not a name of a problem.",
            f"use exactly these names: {known}.",
        )
    return frozenset(value), None


def _run_diagnose(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    for number, kinds in enumerate((*SCRIPTS, EXTRA, EVERY), 1):
        value, problem = _call(exercise_id, answer, _profile(kinds))
        if problem is not None:
            return problem
        named, problem = _names(exercise_id, value)
        if problem is not None:
            return problem
        if named == kinds:
            continue
        evidence = _evidence(kinds)
        others = [k for k in SCRIPTS if k != kinds]
        value2, problem2 = _call(exercise_id, answer, _profile(others[0]))
        named2 = _names(exercise_id, value2)[0] if problem2 is None else None
        same = named2 == named
        missed = [k for k in cp.KINDS if k in kinds - named]
        wrong = [k for k in cp.KINDS if k in named - kinds]
        which = (
            f"script {number} of {len(SCRIPTS)}"
            if kinds not in (EXTRA, EVERY)
            else f"one more script, whose batches come from a DataLoader with {LOADER_WORKERS} "
            "workers"
            if kinds == EXTRA
            else "one more script, with all six problems planted at once"
        )
        what = (
            f"On {which} (profiled for {_steps(kinds)} steps), your diagnose returned "
            f"{_listed(named) or 'nothing'}."
        )
        hints = []
        if same:  # the two scripts share no problem: one answer cannot fit both
            what = (
                f"Your diagnose returned {_listed(named) or 'nothing'} for the profiles of two "
                "scripts which have no planted problem in common: its answer does not depend "
                f"on the profile it is given. On {which}:"
            )
            hints.append(
                "read every name from `prof`, the profile passed in (`prof.events()`, "
                "`prof.key_averages()`: counts, shapes, dtypes)."
            )
        if missed:
            what += f" It missed {_listed(missed)}."
            hints += [f'"{k}" is there: {evidence[k]}' for k in missed]
        if wrong:
            what += f" It named {_listed(wrong)}, which this profile contradicts."
            hints += [f'not "{k}": {evidence[k]}' for k in wrong]
        return failed(exercise_id, what, " ".join(hints))
    lines = [
        f"Your diagnose named exactly the planted problems of {len(SCRIPTS)} scripts that "
        "together have every kind once (and one sound script) (profiled in this check, not timed). What each profile "
        "showed:"
    ]
    for number, kinds in enumerate(SCRIPTS, 1):
        evidence = _evidence(kinds)
        lines += [f'- script {number}, "{k}": {evidence[k]}' for k in cp.KINDS if k in kinds]
    return passed(exercise_id, "\n".join(lines))


def _listed(names) -> str:
    return ", ".join(f'"{n}"' for n in sorted(names, key=cp.KINDS.index))


register(
    Exercise(
        id="capstone_profile_diagnose",
        chapter=CHAPTER,
        title="Profile first: name what the profile shows",
        signature="diagnose(prof: torch.profiler.profile) -> set of problem names out of "
        + ", ".join(cp.KINDS),
        launch=f"profiles of two scripts with complementary planted problems and a sound one, then "
        "of one with host_sync alone (its batches from a DataLoader's workers) and one with every "
        f"problem, {PROFILE_STEPS} steps each ({EVERY_STEPS} for the sound one and the last; "
        "gu.capstone_profile.profile)",
        run=functools.partial(_run_diagnose, "capstone_profile_diagnose"),
        kind="function",
        time_limit=DIAGNOSE_TIME_LIMIT,
    )
)


# --- 2. the fix ------------------------------------------------------------------------------


class _Enough(BaseException):
    """Raised from an optimizer step's hook once the evidence is in: ends the learner's run
    (a BaseException, so that the learner's `except Exception` does not swallow it)."""


class _Probes(_SyncCounter):
    """While active: host synchronisations (with the optimizer steps done at the time), model and
    block forwards, tokens per optimizer step, linear layers' output dtypes, optimizers stepped,
    and items tokenised in this process."""

    def __init__(self) -> None:
        super().__init__()
        self.synced: list[int] = []  # optimizer steps done when each synchronisation happened
        # (what synced, optimizer steps done, training forwards done) for each synchronisation
        self.sync_calls: list[tuple[str, int, int]] = []
        self.encoded = 0  # the corpus tokenised in this process after the first training forward
        self.targets: tuple[torch.Tensor, torch.Tensor] | None = None  # first model(x, y)
        self.steps = 0
        self.tokens: list[int] = []  # tokens seen by the model before each optimizer step
        self.forwards: list[int] = []  # tokens of each training forward pass
        self.pending = 0
        self.models = self.blocks = self.tokenised = self.recomputed = 0
        self.dtypes: collections.Counter = collections.Counter()
        self.optimizers: dict[int, torch.optim.Optimizer] = {}
        self.lrs: list[float] = []  # the first param group's lr at each optimizer step
        #: the loss each training model(x, y) returned (read after the run: reading it here
        #: would count as a host synchronisation)
        self.model_losses: list[torch.Tensor] = []
        #: the token ids and logits of each training forward of the model (for a loss computed
        #: outside the model), the first FIX_STEPS
        self.logits: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.first: dict[int, list[torch.Tensor]] = {}
        self.first_grads: dict[int, list[torch.Tensor | None]] = {}
        self.after_first: dict[int, list[torch.Tensor]] = {}
        self.model: torch.nn.Module | None = None  # the first gu.gpt GPT that trained
        self.batch: list[torch.Tensor] = []  # the token ids of this step's forwards so far
        self.batches: list[torch.Tensor] = []  # every optimizer step's token ids
        # gradients, per step from the second on: what .grad held when that step's backward
        # began, what its backward passes delivered, and what the optimizer step then used
        self.held: dict[int, torch.Tensor | None] = {}
        self.delivered: dict[int, torch.Tensor] = {}
        self.used: list[list[tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor]]] = []
        self.watched: list[torch.Tensor] = []
        self._pid = os.getpid()
        self._handles: list = []
        self._original = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if self.syncs(name, args, kwargs):
            self.synced.append(self.steps)
            self.sync_calls.append((name, self.steps, self.models))
        return func(*args, **(kwargs or {}))

    def _pre(self, module, args):
        # every forward pass of the model (model(x, y), or T.forward_checkpointed) embeds its
        # tokens once; a checkpointed block's (or model's) forward runs again during backward.
        # Forwards without grad (an evaluation under torch.no_grad()) train nothing: not counted.
        vocab = isinstance(module, torch.nn.Embedding) and module.num_embeddings == VOCAB
        if isinstance(module, gpt.GPT) and self.model is None and torch.is_grad_enabled():
            self.model = module
        if (
            isinstance(module, gpt.GPT)
            and self.targets is None
            and torch.is_grad_enabled()
            and not _in_backward()
            and len(args) > 1
            and isinstance(args[0], torch.Tensor)
            and isinstance(args[1], torch.Tensor)
            and args[0].shape == args[1].shape
        ):
            self.targets = (args[0].detach().clone(), args[1].detach().clone())
        if not (vocab or isinstance(module, gpt.Block)) or not torch.is_grad_enabled():
            return
        if _in_backward():
            self.recomputed += isinstance(module, gpt.Block)
        elif vocab and args and isinstance(args[0], torch.Tensor):
            self.models += 1
            self.pending += args[0].numel()
            self.forwards.append(args[0].numel())
            self.batch.append(args[0].detach().flatten().clone())
        elif not vocab:
            self.blocks += 1

    def _post(self, module, args, output):
        if isinstance(module, torch.nn.Linear) and isinstance(output, torch.Tensor):
            self.dtypes[output.dtype] += 1
        if (
            isinstance(module, gpt.GPT)
            and len(self.logits) < FIX_STEPS
            and torch.is_grad_enabled()
            and not _in_backward()
            and args
            and isinstance(args[0], torch.Tensor)
            and isinstance(output, (tuple, list))
            and isinstance(output[0], torch.Tensor)
        ):
            self.logits.append((args[0].detach().clone(), output[0].detach().float().clone()))
        if (
            isinstance(module, gpt.GPT)
            and torch.is_grad_enabled()
            and not _in_backward()
            and isinstance(output, (tuple, list))
            and len(output) > 1
            and isinstance(output[1], torch.Tensor)
            and output[1].numel() == 1
        ):
            self.model_losses.append(output[1].detach().clone())

    def _before_step(self, optimizer, args, kwargs):
        params = [p for g in optimizer.param_groups for p in g["params"]]
        if optimizer.param_groups:
            self.lrs.append(float(_setting(optimizer.param_groups[0].get("lr", math.nan))))
        if id(optimizer) not in self.first:  # the weights and gradients of the first update
            self.first[id(optimizer)] = [p.detach().clone() for p in params]
            self.first_grads[id(optimizer)] = [
                None if p.grad is None else p.grad.detach().clone() for p in params
            ]
        if self.watched:  # from the second step on: the gradients this step uses
            self.used.append(
                [
                    (self.held.get(id(p)), self.delivered.get(id(p)), p.grad.detach().clone())
                    for p in self.watched
                    if p.grad is not None
                ]
            )
        elif self.steps == 0:  # watch what each later backward delivers into .grad
            self.watched = [p for p in params if p.requires_grad]
            self._handles += [p.register_hook(self._delivered(p)) for p in self.watched]
        self.held, self.delivered = {}, {}

    def _delivered(self, param):
        def hook(grad):
            # a leaf's hook runs before its gradient is added into .grad
            key = id(param)
            if key not in self.delivered:
                self.held[key] = None if param.grad is None else param.grad.detach().clone()
                self.delivered[key] = grad.detach().clone()
            else:
                self.delivered[key] = self.delivered[key] + grad.detach()

        return hook

    def carried(self) -> tuple[int, float] | None:
        """The first optimizer step (from 1) whose gradients were the sum of its own batch's
        and those .grad still held from earlier steps, with how large the held part was
        against the step's own (norms); None when no step's was."""
        for index, params in enumerate(self.used, 2):
            held = own = 0.0
            summed = True
            for before, delivered, used in params:
                if before is None or delivered is None:
                    continue
                gap = float((used - (before + delivered)).norm())
                summed &= gap <= 1e-4 * float(used.norm()) + 1e-12
                held += float(before.norm()) ** 2
                own += float(delivered.norm()) ** 2
            if summed and held > 1e-6 * own and own > 0:
                return index, math.sqrt(held / own)
        return None

    def altered(self) -> tuple[int, float | None] | None:
        """The first optimizer step (from 2) whose gradients are not what its backward passes
        left in .grad, with the common factor between them when there is one (clipping by
        norm, a scale); None when every step used what backward left."""
        for index, params in enumerate(self.used, 2):
            pairs = [
                (used, delivered if before is None else before + delivered)
                for before, delivered, used in params
                if delivered is not None
            ]
            if not pairs:
                continue
            gap = math.sqrt(sum(float((u - d).norm()) ** 2 for u, d in pairs))
            size = math.sqrt(sum(float(d.norm()) ** 2 for _, d in pairs))
            if gap <= 1e-4 * size + 1e-12:
                continue
            c = sum(float((u * d).sum()) for u, d in pairs) / (size * size) if size else math.nan
            common = math.isfinite(c) and all(
                torch.allclose(u, c * d, rtol=1e-4, atol=1e-8) for u, d in pairs
            )
            return index, (c if common else None)
        return None

    def repeated(self) -> list[tuple[int, int]]:
        """(later step, earlier step) pairs, from 1, whose token batches are identical."""
        pairs = []
        for k, later in enumerate(self.batches):
            for j, earlier in enumerate(self.batches[:k]):
                if later.shape == earlier.shape and bool(torch.equal(later, earlier)):
                    pairs.append((k + 1, j + 1))
                    break
        return pairs

    def changed(self) -> float:
        """The largest change of any weight since the first optimizer step."""
        change = 0.0
        for key, before in self.first.items():
            after = [p for g in self.optimizers[key].param_groups for p in g["params"]]
            for a, b in zip(after, before, strict=False):
                change = max(change, float((a.detach().float() - b.float()).abs().max()))
        return change

    def update_error(self) -> tuple[float, torch.optim.Optimizer] | None:
        """The largest distance between a first update and the script's AdamW's from the same
        weights and gradients (a reference run here), with its optimizer; None if all agree."""
        worst = None
        for key, before in self.first.items():
            params = [torch.nn.Parameter(b.detach().clone().float()) for b in before]
            for p, g in zip(params, self.first_grads[key], strict=True):
                p.grad = None if g is None else g.detach().clone().float()
            reference = torch.optim.AdamW(
                params, lr=cp.LR, weight_decay=cp.WEIGHT_DECAY, foreach=False
            )
            reference.step()
            error = max(
                (
                    float((a.float() - r.detach()).abs().max())
                    for a, r in zip(self.after_first[key], params, strict=False)
                ),
                default=0.0,
            )
            if error > UPDATE_TOLERANCE and (worst is None or error > worst[0]):
                worst = (error, self.optimizers[key])
        return worst

    def _stepped(self, optimizer, args, kwargs):
        if id(optimizer) not in self.after_first:
            self.after_first[id(optimizer)] = [
                p.detach().clone() for g in optimizer.param_groups for p in g["params"]
            ]
        self.steps += 1
        self.batches.append(torch.cat(self.batch) if self.batch else torch.empty(0))
        self.batch = []
        batch = cp.BATCH * cp.SEQ_LEN
        if self.pending >= batch and self.forwards and min(self.forwards) < batch:
            # a full batch gathered from forwards too small to keep a processor busy: one
            # step shows it, and many small forwards can outrun the check's time
            self.tokens.append(self.pending)
            raise _Enough
        self.tokens.append(self.pending)
        self.pending = 0
        self.optimizers[id(optimizer)] = optimizer

    def __enter__(self):
        from torch.nn.modules import module as nn_module
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post),
            register_optimizer_step_pre_hook(self._before_step),
            register_optimizer_step_post_hook(self._stepped),
        ]
        self._original = original = training.SlowTokenizingDataset.__getitem__
        probes = self

        def counted(dataset, i):
            if os.getpid() == probes._pid:
                probes.tokenised += 1
            return original(dataset, i)

        training.SlowTokenizingDataset.__getitem__ = counted
        self._encode = encode = training.encode

        def encoding(text, *args, **kwargs):
            if (
                os.getpid() == probes._pid
                and probes.models > 0
                and isinstance(text, str)
                and len(text) >= len(_fix_text()) // 2
            ):
                probes.encoded += 1
            return encode(text, *args, **kwargs)

        training.encode = encoding
        return super().__enter__()

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        if self._original is not None:
            training.SlowTokenizingDataset.__getitem__ = self._original
        if getattr(self, "_encode", None) is not None:
            training.encode = self._encode
        return super().__exit__(*exc)


@functools.cache
def _script_model() -> tuple[int, tuple[tuple[int, ...], ...]]:
    """The script's model: its parameter count and its parameter tensors' shapes (sorted)."""
    return _size(cp.build_model().parameters())


@functools.cache
def _script_shapes() -> dict[str, tuple[int, ...]]:
    """The shape of each named parameter of the script's model."""
    return {n: tuple(p.shape) for n, p in cp.build_model().named_parameters()}


def _size(params) -> tuple[int, tuple[tuple[int, ...], ...]]:
    unique = {id(p): p for p in params}.values()  # a tied weight counts once
    return sum(p.numel() for p in unique), tuple(sorted(tuple(p.shape) for p in unique))


def _shape(shape: tuple[int, ...]) -> str:
    return " x ".join(map(str, shape)) if shape else "scalar"


def _model_problem(exercise_id: str, probes: _Probes) -> CheckResult | None:
    """The failure when the parameters the optimizers update are not the script's model's:
    another model (shapes compared with capstone_profile.build_model()'s) or part of it."""
    count, shapes = _script_model()
    params = [p for o in probes.optimizers.values() for g in o.param_groups for p in g["params"]]
    got, got_shapes = _size(params)
    if got_shapes == shapes:
        return None
    config = ", ".join(f"{k}={v}" for k, v in cp.MODEL.items())
    model = probes.model
    if model is not None and _size(model.parameters())[1] == shapes:
        trained = {id(p) for p in params}
        left = [n for n, p in model.named_parameters() if id(p) not in trained]
        return failed(
            exercise_id,
            f"Your model is the script's ({count:,} parameters), but your optimizer updates "
            f"{got:,} parameters in {len(got_shapes)} tensors"
            + (f", not {', '.join(left[:3])}" if left else "")
            + ".",
            "give the optimizer all of the model's parameters, "
            "`torch.optim.AdamW(model.parameters(), ...)`, as the script does.",
        )
    script = _script_shapes()
    named = [] if model is None else list(model.named_parameters())
    renamed = next(  # the first tensor of the same name with another shape
        (
            (n, tuple(p.shape), script[n])
            for n, p in named
            if n in script and tuple(p.shape) != script[n]
        ),
        None,
    )
    extra = [n for n, _ in named if n not in script]
    missing = [n for n in script if named and n not in dict(named)]
    if renamed is not None:
        name, yours, its = renamed
        differ = [f"your {name} is {_shape(yours)}, the script's {_shape(its)}"]
    elif extra or missing:  # tensors by name that one model has and the other lacks
        differ = [
            f"{whose} has {names[0]}"
            + (f" and {len(names) - 1} more tensors" if len(names) > 1 else "")
            + f" that {other} lacks"
            for whose, names, other in (
                ("yours", extra, "the script's"),
                ("the script's", missing, "yours"),
            )
            if names
        ]
    else:  # the largest tensor each has and the other lacks
        mine, theirs = collections.Counter(got_shapes), collections.Counter(shapes)
        extra, missing = list((mine - theirs).elements()), list((theirs - mine).elements())
        differ = []
        if extra:
            differ.append(f"yours has a {_shape(max(extra, key=math.prod))} tensor")
        if missing:
            differ.append(f"the script's has a {_shape(max(missing, key=math.prod))} one")
    seen = ""
    if model is not None and isinstance(getattr(model, "config", None), gpt.GPTConfig):
        seen = " (" + ", ".join(f"{k}={getattr(model.config, k)}" for k in cp.MODEL) + ")"
    return failed(
        exercise_id,
        f"Your optimizer trains a different model from the script's: {got:,} parameters in "
        f"{len(got_shapes)} tensors{seen}, where `capstone_profile.build_model()` has {count:,} "
        f"in {len(shapes)} ({config}); {' and '.join(differ)}.",
        "keep the script's model, `model = capstone_profile.build_model().to(device)`, and "
        "change only how the script runs.",
    )


def _losses(value) -> list[float] | None:
    if isinstance(value, torch.Tensor):
        value = value.detach().float().flatten().tolist()
    if not isinstance(value, (list, tuple)):
        return None
    try:
        return [float(v.detach()) if isinstance(v, torch.Tensor) else float(v) for v in value]
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return None


_SYNC_WORDS = {
    "__format__": "a tensor formatted (f-string or format() in a print)",
    "__str__": "a tensor printed (str)",
    "__repr__": "a tensor printed (repr)",
    "item": "`.item()`",
    "tolist": "`.tolist()`",
    "numpy": "`.numpy()`",
    "cpu": "`.cpu()`",
    "to": "a copy to the CPU (`.to('cpu')`)",
    "copy_": "a copy into a CPU tensor (`copy_`)",
    "__float__": "float() of a tensor",
    "__int__": "int() of a tensor",
    "__bool__": "`if` (bool) on a tensor",
    "__index__": "a tensor used as an index",
}


#: Window starts in the short text of :func:`_end_problem`, and the steps trained on it: one
#: step of 16 draws from 3 starts (one of them too far) misses the bad one with probability
#: (2/3)^16 = 0.15%; a batch of 32 draws, (2/3)^32.
SHORT_WINDOWS, SHORT_STEPS = 2, 1


def _short_text() -> str:
    """The start of the check's text, SEQ_LEN + SHORT_WINDOWS bytes (whole characters)."""
    kept, size = [], 0
    for ch in _fix_text():
        size += len(ch.encode("utf-8"))
        if size > cp.SEQ_LEN + SHORT_WINDOWS:
            break
        kept.append(ch)
    return "".join(kept)


def _end_problem(exercise_id: str, answer) -> CheckResult | None:
    """Train on a short text, where a window start drawn one too far (rare on the full text)
    is drawn almost surely: the failure when that reads past the end of the tokens. Only that
    error counts here; a loader that runs dry on so few windows is no fault of the answer."""
    text = _short_text()
    size = len(text.encode("utf-8"))
    try:
        answer(text, SHORT_STEPS)
    except (IndexError, RuntimeError) as error:
        words = str(error)
        past = re.search(r"index (\d+) is out of bounds for dimension 0 with size (\d+)", words)
        if not (
            (past and int(past.group(1)) >= size and int(past.group(2)) == size)
            or "stack expects each tensor to be equal size" in words
        ):
            return None
        seen, _ = _pyerrors.explain(error, answer) or ("", "")
        return failed(
            exercise_id,
            f"On a short text ({size} bytes, so {size - cp.SEQ_LEN} windows of SEQ_LEN + 1 "
            f"tokens: starts 0 to {size - cp.SEQ_LEN - 1}), train(text, {SHORT_STEPS}) raised "
            f"{type(error).__name__}{_pyerrors.where(error, answer)}: "
            f"{words.splitlines()[0].rstrip('.')}."
            + (f" {seen}" if seen else "")
            + " A window was cut past the end of the tokens. (On the long text such a start is "
            "rare, so the first run did not meet it.)",
            "a window holds x and its shifted y, SEQ_LEN + 1 tokens, so a start s needs "
            "s + SEQ_LEN < len(data): draw starts with `torch.randint(len(data) - SEQ_LEN, "
            "...)`, as `T.get_batch` does.",
        )
    except Exception:
        return None
    return None


def _first_step(answer) -> tuple[list[torch.Tensor] | None, torch.Tensor | None]:
    """One more call of ``answer``, stopped at its first optimizer step: the weights that step
    starts from (None when it took no step), and the tokens its training forwards embedded
    before that step, flattened (None when there were none)."""
    from torch.nn.modules.module import register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    seen: list[torch.Tensor] = []
    tokens: list[torch.Tensor] = []

    def before(optimizer, args, kwargs):
        seen.extend(p.detach().clone() for g in optimizer.param_groups for p in g["params"])
        raise _Enough

    def forward(module, args):  # the tokens embedded for training, as _Probes counts them
        if (
            isinstance(module, torch.nn.Embedding)
            and module.num_embeddings == VOCAB
            and torch.is_grad_enabled()
            and not _in_backward()
            and args
            and isinstance(args[0], torch.Tensor)
        ):
            tokens.append(args[0].detach().cpu().flatten().long())

    handles = [register_optimizer_step_pre_hook(before), register_module_forward_pre_hook(forward)]
    try:
        answer(_fix_text(), FIX_STEPS)
    except _Enough:
        pass
    except Exception:
        return None, None
    finally:
        for handle in handles:
            handle.remove()
    return seen or None, torch.cat(tokens) if tokens else None


def _target_problem(exercise_id: str, probes: _Probes) -> CheckResult | None:
    """The targets of the first ``model(x, y)`` against the next tokens of ``x``."""
    if probes.targets is None:
        return None
    x, y = probes.targets
    if x.dim() != 2 or x.shape[1] < 2:
        return None
    if bool(torch.equal(y[:, :-1], x[:, 1:])):
        text = _fix_text().encode("utf-8")  # the bytes training.encode makes tokens of
        width = x.shape[1]
        for row in range(x.shape[0]):  # the last target: the token after the window
            starts = _window_starts(text, x[row])
            if starts and all(
                s + width >= len(text) or text[s + width] != int(y[row, -1]) for s in starts
            ):
                rolled = bool(torch.equal(y[:, -1], x[:, 0]))
                what = (
                    "is its own first token (the window rolled round, `x.roll(-1)`)"
                    if rolled
                    else "is not the token that follows it in the text"
                )
                return failed(
                    exercise_id,
                    f"The targets your first `model(x, y)` was given are the next tokens except "
                    f"the last one of each window: in window {row}, the last target {what}.",
                    "cut x and y from one window of SEQ_LEN + 1 tokens, x = window[:-1] and "
                    "y = window[1:] (as `T.get_batch` does): y's last token is the one after "
                    "x's window in the text.",
                )
        return None
    agree = float((y[:, :-1] == x[:, 1:]).float().mean())
    if bool(torch.equal(y, x)):
        relation = "equal the inputs themselves (y = x)"
    elif bool(torch.equal(y[:, 1:], x[:, :-1])):
        relation = "are the previous tokens: y[t] = x[t - 1], the window shifted the wrong way"
    else:
        relation = f"are not the next tokens: y[t] = x[t + 1] at only {agree:.0%} of positions"
    return failed(
        exercise_id,
        f"The targets your first `model(x, y)` was given {relation}; the script's targets are "
        "the next tokens, the window shifted by one to the right.",
        "take targets from data[index + 1] (as `T.get_batch` does): y[:, t] is x[:, t + 1].",
    )


def _text_problem(exercise_id: str, probes: _Probes) -> CheckResult | None:
    """The windows of the first ``model(x, y)`` against the text train was given: their
    length, and whether they come from that text (or from the chapter's whole corpus)."""
    if probes.targets is None:
        return None
    x, _ = probes.targets
    if x.dim() != 2:
        return None
    if x.shape[1] != cp.SEQ_LEN:
        return failed(
            exercise_id,
            f"Your first `model(x, y)` got {x.shape[0]} windows of {x.shape[1]} tokens "
            f"({x.numel()} tokens); the script trains on windows of capstone_profile.SEQ_LEN = "
            f"{cp.SEQ_LEN} tokens ({cp.BATCH} of them, {cp.BATCH * cp.SEQ_LEN} tokens, per step)"
            + (
                (
                    f": position {cp.SEQ_LEN - 1} of the model's context never trains."
                    if x.shape[1] == cp.SEQ_LEN - 1
                    else f": positions {x.shape[1]} to {cp.SEQ_LEN - 1} of the model's context "
                    "never train."
                )
                if x.shape[1] < cp.SEQ_LEN
                else "."
            ),
            "change only how the script runs, not what it computes: windows of SEQ_LEN tokens, "
            "`T.get_batch(data, BATCH, SEQ_LEN, generator)` (batch size first, then the window's "
            "length).",
        )
    given = _fix_text().encode("utf-8")
    foreign = [row for row in x if not _window_starts(given, row)]
    whole = training.corpus().encode("utf-8")
    if foreign and all(_window_starts(whole, row) for row in foreign):
        return failed(
            exercise_id,
            f"{len(foreign)} of the {x.shape[0]} windows your first `model(x, y)` trained on are "
            "not in the text train(text, steps) was given (the check passes half of the "
            "chapter's corpus), and every one of them is in the chapter's whole corpus, "
            "`T.corpus()`.",
            "train on the `text` argument: `data = T.encode(text)`, not `T.corpus()`.",
        )
    if foreign:
        squeezed = " ".join(_fix_text().split()).encode("utf-8")
        changed = all(_window_starts(squeezed, row) for row in foreign)
        return failed(
            exercise_id,
            f"{len(foreign)} of the {x.shape[0]} windows your first `model(x, y)` trained on "
            "are not in `T.encode(text)`: their bytes do not occur in that order in the text "
            "train(text, steps) was given"
            + (
                ", and every one of them is in the text with its whitespace collapsed to single "
                "spaces (`' '.join(text.split())`)."
                if changed
                else " (the tokens were changed or reordered before the windows were cut)."
            ),
            "tokenise the text as it is, `data = T.encode(text)`, and cut each window from "
            "consecutive tokens of it (`T.get_batch`): the model learns to predict each byte "
            "from the bytes before it in the text.",
        )
    return None


def _first_windows(data: torch.Tensor, batch: int, seed: int) -> list[torch.Tensor]:
    """The first batch of windows the script's two ways of drawing give on ``data`` with a
    generator seeded ``seed``: get_batch, and a DataLoader shuffling the windows (the sound
    script with worker processes)."""
    x, _ = training.get_batch(data, batch, cp.SEQ_LEN, torch.Generator().manual_seed(seed))
    loader = torch.utils.data.DataLoader(
        training.WindowDataset(data, cp.SEQ_LEN),
        batch_size=batch,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )
    return [x, next(iter(loader))[0]]


#: The seeds tried when a first batch is matched with a draw from another part of the data.
SEEDS_TRIED = range(10)


def _code_point_problem(exercise_id: str, probes: _Probes) -> CheckResult | None:
    """Windows the fix trained on that are in its text tokenised by code point (`ord`) and not
    in its UTF-8 bytes (the check's text holds a character outside ASCII on every line)."""
    text = _fix_text()
    given, points = text.encode("utf-8"), text.encode("latin-1")  # every character < 256
    windows = [b.reshape(-1, cp.SEQ_LEN) for b in probes.batches if b.numel() % cp.SEQ_LEN == 0]
    rows = [row for w in windows for row in w]
    foreign = [row for row in rows if not _window_starts(given, row)]
    if foreign and all(_window_starts(points, row) for row in foreign):
        return failed(
            exercise_id,
            f"{len(foreign)} of the {len(rows)} windows your model trained on are not in "
            "`T.encode(text)`, and every one of them is in the text tokenised one character "
            "at a time, by code point (`ord`): the check's text ends each line with a "
            "character outside ASCII, ¶.",
            "tokenise as the script does, `T.encode(text)`: the tokens are the UTF-8 bytes of "
            "the text (¶ or é are two bytes each), not the characters' code points.",
        )
    return None


def _draw_problem(
    exercise_id: str, probes: _Probes, again: torch.Tensor | None
) -> CheckResult | None:
    """What the windows the fix trained on show about its draw: the script's draw from the
    training split only; a first step's tokens that change from one call to the next
    (``again``: those of a second call; a draw from torch's global random state)."""
    text = _fix_text()
    first = probes.targets[0].detach().cpu().long() if probes.targets is not None else None
    if first is None or first.dim() != 2:
        return None
    train, _ = training.split(training.encode(text))
    batch = first.shape[0]
    if any(
        torch.equal(first, w) for seed in SEEDS_TRIED for w in _first_windows(train, batch, seed)
    ):
        return failed(
            exercise_id,
            "The first windows your model trained on are the script's draw from the first 90% "
            "of the text's tokens only (the training part of `T.split`).",
            "draw the windows from all of the text, as the script does: `data = "
            "T.encode(text)`; a validation split is not part of this script.",
        )
    step_one = probes.batches[0].cpu().long() if probes.batches else None
    if (
        again is not None
        and step_one is not None
        and not (again.shape == step_one.shape and torch.equal(again, step_one))
    ):
        return failed(
            exercise_id,
            f"Called twice, your train(text, {FIX_STEPS}) trained its first step on other "
            "windows each time: its random draw is not seeded, so its losses change from run "
            "to run.",
            "keep the script's seeded draw: `generator = torch.Generator().manual_seed(0)` "
            "made once before the loop, and `T.get_batch(data, BATCH, SEQ_LEN, generator)` "
            "each step (without a generator, get_batch draws from torch's global random "
            "state).",
        )
    starts = [_window_starts(_fix_text().encode("utf-8"), row) for row in first]
    if batch > 2 and all(starts):
        firsts = [st[0] for st in starts]
        if all(b - a == 1 for a, b in itertools.pairwise(firsts)):
            return failed(
                exercise_id,
                f"The {batch} windows of your first step start at consecutive tokens, "
                f"{firsts[0]}, {firsts[1]}, {firsts[2]}, ...: they are taken in order from the "
                "text, not drawn at random.",
                "draw the windows with a seeded generator, as the script does: "
                "`T.get_batch(data, BATCH, SEQ_LEN, generator)`, or a DataLoader with "
                "`shuffle=True, generator=torch.Generator().manual_seed(0)`.",
            )
    return None


def _own_loss_problem(exercise_id: str, probes, losses: list[float]) -> CheckResult | None:
    """A loss computed outside the model (``model(x)``, then a cross-entropy of one's own)
    against the mean cross-entropy over every position of each step's windows, their targets
    read from the text (the next token of each window); only for steps of one forward each."""
    if len(probes.logits) != len(losses) or probes.steps != len(losses):
        return None
    text = _fix_text().encode("utf-8")
    data = training.encode(_fix_text())
    for step, ((x, logits), loss) in enumerate(zip(probes.logits, losses, strict=True), 1):
        if x.dim() != 2 or logits.dim() != 3 or x.shape[1] != cp.SEQ_LEN:
            return None
        starts = [_window_starts(text, row.long()) for row in x]
        if not all(starts) or any(st[0] + cp.SEQ_LEN >= len(data) for st in starts):
            return None
        y = torch.stack([data[st[0] + 1 : st[0] + 1 + cp.SEQ_LEN] for st in starts])
        full = float(F.cross_entropy(logits.flatten(0, 1), y.flatten()))
        # the same logits: an own cross-entropy in fp32 agrees far closer than this
        if math.isclose(loss, full, rel_tol=2e-3):
            continue
        last = float(F.cross_entropy(logits[:, -1], y[:, -1]))
        which = (
            " It is the cross-entropy of the last position of each window only (as when "
            "generating the next token)."
            if math.isclose(loss, last, rel_tol=2e-3)
            else ""
        )
        return failed(
            exercise_id,
            f"At step {step} you return the loss {loss:.4g}; the mean cross-entropy of that "
            "step's logits over every position of its windows (their targets, the next bytes of "
            f"the text) is {full:.4g}.{which}",
            "the script's loss is the mean over every token of the batch: `model(x, y)` returns "
            "it, or `F.cross_entropy(logits.flatten(0, 1), y.flatten())`.",
        )
    return None


def _returned_losses(
    exercise_id: str, losses: list[float], seen: list[float]
) -> CheckResult | None:
    """The losses returned against the loss each training ``model(x, y)`` returned, when they
    differ other than by one factor (told before this): a running average, a loss computed
    again after the step, ..."""
    if len(seen) != len(losses) or not all(math.isfinite(v) for v in losses):
        return None
    off = [
        i
        for i, (a, b) in enumerate(zip(losses, seen, strict=True))
        if not math.isclose(a, b, rel_tol=2e-3)
    ]
    if not off:
        return None
    i = off[0]
    what = (
        f"The losses you return are not the losses your training forwards computed: at step "
        f"{i + 1} you return {losses[i]:.4g}, and the `model(x, y)` that step back-propagated "
        f"returned {seen[i]:.4g}."
    )
    smooth = [seen[0]]
    for v in seen[1:]:
        smooth.append(smooth[-1] * 0.9 + v * 0.1)
    rounded = [
        str(dtype).removeprefix("torch.")
        for dtype in (torch.bfloat16, torch.float16)
        if all(float(torch.tensor(v).to(dtype)) == v for v in losses)
        and not all(float(torch.tensor(v).to(dtype)) == v for v in seen)
    ]
    if rounded and all(
        math.isclose(a, float(torch.tensor(b).to(getattr(torch, rounded[0]))), rel_tol=1e-6)
        for a, b in zip(losses, seen, strict=True)
    ):
        return failed(
            exercise_id,
            what + f" Every value you return is a {rounded[0]} number, the forward's loss "
            f"rounded to {rounded[0]} (8 significant bits for bfloat16, 11 for float16).",
            "keep each loss as its forward computed it, `loss.detach()` with no cast, and return "
            "those: the rounding is what moved them.",
        )
    if i > 0 and all(math.isclose(a, b, rel_tol=2e-3) for a, b in zip(losses, smooth, strict=True)):
        what += " They are a running average of those losses (0.9 x the previous + 0.1 x new)."
    elif all(a < b for a, b in zip(losses, seen, strict=True)):
        what += (
            " Every value you return is below it: a loss measured after the step (a second "
            "forward once the weights moved)?"
        )
    return failed(
        exercise_id,
        what,
        "return each step's own loss as its forward computed it: keep `loss.detach()` of the "
        "loss you call backward on, and return those, with no smoothing and no second forward.",
    )


def _setting(value):
    """An optimizer setting as a plain value (a tensor lr or betas as numbers)."""
    if isinstance(value, torch.Tensor):
        return value.item() if value.numel() == 1 else tuple(value.tolist())
    if isinstance(value, (tuple, list)):
        return tuple(_setting(v) for v in value)
    return value


def _window_starts(text: bytes, window: torch.Tensor) -> list[int]:
    """Where ``window`` (byte token ids) occurs in ``text``: at most a few places."""
    if window.min() < 0 or window.max() > 255:
        return []
    needle = bytes(window.tolist())
    starts, at = [], text.find(needle)
    while at >= 0 and len(starts) < 4:
        starts.append(at)
        at = text.find(needle, at + 1)
    return starts


def _run_fix(exercise_id: str, answer) -> CheckResult:
    if (problem := _not_callable(exercise_id, answer)) is not None:
        return problem
    probes = _Probes()
    stopped = False
    with probes:
        try:
            value, problem = _call(exercise_id, answer, _fix_text(), FIX_STEPS)
        except _Enough:
            value, problem, stopped = None, None, True
    if problem is not None:
        return problem
    if stopped:
        fewest = min(probes.forwards)
        return failed(
            exercise_id,
            f"A forward pass of your script saw only {fewest} tokens ({fewest // cp.SEQ_LEN} "
            f"windows of {cp.SEQ_LEN}), and {probes.tokens[0]} tokens reached the first "
            "optimizer step: each forward is far too small to keep a processor busy, "
            "however many are accumulated (the check stopped after that step).",
            f"run each forward pass on the script's batch, capstone_profile.BATCH = {cp.BATCH} "
            f"windows ({cp.BATCH * cp.SEQ_LEN} tokens), or more; accumulate micro-batches only "
            "where one such batch does not fit.",
        )
    if probes.steps == 0:
        return failed(
            exercise_id,
            f"train(text, {FIX_STEPS}) never called a torch.optim optimizer's step().",
            "keep the script's loop: forward, `loss.backward()`, `optimizer.step()`, "
            "`optimizer.zero_grad()`, once per step.",
        )
    if probes.steps != FIX_STEPS:
        return failed(
            exercise_id,
            f"train(text, {FIX_STEPS}) took {probes.steps} optimizer steps.",
            "take exactly one optimizer step per training step (`for step in range(steps)`).",
        )
    losses = _losses(value)
    if losses is None or len(losses) != FIX_STEPS:
        got = f"{len(losses)} numbers" if losses is not None else type(value).__name__
        return failed(
            exercise_id,
            f"train(text, {FIX_STEPS}) returned {got}; the script returns the loss of every step.",
            "return the losses as the script does: keep `loss.detach()` each step and "
            "`return torch.stack(losses).tolist()` after the loop.",
        )
    if (problem := _model_problem(exercise_id, probes)) is not None:
        return problem
    if (problem := _code_point_problem(exercise_id, probes)) is not None:
        return problem
    if (problem := _text_problem(exercise_id, probes)) is not None:
        return problem
    if (problem := _target_problem(exercise_id, probes)) is not None:
        return problem
    seen = [float(t.float()) for t in probes.model_losses]
    if (
        len(seen) == FIX_STEPS
        and all(v > 0 for v in seen)
        and all(math.isfinite(v) for v in losses)
    ):
        ratios = [mine / theirs for mine, theirs in zip(losses, seen, strict=True)]
        c = ratios[0]
        if abs(c - 1) > 1e-3 and all(math.isclose(r, c, rel_tol=1e-3) for r in ratios):
            named = {
                cp.BATCH: "BATCH",
                cp.SEQ_LEN: "SEQ_LEN",
                cp.BATCH * cp.SEQ_LEN: "BATCH x SEQ_LEN",
            }
            why = next(
                (
                    f" = 1/{k} ({w})"
                    for k, w in named.items()
                    if math.isclose(c * k, 1, rel_tol=1e-3)
                ),
                "",
            )
            return failed(
                exercise_id,
                f"The losses you return are {c:.4g}{why} times the mean cross-entropy your model's "
                f"forward returned at each step ({seen[0]:.4g} at the first): the loss was scaled "
                "after the model computed it, and its gradients with it.",
                "the model's loss is already the mean over every token of the batch: back-propagate "
                "and return it as it is.",
            )
    if (problem := _returned_losses(exercise_id, losses, seen)) is not None:
        return problem
    if not seen and (problem := _own_loss_problem(exercise_id, probes, losses)) is not None:
        return problem
    params = [p for o in probes.optimizers.values() for g in o.param_groups for p in g["params"]]
    cast = sorted({str(p.dtype).replace("torch.", "") for p in params} - {"float32"})
    if cast:
        return failed(
            exercise_id,
            f"Your model's weights are {', '.join(cast)}: the model itself was cast.",
            "keep the weights and the optimizer's state in fp32 and put only the forward pass "
            "under `torch.autocast(device.type, dtype=torch.bfloat16)`: a bf16 weight cannot take "
            "an update smaller than 1/256 of itself.",
        )
    if probes.dtypes[torch.float16]:
        return failed(
            exercise_id,
            "Your linear layers computed in float16.",
            "use bfloat16: it has fp32's range, so no loss scaling (GradScaler) is needed.",
        )
    if len(probes.optimizers) > 1:
        return failed(
            exercise_id,
            f"train(text, {FIX_STEPS}) stepped {len(probes.optimizers)} different optimizers "
            f"in {FIX_STEPS} steps: a new one was made inside the loop.",
            "make the optimizer once, before the loop, as the script does: AdamW keeps running "
            "averages of each gradient and of its square, and a new one starts them from zero, "
            "so every step would be a first step.",
        )
    found: list[tuple[str, str]] = []  # (what is still there, hint)
    if probes.tokenised:
        found.append(
            (
                f"{probes.tokenised} windows were tokenised in Python in the training process "
                f"during training ({probes.tokenised / FIX_STEPS:.0f} per step)",
                "tokenise the text once, before the loop (`data = T.encode(text)`), and cut "
                "each batch out of it with `T.get_batch(...)`; or leave the tokenising to "
                "DataLoader worker processes (`num_workers`).",
            )
        )
    if probes.encoded:
        found.append(
            (
                f"the whole text was tokenised again {probes.encoded} time(s) after the first "
                f"training step began (`T.encode(text)` inside the loop, {FIX_STEPS} steps)",
                "encode the text a single time, before the loop (`data = T.encode(text)`), and "
                "cut each step's batch out of that tensor.",
            )
        )
    # inside the loop: after the first training forward pass and before the last step's end
    loop_syncs = [n for n, s, m in probes.sync_calls if s < FIX_STEPS and (s > 0 or m > 0)]
    inside = len(loop_syncs)
    if inside > SYNCS_ALLOWED:
        names = collections.Counter(loop_syncs)
        read = ", ".join(f"{_SYNC_WORDS.get(n, n)} x{c}" for n, c in names.most_common())
        found.append(
            (
                f"the host waited for the device {inside} time{'' if inside == 1 else 's'} inside the loop of {FIX_STEPS} "
                f"steps, reading a tensor's value back: {read}",
                "keep `loss.detach()` in a list and read the losses once, after the loop (no "
                "print, f-string, `.item()`, float() or `if` on a tensor inside it, not even "
                "every few steps).",
            )
        )
    if not probes.dtypes[torch.bfloat16]:
        found.append(
            (
                "every linear layer computed in fp32: the forward pass ran without autocast",
                "wrap the forward pass (and the loss) in `with torch.autocast(device.type, "
                "dtype=torch.bfloat16):`; backward and the optimizer step stay outside it.",
            )
        )
    fewest = min(probes.tokens)
    if fewest < cp.BATCH * cp.SEQ_LEN:
        found.append(
            (
                f"an optimizer step saw only {fewest} tokens ({fewest // cp.SEQ_LEN} windows of "
                f"{cp.SEQ_LEN})",
                f"train with the script's batch, capstone_profile.BATCH = {cp.BATCH} windows "
                f"({cp.BATCH * cp.SEQ_LEN} tokens per step), or more, in each forward pass.",
            )
        )
    loops = [
        o
        for o in probes.optimizers.values()
        if not (o.defaults.get("foreach") or o.defaults.get("fused"))
    ]
    if loops:
        found.append(
            (
                f"the optimizer ({type(loops[0]).__name__}) steps one parameter at a time "
                f"(foreach={loops[0].defaults.get('foreach')})",
                "ask for the multi-tensor path, `foreach=True`, or the fused kernel, "
                "`fused=True` (on a CPU, foreach=None also means the per-parameter loop).",
            )
        )
    singles = [
        o
        for o in probes.optimizers.values()
        if o not in loops
        and len(o.param_groups) > 1
        and all(len(g["params"]) == 1 for g in o.param_groups)
    ]
    if singles:
        found.append(
            (
                f"the optimizer has {len(singles[0].param_groups)} parameter groups of one "
                "tensor each: foreach and fused run group by group, so its step still goes one "
                "parameter at a time",
                "give the optimizer the parameters as one group, "
                "`torch.optim.AdamW(model.parameters(), ..., foreach=True)`.",
            )
        )
    per_model = probes.blocks / max(probes.models, 1)
    layers = cp.MODEL["n_layers"]
    if probes.recomputed:
        found.append(
            (
                f"{probes.recomputed} block forward passes ran again during backward, "
                f"{probes.recomputed / FIX_STEPS:g} per step: the blocks are recomputed during "
                "backward (activation checkpointing)",
                "call `model(x, y)` itself, without `torch.utils.checkpoint` or "
                "`T.forward_checkpointed`: checkpointing trades compute for memory, and this "
                "model's activations fit easily.",
            )
        )
    elif per_model > layers:
        found.append(
            (
                f"each block ran its forward pass {per_model:g} times per model forward "
                f"({layers} layers): the blocks are recomputed during backward",
                "call `model(x, y)` itself rather than `T.forward_checkpointed`: checkpointing "
                "trades compute for memory, and this model's activations fit easily.",
            )
        )
    if found:
        return failed(
            exercise_id,
            f"Your script still has {len(found)} problem(s): "
            + "; ".join(f"({i}) {w}" for i, (w, _) in enumerate(found, 1))
            + ".",
            " ".join(f"({i}) {h}" for i, (_, h) in enumerate(found, 1)),
        )
    change = probes.changed()
    grads = [g for key in probes.first_grads for g in probes.first_grads[key]]
    trained = {id(p) for p in params}
    ran = probes.model
    if ran is not None and not any(id(p) in trained for p in ran.parameters()):
        return failed(
            exercise_id,
            "The model whose forward pass ran is not the one your optimizer updates: none of "
            "its parameters is in the optimizer, so no gradient reached the weights being "
            "stepped.",
            "build the model once, before the optimizer and the loop, and give that model's "
            "parameters to the optimizer (`torch.optim.AdamW(model.parameters(), ...)`); a "
            "model built again (inside the loop, or after the optimizer) is not trained.",
        )
    if change == 0.0 and all(g is None or not bool(g.any()) for g in grads):
        return failed(
            exercise_id,
            f"The optimizer took {FIX_STEPS} steps but no weight changed: when its first "
            "`step()` ran, every gradient was empty (None or zero).",
            "keep the order forward, `loss.backward()`, `optimizer.step()`, and clear the "
            "gradients (`optimizer.zero_grad()`) only after the step or before the forward: "
            "a zero_grad between backward and step throws this step's gradients away.",
        )
    if change == 0.0:
        return failed(
            exercise_id,
            f"The optimizer took {FIX_STEPS} steps but no weight changed: the script no longer "
            "learns.",
            "change only how the script runs, not what it computes: the same model, AdamW with "
            "lr=capstone_profile.LR, backward and step every step.",
        )
    carried = probes.carried()
    if carried is not None:
        step, size = carried
        return failed(
            exercise_id,
            f"At optimizer step {step}, the gradients the step used were its own batch's plus "
            f"what .grad still held from the steps before ({size:.2g} times as large as the "
            "step's own): the gradients are not cleared between steps, so a step follows the "
            "sum of its own batch's gradients and earlier batches'.",
            "clear the gradients once per step, inside the loop: `optimizer.zero_grad()` "
            "after `optimizer.step()` (or before the forward pass).",
        )
    altered = probes.altered()
    if altered is not None:
        step, factor = altered
        power = None if factor is None or factor <= 0 else math.log2(factor)
        # the factor is a fit good to about 1e-4 (the tolerance it was accepted with)
        if power is not None and power < -1 and abs(power - round(power)) < 2e-4:
            # 1 / 2^k exactly: a loss scale undone before the step (GradScaler starts at 2^16)
            how = (
                f"all divided by {2 ** -round(power):.0f} = 2^{-round(power)} exactly: the loss "
                "was multiplied by a power-of-two scale before `backward()` and the gradients "
                "unscaled before the step, as `torch.amp.GradScaler` does (it starts at 2^16). "
                "Loss scaling is for float16; bf16 has fp32's range and needs none, and the "
                "scaler reads its inf check back to the host at every step"
            )
        elif factor is not None:
            how = (
                f"all scaled by one common factor, {factor:.3g} (what clipping by norm does, "
                "`clip_grad_norm_`)"
            )
        else:
            how = "changed by something other than one common factor (clipping by value?)"
        return failed(
            exercise_id,
            f"At optimizer step {step}, the gradients the step used are not those its "
            f"`backward()` left in .grad: {how}. The script steps with the gradients as "
            "backward computes them.",
            "change only how the script runs, not what it computes: nothing between "
            "`loss.backward()` and `optimizer.step()` (no clipping or scaling the script does "
            "not do).",
        )
    repeats = probes.repeated()
    if repeats:
        later, earlier = repeats[0]
        same = (
            f"all {FIX_STEPS} optimizer steps trained on the same token batch"
            if len(repeats) == FIX_STEPS - 1 and all(e == 1 for _, e in repeats)
            else f"step {later} trained on exactly the tokens of step {earlier}"
        )
        return failed(
            exercise_id,
            f"The windows your model trained on repeat: {same}, so it sees the same windows "
            "again instead of new text.",
            "draw a new batch every step from one generator seeded once, before the loop "
            "(re-creating or re-seeding it inside the loop, or reusing one batch, repeats the "
            "windows).",
        )
    script = dict(
        lr=cp.LR,
        weight_decay=cp.WEIGHT_DECAY,
        betas=(0.9, 0.999),
        eps=1e-8,
        amsgrad=False,
        maximize=False,
    )
    for optimizer in probes.optimizers.values():
        if not isinstance(optimizer, torch.optim.AdamW):
            continue
        for group in optimizer.param_groups:
            if "initial_lr" in group:  # set by every torch.optim.lr_scheduler
                lrs = ", ".join(f"{lr:.3g}" for lr in probes.lrs)
                return failed(
                    exercise_id,
                    "A learning-rate scheduler drives your AdamW (its param groups carry the "
                    f"`initial_lr` that `torch.optim.lr_scheduler` sets): its lr at the "
                    f"{len(probes.lrs)} steps was {lrs}; the script keeps lr = "
                    f"capstone_profile.LR = {cp.LR:g} at every step.",
                    "keep what the script computes and change only how it runs: no scheduler "
                    "(no warm-up or decay the script does not have), AdamW with "
                    "lr=capstone_profile.LR, and `foreach=True` or `fused=True`.",
                )
            changed = [(k, group.get(k), v) for k, v in script.items() if k in group]
            changed = [(k, now, v) for k, now, v in changed if _setting(now) != _setting(v)]
            if changed:
                key, now, value = changed[0]
                return failed(
                    exercise_id,
                    f"Your AdamW's {key} is {_setting(now)}; the script's is {_setting(value)}: "
                    "the same optimizer with another setting learns other weights"
                    + (
                        " (the first step does not show it: Adam's first update does not depend "
                        "on its betas)."
                        if key == "betas"
                        else "."
                    ),
                    "keep what the script computes and change only how it runs: AdamW with "
                    f"lr=capstone_profile.LR, weight_decay={cp.WEIGHT_DECAY}, its other "
                    "settings at their defaults, and `foreach=True` or `fused=True`.",
                )
    wrong_update = probes.update_error()
    if wrong_update is not None:
        error, optimizer = wrong_update
        kind = type(optimizer).__name__  # an AdamW's settings were compared above
        hint = {
            "SGD": "SGD moves each weight by lr x gradient; AdamW divides by the gradient's "
            "running size and decays the weights apart from it. ",
            "Adam": "Adam's weight_decay is added to the gradient (L2 regularisation) and then "
            "scaled with it; AdamW subtracts lr x weight_decay x weight apart from it. ",
        }.get(kind, "")
        return failed(
            exercise_id,
            f"Your optimizer ({kind}) moved the weights, in its first step, up to {error:.1e} "
            "away from where the script's AdamW moves them from the same weights and "
            "gradients (a reference step taken here; AdamW's own code paths agree to "
            f"{UPDATE_TOLERANCE:g}).",
            hint + "Keep the script's optimizer, `torch.optim.AdamW(model.parameters(), "
            f"lr=capstone_profile.LR, weight_decay={cp.WEIGHT_DECAY})`, and change only how it "
            "runs: `foreach=True` or `fused=True`.",
        )
    if not all(math.isfinite(v) for v in losses) or sum(losses[-2:]) / 2 >= losses[0]:
        return failed(
            exercise_id,
            f"Your losses went {losses[0]:.3f} -> {losses[-1]:.3f} in {FIX_STEPS} steps: the "
            "script no longer learns.",
            "change only how the script runs, not what it computes: the same model, AdamW with "
            "lr=capstone_profile.LR, backward and step every step.",
        )
    # the weights the first call left, against those a second call's first step starts from
    left = [
        p.detach().clone()
        for o in probes.optimizers.values()
        for g in o.param_groups
        for p in g["params"]
    ]
    first = [w for key in probes.first for w in probes.first[key]]
    again, again_tokens = _first_step(answer)
    if (
        again is not None
        and len(again) == len(left) == len(first)
        and all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(again, left, strict=True))
    ):
        moved = max(
            float((a.float() - b.float()).abs().max()) for a, b in zip(left, first, strict=True)
        )
        return failed(
            exercise_id,
            f"Called a second time, your train(text, {FIX_STEPS}) started from exactly the "
            f"weights the first call left (up to {moved:.2g} away from where the first call "
            "started): it continues training the same model, i.e. the model (and optimizer) "
            "are made once outside the function.",
            "build the model with `capstone_profile.build_model()` and its AdamW inside "
            "train(), so every call starts from the same fresh weights.",
        )
    if (problem := _draw_problem(exercise_id, probes, again_tokens)) is not None:
        return problem
    if (problem := _end_problem(exercise_id, answer)) is not None:
        return problem
    return passed(
        exercise_id,
        f"Measured while your train(text, {FIX_STEPS}) ran (counts, not timings): 0 windows "
        f"tokenised in the training process; {inside} host synchronisation(s) inside the loop; "
        f"linear layers in bf16 ({probes.dtypes[torch.bfloat16]} outputs); at least {fewest} "
        f"tokens per optimizer step; "
        + ", ".join(
            f"{type(o).__name__} " + ("fused" if o.defaults.get("fused") else "foreach")
            for o in probes.optimizers.values()
        )
        + f"; {per_model:g} block forwards per model forward ({layers} layers); loss "
        f"{losses[0]:.3f} -> {losses[-1]:.3f}. Speed is not judged here: on a shared CPU the "
        "same fix measures anywhere from slower to several times faster from run to run.",
    )


register(
    Exercise(
        id="capstone_profile_fix",
        chapter=CHAPTER,
        title="Profile first: fix what the profile showed",
        signature="train(text, steps) -> the loss of every step (a list of floats)",
        launch=f"train(corpus, {FIX_STEPS}) once, with probes counting what each problem leaves "
        "behind; no timing",
        run=functools.partial(_run_fix, "capstone_profile_fix"),
        kind="function",
        time_limit=FIX_TIME_LIMIT,
    )
)
