"""The planner lab of chapter 10: plan one training job by hand and hold it against
``gu.parallelism``.

The job (:data:`JOB`): Llama 3 70B on 256 H100s (32 nodes of 8), 2,097,152 tokens per step
(256 sequences of 8,192), the planner's defaults (MFU 0.5, fused attention, sequence
parallelism with tensor parallelism, 90% of HBM usable). Each layout is judged under its own
framework's behaviour (:func:`framework`): Megatron-LM's defaults, where nothing hides
communication, and PyTorch FSDP's for ZeRO-3 (one gather per block, overlapped); the planner's
best is the fastest under Megatron-LM's defaults.
Four exercises:

* ``planner_layout_fits``: a layout (dp, tp, pp, ZeRO stage, micro-batch size, recompute,
  interleave) that the lab's rules allow, that fits, and whose step is within
  :data:`FACTOR` of the planner's best; each broken rule has its own message.
* ``planner_memory_prediction`` and ``planner_step_time``: a function of a layout that predicts
  the planner's memory per GPU (GiB) or step time (s); the checker calls it on a panel of
  layouts and, when it is off, gathers evidence as data (:class:`Evidence`): it calls it again
  on probes that change one setting at a time (ZeRO stage, micro-batch, recompute, tp, pp,
  interleave) and looks for the relation to the planner's figure that reproduces the answer on
  every layout: one term of the planner's (weights, gradients, optimizer states, activations,
  gathered layers; compute, bubble, each communication) taken a constant or a layout's
  quantity (tp x pp, dp, m, the micro-batches in flight, 1 - bubble...) times, or two terms'
  constant factors together. A cause is named only when one relation explains every layout
  (and moves each figure as the answer does); otherwise the hint says which set of layouts
  alone is off (:data:`LAYOUT_SETS`: pp = 1, ZeRO-2, tp x pp > 8...) or which setting the
  answer responds to unlike the planner's. A function that raises is told the set of layouts it
  raises on and the course function's argument it gave 0 or less. An answer
  that calls ``gu.parallelism.evaluate`` or ``plan``, looks the planner's list up or copies its
  figures is told to predict instead; one within the tolerance that a known mistake reproduces
  far more closely than the planner's figure is that mistake.
* ``planner_defend``: the learner's own layout with their predictions for it, what bounds its
  step, how much slower it is than the planner's best and the main term of the difference.

The expected values and their terms are ``gu.parallelism.evaluate``'s
(``Layout.memory_breakdown``, ``Layout.step_parts``); the quantities a mistaken term is scaled
by come from ``gu.memory``, ``gu.flops`` and ``gu.parallelism.in_flight_chunks``.
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import statistics
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..facts import specs
from ..many_gpus import collectives, flops, memory, parallelism, pipeline
from . import _pyerrors
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

#: Its own progress row beside "10_model_parallel": lab 10's corpus tests count every code
#: exercise of that chapter (tests/answer_tables.py, dist_table_tests); these are tested in
#: tests/test_exercises_ch10_planner.py.
CHAPTER = "10_planner"
GIB = 2**30
MODEL_NAME = "Llama 3 70B"
#: The lab's job: gu.parallelism.MODELS["Llama 3 70B"] on 32 nodes of 8 H100s, 2**21 tokens.
JOB = {
    "model": MODEL_NAME,
    "gpu": "H100-SXM",
    "gpus_per_node": 8,
    "nodes": 32,
    "global_batch_tokens": 2**21,
}
#: A chosen layout may take at most this many times the planner's best step time.
FACTOR = 1.2
#: Tolerances of the predictions (relative): memory is a sum of exact formulas; the step time
#: also holds latencies and buckets that a bandwidth-only estimate leaves out (a few percent).
MEMORY_TOL = 0.05
STEP_TOL = 0.10
RATIO_TOL = 0.12
KEYS = ("dp", "tp", "pp", "zero_stage", "micro_batch_size", "recompute", "interleave")
BOUNDS = ("compute", "NVLink", "network")
PARTS = ("compute", "bubble", "tensor-parallel", "pipeline", "data-parallel")
#: Megatron-LM's rules for equal stages (megatron/training/arguments.py, validate_args): "number
#: of layers of the model must be divisible [by] pipeline model parallel size" and "number of
#: layers per pipeline stage must be divisible [by the] number of layers per virtual pipeline
#: stage".
MEGATRON_RULES = "Megatron-LM, megatron/training/arguments.py (validate_args)"


def model() -> parallelism.Model:
    return parallelism.MODELS[MODEL_NAME]


def cluster() -> parallelism.Cluster:
    return parallelism.Cluster(JOB["gpu"], JOB["gpus_per_node"], JOB["nodes"])


def sequences() -> int:
    return JOB["global_batch_tokens"] // model().seq_len


def framework(layout: dict) -> dict:
    """The options of the framework that runs ``layout``, to judge it by that framework's own
    behaviour: ZeRO-3 without a pipeline is PyTorch FSDP (``parallelism.FSDP``: one gather per
    transformer block, prefetched to overlap compute); every other layout is Megatron-LM's, the
    planner's defaults (nothing hides communication)."""
    if layout.get("zero_stage") == 3 and layout.get("pp") == 1 and layout.get("dp", 1) > 1:
        return dict(parallelism.FSDP)
    return {}


def _judged_as(layout: dict) -> str:
    """', as PyTorch FSDP runs it (...)' for a layout judged under FSDP's behaviour, else ''."""
    if not framework(layout):
        return ""
    return ", as PyTorch FSDP runs it (one gather per block, overlapped with compute)"


def evaluate(layout: dict, **options) -> parallelism.Layout:
    """The planner's figures for a layout of the lab's job, under its framework's behaviour
    (:func:`framework`); ``options`` go to ``gu.parallelism.evaluate`` (``latency=False``)."""
    return parallelism.evaluate(
        model(), cluster(), JOB["global_batch_tokens"], **layout, **framework(layout), **options
    )


def short(layout: dict) -> str:
    """'DP 16 x TP 4 x PP 4, ZeRO-1, micro-batch 1, recompute none, v = 4'."""
    text = (
        f"DP {layout['dp']} x TP {layout['tp']} x PP {layout['pp']}, ZeRO-{layout['zero_stage']}, "
        f"micro-batch {layout['micro_batch_size']}, recompute {layout['recompute']}"
    )
    return text + (f", v = {layout['interleave']}" if layout["interleave"] > 1 else "")


def follows_rules(x) -> bool:
    """Whether a planner Layout (or a layout dict) keeps the lab's rules: TP inside a node, equal
    stages and equal interleaved chunks (the planner itself also lists uneven ones)."""
    get = x.get if isinstance(x, dict) else lambda k, d=None: getattr(x, k, d)
    layers, tp, pp, v = model().layers, get("tp"), get("pp"), get("interleave", 1)
    return tp <= JOB["gpus_per_node"] and layers % pp == 0 and (layers // pp) % v == 0


def _as_dict(x: parallelism.Layout) -> dict:
    return {k: getattr(x, k) for k in KEYS}


def planner_best() -> parallelism.Layout:
    """The fastest fitting layout of ``gu.parallelism.plan`` that keeps the lab's rules."""
    ranked = parallelism.plan(model(), cluster(), JOB["global_batch_tokens"])
    return next(x for x in ranked if x.fits and follows_rules(x))


# --- reading a layout -----------------------------------------------------------------------


def _integer(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


def _shown(value) -> str:
    try:
        text = repr(value)
    except Exception:
        text = "a value"
    return text if len(text) <= 60 else text[:57] + "..."


EXAMPLE = (
    'return dict(dp=..., tp=..., pp=..., zero_stage=..., micro_batch_size=..., recompute="none", '
    "interleave=1)"
)


def read_layout(value) -> tuple[dict | None, tuple[str, str] | None]:
    """A layout dict with the seven keys, or (what is wrong, hint). Accepts a dict or an object
    with those attributes (a ``gu.parallelism.Layout``)."""
    if not isinstance(value, dict):
        if all(hasattr(value, k) for k in KEYS):
            value = {k: getattr(value, k) for k in KEYS}
        else:
            wrapped = (
                isinstance(value, tuple | list)
                and len(value) == 1
                and (isinstance(value[0], dict) or all(hasattr(value[0], k) for k in KEYS))
            )
            return None, (
                f"Expected a layout, a dict with the keys {', '.join(KEYS)}; got "
                f"{_shown(value)} ({type(value).__name__}"
                + (", holding one layout" if wrapped else "")
                + ").",
                (
                    "return the layout itself, not inside a one-item "
                    f"{type(value).__name__}: a comma after it (`return dict(...),`) makes a "
                    "tuple, and brackets a list."
                    if wrapped
                    else EXAMPLE + "."
                ),
            )
    unknown = [k for k in value if k not in KEYS]
    missing = [k for k in KEYS if k not in value]
    if unknown:
        name = str(unknown[0])
        # a misspelt key: one of the keys the layout lacks, spelt nearly so
        near = difflib.get_close_matches(name, missing, n=1, cutoff=0.5)
        note = f" Did you mean {near[0]}?" if near else ""
        if missing:
            note += f" It has no {', '.join(missing)}."
        if "micro" in name and not near:
            note = (
                " The number of micro-batches is not a choice of its own: it follows from the "
                "batch, dp and micro_batch_size."
            )
        return None, (
            f"Your layout has a key this lab does not know: {_shown(name)}.{note}",
            f"use exactly the seven keys {', '.join(KEYS)}.",
        )
    if missing:
        note = ""
        if missing == ["interleave"]:
            note = " (the virtual stages per GPU: 1 for none, also without a pipeline)"
        return None, (
            f"Your layout has no {', '.join(missing)}{note}.",
            f"a layout is a dict with all seven keys: {', '.join(KEYS)}.",
        )
    layout = {}
    for key in KEYS:
        if key == "recompute":
            if value[key] not in parallelism.RECOMPUTE:
                return None, (
                    f"recompute is {_shown(value[key])}.",
                    'recompute is one of "none", "selective" or "full".',
                )
            layout[key] = value[key]
            continue
        number = _integer(value[key])
        if number is None or number < (0 if key == "zero_stage" else 1):
            return None, (
                f"{key} is {_shown(value[key])}.",
                f"{key} is a whole number"
                + (" from 0 to 3." if key == "zero_stage" else ", at least 1."),
            )
        layout[key] = number
    if layout["zero_stage"] > 3:
        return None, (f"zero_stage is {layout['zero_stage']}.", "ZeRO has stages 0, 1, 2 and 3.")
    return layout, None


RULE_HINTS = {
    "gpus": "dp x tp x pp must use every GPU of the cluster exactly once.",
    "tp_node": (
        "tensor parallelism all-reduces activations four times per layer on the critical path, "
        "so it stays inside a node's NVLink (t <= 8 here): split further with pp or dp."
    ),
    "tp_heads": "t must divide the 64 heads (each GPU computes whole heads).",
    "pp_layers": (
        "every stage gets the same number of layers, so p must divide the 80 layers "
        f"({MEGATRON_RULES}): take p among 1, 2, 4, 8, 16."
    ),
    "v_layers": (
        "with interleaving each GPU's L/p layers are cut into v equal chunks, so v must divide "
        f"80/p ({MEGATRON_RULES})."
    ),
    "v_no_pipeline": "interleaving splits pipeline stages: it needs pp > 1 (else use 1).",
    "batch": (
        "each data-parallel rank needs a whole number of micro-batches: dp x micro_batch_size "
        "must divide the 256 sequences of the batch."
    ),
    "v_micro": (
        "the interleaved schedule needs the micro-batches per rank, m = 256/(dp x b), to be a "
        "multiple of p (Megatron-LM's schedule; gu.pipeline.interleaved refuses it too)."
    ),
    "zero3_pp": (
        "ZeRO-3 gathers every layer's parameters for every micro-batch of every stage; "
        "DeepSpeed refuses ZeRO-3 with pipeline parallelism: use ZeRO-1 or 2 with pp > 1, or "
        "pp = 1 with ZeRO-3."
    ),
}


def rule_broken(layout: dict) -> tuple[str, str] | None:
    """The first of the lab's rules the layout breaks, as (what, kind), or None."""
    m_, c = model(), cluster()
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    if dp * tp * pp != c.n_gpus:
        return f"dp x tp x pp = {dp * tp * pp}, but the cluster has {c.n_gpus} GPUs.", "gpus"
    if tp > c.gpus_per_node:
        return (
            f"tp = {tp} spans {tp // c.gpus_per_node} nodes: its all-reduces would cross the "
            "network.",
            "tp_node",
        )
    if m_.heads % tp or m_.hidden % tp:
        return f"tp = {tp} does not divide the {m_.heads} heads.", "tp_heads"
    if m_.layers % pp:
        return f"pp = {pp} does not divide the {m_.layers} layers.", "pp_layers"
    if v > 1 and pp == 1:
        return f"interleave = {v} without pipeline stages.", "v_no_pipeline"
    if (m_.layers // pp) % v:
        return (
            f"interleave = {v} does not divide the {m_.layers // pp} layers of each stage.",
            "v_layers",
        )
    if sequences() % (dp * b):
        return (
            f"dp x micro_batch_size = {dp * b} does not divide the {sequences()} sequences.",
            "batch",
        )
    m = sequences() // (dp * b)
    if v > 1 and m % pp:
        return f"m = {m} micro-batches per rank is not a multiple of p = {pp}.", "v_micro"
    if zero == 3 and pp > 1 and dp > 1:
        return "ZeRO-3 with pipeline parallelism.", "zero3_pp"
    return None


# --- the parts of a step ----------------------------------------------------------------------


def main_differences(mine: parallelism.Layout, best: parallelism.Layout) -> list[str]:
    """The parts that cost ``mine`` the most seconds more than ``best`` (the largest, and any
    within 20% of it); [] when ``mine`` is not slower."""
    a, b = mine.step_parts, best.step_parts
    extra = {k: a[k] - b[k] for k in PARTS}
    top = max(extra.values())
    if top <= 0:
        return []
    return [k for k in PARTS if extra[k] >= 0.8 * top]


PART_WORDS = {
    "compute": "more FLOPs per GPU (recomputation)",
    "bubble": "a larger pipeline bubble",
    "tensor-parallel": "more exposed tensor-parallel all-reduces",
    "pipeline": "more pipeline sends",
    "data-parallel": "more exposed data-parallel traffic",
}


# --- calling the learner's function ---------------------------------------------------------


class _PlannerWatch:
    """Notes whether ``gu.parallelism.evaluate`` or ``plan`` run while the learner's function does
    (a profile hook on their code objects; ``plan``'s own calls of ``evaluate`` are allowed when
    ``allow_plan``)."""

    def __init__(
        self, allow_plan: bool, filename: str | None = None, calls: list | None = None
    ) -> None:
        self.allow_plan = allow_plan
        self.called: str | None = None
        self._evaluate = parallelism.evaluate.__code__
        self._plan = parallelism.plan.__code__
        self.filename = filename
        #: (public course function, its arguments) for each call made from the learner's cell
        self.calls: list[tuple[str, dict]] = [] if calls is None else calls

    def __call__(self, frame, event, arg) -> None:
        if event != "call" or self.called:
            return
        code = frame.f_code
        caller = frame.f_back
        module = frame.f_globals.get("__name__", "")
        if (
            self.filename
            and caller is not None
            and caller.f_code.co_filename == self.filename
            and module.startswith("gpu_utils.")
            and not code.co_name.startswith("_")
            and len(self.calls) < 100
        ):
            n = code.co_argcount + code.co_kwonlyargcount
            arguments = {k: frame.f_locals[k] for k in code.co_varnames[:n] if k in frame.f_locals}
            name = f"gu.{module.removeprefix('gpu_utils.').split('.')[-1]}.{code.co_name}"
            self.calls.append((name, arguments))
        if code is self._plan and not self.allow_plan:
            self.called = "gu.parallelism.plan"
        elif code is self._evaluate:
            caller = frame.f_back.f_code if frame.f_back is not None else None
            if not (self.allow_plan and caller is self._plan):
                self.called = "gu.parallelism.evaluate"


def _cannot_call(exercise_id: str, function, args: tuple) -> CheckResult | None:
    """A message when ``function`` cannot take ``args`` (checked before calling it)."""
    try:
        inspect.signature(function).bind(*args)
    except TypeError:
        wanted = "one argument, the layout dict" if args else "no arguments"
        try:
            mine = ", ".join(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            mine = "..."
        return failed(
            exercise_id,
            f"Your function takes ({mine}), but this exercise calls it with {wanted}.",
            "define it with that signature: `def predict(layout):`"
            if args
            else "define it without parameters: `def my_answer():`",
        )
    except ValueError:  # no signature to read (a builtin): just call it
        return None
    return None


#: The course functions the learner's last call made directly, with their arguments
#: (:class:`_PlannerWatch`), for :func:`_argument_evidence`.
_LAST_CALLS: list[tuple[str, dict]] = []

#: Arguments of the course's functions that name a quantity of the lab's model, and its field.
_MODEL_ARGUMENTS = {
    "seq_len": "seq_len",
    "hidden": "hidden",
    "n_layers": "layers",
    "layers": "layers",
    "n_heads": "heads",
    "heads": "heads",
    "vocab": "vocab",
    "vocab_size": "vocab",
}
# (not params: a GPU's share, params / (tp x pp), is what gu.memory.model_state_bytes takes)


def _number_words(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def _argument_evidence(calls: list[tuple[str, dict]]) -> str:
    """'Check these arguments of your calls: gu.flops.hardware_flops_per_token was given
    seq_len=2,097,152, but LLAMA.seq_len is 8,192.' for the arguments of the learner's course
    calls that name a quantity of the lab's model with another value; '' when there are none."""
    model = parallelism.MODELS[MODEL_NAME]
    said = []
    for name, arguments in calls:
        name = "gu." + ".".join(name.split(".")[-2:])  # gu.memory.x, as the learner writes it
        for key, field in _MODEL_ARGUMENTS.items():
            value = arguments.get(key)
            if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value:
                continue
            right = getattr(model, field)
            if value == right or (name, key) in {(n, k) for n, k, _ in said}:
                continue
            ratio = right / value
            why = f"LLAMA.{field} is {_number_words(right)}"
            if ratio > 1 and float(ratio).is_integer():
                why += f" ({_number_words(ratio)} times as much)"
            said.append((name, key, f"{key}={_number_words(value)}, but {why}"))
    if not said:
        return ""
    return (
        "Check these arguments of your calls: "
        + "; ".join(f"{name} was given {words}" for name, _, words in said[:3])
        + "."
    )


def _call(exercise_id: str, function, args: tuple, allow_plan: bool, errors=None):
    """(value, None, called) or (None, CheckResult, called); an exception the function raised is
    appended to ``errors`` when given."""
    problem = _cannot_call(exercise_id, function, args)
    if problem is not None:
        return None, problem, None
    filename = getattr(getattr(function, "__code__", None), "co_filename", None)
    _LAST_CALLS[:] = []
    watch = _PlannerWatch(allow_plan, filename, _LAST_CALLS)
    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        value = function(*args)
    except NotImplementedError:
        return None, not_attempted(exercise_id), watch.called
    except (Exception, SystemExit) as error:
        if errors is not None:
            errors.append(error)
        try:
            text = str(error)
        except Exception:
            text = ""
        text = text if len(text) < 200 else text[:197] + "..."
        seen, hint = _pyerrors.explain(error, function) or ("", "")
        where = _pyerrors.where(error, function)
        return (
            None,
            failed(
                exercise_id,
                f"Your function raised {type(error).__name__}{where}"
                + (f": {text}" if text else "."),
                # what the failing line's values show leads the hint (the verdict's text gets
                # the layout appended)
                f"{seen} {hint[0].upper()}{hint[1:]}"
                if seen and hint
                else (hint or "run it in a cell of its own to see the full error."),
            ),
            watch.called,
        )
    finally:
        sys.setprofile(previous)
    return value, None, watch.called


def _number(value) -> float | None:
    if getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _not_a_number(exercise_id: str, value, what: str, unit: str) -> CheckResult:
    return failed(
        exercise_id,
        f"Your function returned {_shown(value)} ({type(value).__name__}), not a finite number.",
        f"end it with `return <{what} in {unit}>`.",
    )


def _planner_called(exercise_id: str, name: str) -> CheckResult:
    return failed(
        exercise_id,
        f"Your function calls {name}: it returns the very figure your prediction is compared with.",
        "predict it from the chapter's formulas (gu.memory, gu.flops, gu.collectives and your "
        "own arithmetic); run the planner afterwards to compare.",
    )


def _function_check(exercise_id: str, answer) -> CheckResult | None:
    if not callable(answer):
        return failed(
            exercise_id,
            f"Expected a function of a layout, got {_shown(answer)} ({type(answer).__name__}).",
            "define `def predict(layout): ... return <number>` and pass `predict` itself.",
        )
    return None


def _fmt(value: float, unit: str) -> str:
    return f"{value:.3g} {unit}"


# --- predictions on a panel of layouts -----------------------------------------------------


def _layout(dp, tp, pp, zero, b=1, recompute="none", v=1) -> dict:
    return dict(
        dp=dp,
        tp=tp,
        pp=pp,
        zero_stage=zero,
        micro_batch_size=b,
        recompute=recompute,
        interleave=v,
    )


#: A layout outside the grid ``gu.parallelism.plan`` lists by default (its virtual stages are
#: 1, 2 and 4): both panels end with it, so a prediction that looks layouts up in a table built
#: from the planner's list has no answer for it (issue 30.4: catch the figures, not the call).
OFF_GRID = _layout(8, 4, 8, 1, v=5)
#: Relative agreement with the planner's own figure on every layout below which a step-time
#: prediction reproduces the planner rather than predicting it: a hand estimate with NCCL's
#: latencies still differs by 1e-5 or more on most layouts (its buckets and hop counts).
COPIED_TOL = 1e-9


#: Layouts the memory prediction is checked on: 1F1B with m >= p and m < p, interleaved with
#: m >= p and m = p (where only v m chunks exist, fewer than the warm-up's v p + p - 1),
#: ZeRO-0/1/2/3, recompute none/selective/full, t = 2, 4, 8.
MEMORY_PANEL = (
    _layout(8, 4, 8, 1),
    _layout(8, 8, 4, 1, recompute="selective", v=4),
    _layout(32, 8, 1, 2, b=2, recompute="full"),
    _layout(64, 4, 1, 3, recompute="full"),
    _layout(4, 8, 8, 0, b=8, v=2),
    _layout(16, 2, 8, 1, b=4, recompute="full"),
    OFF_GRID,
)

#: Layouts the step-time prediction is checked on: the planner's best, TP 8 (exposed
#: all-reduces), a deep pipeline with few micro-batches (a 47% bubble), interleaving with few
#: micro-batches and selective recomputation (which costs nothing with flash attention: priced
#: like full, it is a third too slow), ZeRO-2 reduce-scattering on every micro-batch, and t = 2
#: with 16 stages (little tensor-parallel traffic). No ZeRO-3: its thousands
#: of per-tensor collectives are latency-bound, beyond a hand estimate (chapter 10's comparison).
STEP_PANEL = (
    _layout(16, 4, 4, 1, v=4),
    _layout(32, 8, 1, 1),
    _layout(8, 4, 8, 1, b=4, recompute="full"),
    _layout(16, 4, 4, 1, b=4, recompute="selective", v=4),
    _layout(32, 8, 1, 2, recompute="full"),
    _layout(8, 2, 16, 1),
    # TP 8 with 4 sequences per micro-batch: the all-reduces carry b x s x h values, so a
    # prediction sized for one sequence (b left out) is off here by more than the tolerance
    # (lab10_planner_r10)
    _layout(8, 8, 4, 1, b=4),
    OFF_GRID,
)


#: Sets of layouts an answer may raise on (or be off on) while it is right on all the others,
#: each with its description: a setting's value, or a quantity across a threshold.
LAYOUT_SETS = (
    ("without a pipeline (pp = 1)", lambda q: q["pp"] == 1),
    ("with a pipeline (pp > 1)", lambda q: q["pp"] > 1),
    ("with 1F1B (pp > 1, v = 1)", lambda q: q["pp"] > 1 and q["v"] == 1),
    ("interleaved (v > 1)", lambda q: q["v"] > 1),
    ("with tp x pp > 8 (a replica spans nodes)", lambda q: q["tp"] * q["pp"] > 8),
    ("with tp x pp >= 8", lambda q: q["tp"] * q["pp"] >= 8),
    ("with tp x pp < 8 (several replicas in a node)", lambda q: q["tp"] * q["pp"] < 8),
    ("with tensor parallelism (tp > 1)", lambda q: q["tp"] > 1),
    ("with tp = 8", lambda q: q["tp"] == 8),
    *((f"with ZeRO-{z}", lambda q, z=z: q["zero"] == z) for z in range(4)),
    ("with full recomputation", lambda q: q["recompute"] == "full"),
    ("with selective recomputation", lambda q: q["recompute"] == "selective"),
    ("without recomputation", lambda q: q["recompute"] == "none"),
    ("with micro-batches of more than one sequence (b > 1)", lambda q: q["b"] > 1),
    ("with fewer micro-batches than stages (m < p)", lambda q: q["m"] < q["pp"]),
    ("with m >= p > 1", lambda q: q["pp"] > 1 and q["m"] >= q["pp"]),
)


def _settings(layout: dict) -> dict:
    """What :data:`LAYOUT_SETS` read of a layout."""
    m = sequences() // (layout["dp"] * layout["micro_batch_size"])
    return {
        "dp": layout["dp"],
        "tp": layout["tp"],
        "pp": layout["pp"],
        "v": layout["interleave"] if layout["pp"] > 1 else 1,
        "zero": layout["zero_stage"],
        "recompute": layout["recompute"],
        "b": layout["micro_batch_size"],
        "m": m,
    }


def layout_set(layouts: list[dict], flagged: list[bool]) -> str | None:
    """The description of the one set of :data:`LAYOUT_SETS` that holds exactly the flagged
    layouts among ``layouts`` (the first such), or None; a set needs two flagged layouts at
    least (one layout off is that layout, not yet a kind of layouts)."""
    if sum(flagged) < 2 or all(flagged):
        return None
    settings = [_settings(lay) for lay in layouts]
    for name, member in LAYOUT_SETS:
        if all(member(q) == f for q, f in zip(settings, flagged, strict=True)):
            return name
    return None


def _course_call(error: BaseException) -> tuple[str, dict] | None:
    """The course function the learner's code called on the way to ``error`` (the first frame of
    gpu_utils after one of theirs), as (its public name, its arguments), or None (the error was
    raised in their own code, or in a private function)."""
    learner_seen = False
    for frame, _ in traceback.walk_tb(error.__traceback__):
        module = frame.f_globals.get("__name__", "")
        if not (module == "gpu_utils" or module.startswith("gpu_utils.")):
            learner_seen = True
            continue
        if not learner_seen:
            continue  # the checker's own frame, which called the learner's function
        code = frame.f_code
        if code.co_name.startswith("_") or "._" in module:
            return None
        n = code.co_argcount + code.co_kwonlyargcount
        arguments = {k: frame.f_locals[k] for k in code.co_varnames[:n] if k in frame.f_locals}
        return f"gu.{module.removeprefix('gpu_utils.')}.{code.co_name}", arguments
    return None


#: What an argument of a course function is, for an answer that passed it 0 or less.
ARGUMENT_NOTES = {
    "gpus_per_node": (
        "gpus_per_node is how many GPUs of the group share a node, at least 1: ranks are laid "
        "out TP innermost, then PP, then DP, so a data-parallel group's GPUs are tp x pp apart "
        "and with tp x pp >= 8 each node holds one of them."
    ),
}


def _integer_divisions(layout: dict) -> dict[str, int]:
    """Integer divisions of the layout's quantities an answer may compute (and that round down
    to 0 when the divisor is the larger)."""
    q, node = _settings(layout), JOB["gpus_per_node"]
    return {
        f"{node} // (tp x pp)": node // (q["tp"] * q["pp"]),
        f"{node} // tp": node // q["tp"],
        f"{node} // pp": node // q["pp"],
        f"dp // {node}": q["dp"] // node,
        f"(tp x pp) // {node}": q["tp"] * q["pp"] // node,
        "m // p": q["m"] // q["pp"],
        "p // m": q["pp"] // q["m"],
    }


def _raised(figure, answer, layout: dict, problem: CheckResult, error) -> CheckResult:
    """A function that raised on a panel layout: where else it raises (the set of layouts, when
    one of :data:`LAYOUT_SETS` is exactly those) and which argument of which course function
    was 0 or less, with the integer division of the layout's quantities that gives it."""
    what = problem.what
    what += f" (for the layout {short(layout)})."
    tried = [*figure.panel, *(lay for _, _, probe in figure.probes for lay in probe)]
    raised = []
    for other in tried:
        errors: list = []
        _call(figure.exercise_id, answer, (dict(other),), False, errors=errors)
        raised.append(bool(errors))
    found = []
    where = layout_set(tried, raised)
    if where is not None:
        found.append(
            f"it raises on the {sum(raised)} layouts tried {where} and on none of the other "
            f"{len(tried) - sum(raised)}"
        )
    call = _course_call(error) if error is not None else None
    note = ""
    if call is not None:
        name, arguments = call
        text = str(error)
        bad = [
            k
            for k, value in arguments.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool) and value <= 0
        ]
        bad = [k for k in bad if k in text] or bad
        if bad:
            key, value = bad[0], arguments[bad[0]]
            given = f"{name} was given {key}={value!r} for {short(layout)}"
            # the divisions that give the value here and, when the answer raises on some
            # layouts only, are 0 exactly on those
            same = [e for e, v in _integer_divisions(layout).items() if v == value]
            if where is not None:
                zero = [[v == 0 for v in _integer_divisions(lay).values()] for lay in tried]
                names = list(_integer_divisions(layout))
                same = [
                    e
                    for e in same
                    if all(z[names.index(e)] == r for z, r in zip(zero, raised, strict=True))
                ]
            if same and value == 0:
                given += f", what {' or '.join(same)} gives there (integer division rounds down)"
            found.append(given)
            note = ARGUMENT_NOTES.get(key, "")
    # the course call's arguments that name a quantity of the model with another value
    arguments = _argument_evidence([call]) if call is not None else ""
    if not found:
        generic = problem.hint.startswith("run it in a cell")
        return failed(
            figure.exercise_id,
            what,
            arguments
            or (
                "run your function on that layout in a cell of its own."
                if generic
                else problem.hint
            ),
        )
    hint = "; ".join(found) + "."
    hint = hint[0].upper() + hint[1:]
    if note:
        hint += " " + note
    if arguments:
        hint += " " + arguments
    return failed(
        figure.exercise_id, what, hint + " Run it on that layout in a cell of its own to see more."
    )


def _lookup_failed(exercise_id: str, layout: dict, error: str) -> CheckResult:
    return failed(
        exercise_id,
        f"Your function has no answer for {short(layout)} ({error}): it looks the layout up "
        "instead of predicting it.",
        "a table of the planner's results (gu.parallelism.plan's list) holds only the layouts "
        "it lists; predict any layout from the chapter's formulas and your own arithmetic.",
    )


def _copied(exercise_id: str, what: str, where: str) -> CheckResult:
    return failed(
        exercise_id,
        f"Your {what} equals the planner's own figure to 9 digits {where}: that is the figure it "
        "is compared with, copied, not predicted.",
        "predict it with your own arithmetic (the chapter's formulas, gu.memory, gu.flops, "
        "gu.collectives); if you did, round it to 3 significant figures.",
    )


# --- evidence: how a prediction relates to the planner's figure ------------------------------
#
# A wrong prediction is diagnosed from what the checker observes, gathered as data
# (:class:`Evidence`), not from a list of programs: the answer is called on the panel and on
# probes that change one setting at a time (:data:`MEMORY_PROBES`, :data:`STEP_PROBES`); the
# planner's figure for each layout is split into its terms (``Layout.memory_breakdown`` and
# ``Layout.step_parts`` of gu.parallelism), and the checker looks for one term whose
# contribution, taken some factor times (a constant fitted to the answer, or a quantity of the
# layout such as tp x pp or the micro-batches per rank), turns the planner's figure into the
# learner's on every layout tried. A cause is named only when one relation explains every
# layout; otherwise the hint says what was observed (which setting the answer responds to
# unlike the planner's, by how much) and which terms depend on it.


def quantities(layout: dict) -> dict[str, float]:
    """What a layout's terms may be mistakenly scaled by: its degrees, micro-batches ``m``, the
    micro-batches' worth of activations in flight on the first stage, the bubble, the
    all-reduces per layer, and the ratios of the FLOPs and activations other counts give."""
    mod, x = model(), evaluate(layout)
    dp, tp, pp, b = layout["dp"], layout["tp"], layout["pp"], layout["micro_batch_size"]
    v = layout["interleave"] if pp > 1 else 1
    recompute, m = layout["recompute"], x.micro_batches
    in_flight = parallelism.in_flight_chunks(pp, m, v) / v
    shape = dict(layers=mod.layers, d_model=mod.hidden, seq_len=mod.seq_len)
    hw = flops.hardware_flops_per_token(mod.params, recompute=recompute, attention="flash", **shape)
    hw_none = flops.hardware_flops_per_token(mod.params, attention="flash", **shape)
    forward = 2 * mod.params + 4 * mod.layers * mod.hidden * mod.seq_len

    def per_layer(**options) -> float:
        kw = dict(tp=tp, sequence_parallel=tp > 1, recompute=recompute, dropout_masks=False)
        kw["attention"] = "flash"
        kw.update(options)
        return memory.activation_bytes_per_layer(mod.seq_len, b, mod.hidden, mod.heads, **kw)

    beta, plain = x.bubble, (pp - 1) / (m + pp - 1)
    # a data-parallel group's GPUs per node, and as many as 8 if its members were packed in
    # nodes (NVLink inside, the node's 8 NICs across): the same bytes' time, packed / planner's
    dp_per_node = parallelism._link(dp, tp * pp, JOB["gpus_per_node"])[1]
    dp_time = {
        n: collectives.estimate_time("all_reduce", 1e9, dp, gpu=JOB["gpu"], gpus_per_node=n)
        if dp > 1
        else 0.0
        for n in (dp_per_node, min(dp, JOB["gpus_per_node"]))
    }
    # the a s x s attention scores of one layer and micro-batch (heads split over t), 1 byte
    # each, over the bytes the planner keeps per layer: 0 where the layer is fully recomputed
    scores = mod.heads * mod.seq_len**2 * b / tp / per_layer() if recompute != "full" else 0.0
    busy = x.step_parts["compute"] + x.step_parts["tensor-parallel"]
    return {
        "dp": dp,
        "tp": tp,
        "pp": pp,
        "m": m,
        # the all-reduces' share of the busy time (compute + all-reduces)
        "tp_share": x.step_parts["tensor-parallel"] / busy if busy > 0 else 0.0,
        # the busy time stretched by p/(v m + p - 1) instead of (p - 1)/(v m + p - 1), over the
        # planner's stretch (p idle slots: not 0 even without a pipeline)
        "bubble_p": (1 - beta) / (1 - pp / (v * m + pp - 1)) if v * m > 1 else math.inf,
        # 1F1B's micro-batches in flight counted as the p - 1 warm-up forwards, min(p - 1, m),
        # or one fewer than the planner's whatever m, over the planner's min(p, m)
        "warmup_only": min(pp - 1, m) / in_flight if pp > 1 and v == 1 else 1.0,
        "one_fewer_1f1b": (in_flight - 1) / in_flight if pp > 1 and v == 1 else 1.0,
        "b": b,
        "zero": layout["zero_stage"] if dp > 1 else 0,
        "in_flight": in_flight,
        "v": v,
        "bubble": beta,
        "passes": 6 if recompute == "full" else 4,
        "no_recompute": per_layer(recompute="none") / per_layer(),
        # selective recomputation counted as full (only each layer's input kept)
        "selective_as_full": (
            per_layer(recompute="full") / per_layer() if recompute == "selective" else 1.0
        ),
        "scores": scores,
        "scores_unless_selective": scores if recompute == "none" else 0.0,
        "eager": per_layer(attention="eager") / per_layer(),
        "dropout": per_layer(dropout_masks=True) / per_layer(),
        # gu.memory.activation_bytes_per_layer's defaults: eager attention, dropout masks
        "defaults": per_layer(attention="eager", dropout_masks=True) / per_layer(),
        "no_sequence_parallel": per_layer(sequence_parallel=False) / per_layer(),
        # the same where layers keep their activations (the inputs of recomputed layers split)
        "no_sequence_parallel_kept": (
            per_layer(sequence_parallel=False) / per_layer() if recompute != "full" else 1.0
        ),
        # the micro-batches' worth in flight without the min() with v m (1F1B: p)
        "no_min": (pp if v == 1 else (v * pp + pp - 1) / v) / in_flight if pp > 1 else 1.0,
        # the same on 1F1B layouts alone: p micro-batches (interleaved ones right)
        "no_min_1f1b": pp / in_flight if pp > 1 and v == 1 else 1.0,
        # the same on interleaved layouts alone (1F1B's min(p, m) kept): v p + p - 1 chunks
        "no_min_interleaved": (v * pp + pp - 1) / v / in_flight if pp > 1 and v > 1 else 1.0,
        # the micro-batches in flight with m = 256 / dp, b times the planner's (the micro-batch
        # size left out of m): on 256 GPUs b m = tp x pp >= p, so this min() with m never binds
        # where b > 1: the figures of no min() at all, except on interleaved layouts with m = p
        # and b = 1 (so tp = 1), where they are right
        "m_without_b": (
            parallelism.in_flight_chunks(pp, b * m, v) / v / in_flight if pp > 1 else 1.0
        ),
        # interleaved layouts counted as 1F1B's min(p, m)
        "as_1f1b": min(pp, m) / in_flight if pp > 1 else 1.0,
        # what every stage of the pipeline holds, added up, over what the first stage holds
        "all_stages": (
            sum(
                pipeline.in_flight(
                    pipeline.one_f_one_b(pp, m) if v == 1 else pipeline.interleaved(pp, m, v)
                )
            )
            / v
            / in_flight
            if pp > 1
            else 1.0
        ),
        "forward_share": forward / hw,
        "causal": flops.hardware_flops_per_token(
            mod.params, recompute=recompute, attention="flash", causal=True, **shape
        )
        / hw,
        "recompute_flops": hw_none / hw,
        "params_only": (8 if recompute == "full" else 6) * mod.params / hw,
        # the bubble's seconds with its share of the step taken as (p - 1)/(v m), the large-m
        # approximation (its ratio to the busy time), over the planner's: (p - 1)/(v m + p - 1)
        "large_m_bubble": (
            1.0 if pp == 1 else (v * m) / (v * m - pp + 1) if v * m > pp - 1 else math.inf
        ),
        # the bubble's seconds without interleaving over the planner's: (p - 1)/(m + p - 1)
        "no_interleave": (plain / (1 - plain)) / (beta / (1 - beta)) if beta > 0 else 1.0,
        "dp_packed": (
            dp_time[min(dp, JOB["gpus_per_node"])] / dp_time[dp_per_node] if dp > 1 else 1.0
        ),
    }


WHOLE = "whole figure"
#: Terms the planner does not count, that an answer may add (Relation.added): the a s x s
#: attention scores of every layer and micro-batch the first stage keeps, 1 byte each, on
#: layers that are not fully recomputed, or only on those not recomputed at all (eager
#: attention with selective recomputation, which recomputes the scores, as gu.memory counts it).
SCORES = "s x s attention scores"
SCORES_EAGER = "s x s attention scores without selective recomputation"
#: Not in the planner's step: what counting m = 256 / b micro-batches per rank (the whole
#: batch's, dp times too many) adds to it, seconds (Relation.added).
M_WHOLE_BATCH = "the change with m counted over the whole batch"
#: The same for m counted in tokens, 2**21 / (dp x b): s = 8,192 times too many.
M_TOKENS = "the change with m counted in tokens"
#: The same for m = 256 / dp, the micro-batch size left out: b times too many.
M_WITHOUT_B = "the change with m counted without the micro-batch size"


def memory_terms(layout: dict) -> dict[str, float]:
    """GiB each term contributes to the planner's memory per GPU (``Layout.memory_breakdown``),
    and the sums a mistake may scale together: the model states, the part of them the ZeRO
    stage shards over dp and the part it leaves whole."""
    x = evaluate(layout)
    part = {k: value / GIB for k, value in x.memory_breakdown.items()}
    w, g, o = part["parameters"], part["gradients"], part["optimizer"]
    q = quantities(layout)
    zero = q["zero"]
    sharded = (o if zero >= 1 else 0.0) + (g if zero >= 2 else 0.0) + (w if zero >= 3 else 0.0)
    return {
        WHOLE: x.memory_per_gpu / GIB,
        "bf16 weights": w,
        "gradients": g,
        "optimizer states": o,
        "weights and gradients": w + g,
        "model states": w + g + o,
        "model states ZeRO shards": sharded,
        "model states ZeRO keeps whole": w + g + o - sharded,
        "activations": part["activations"],
        "ZeRO-3 gathered layers": part["zero3_gathered"],
        # not in the planner's figure (flash attention keeps no s x s scores): an answer may
        # add them, some bytes each (Relation.added)
        SCORES: part["activations"] * q["scores"],
        SCORES_EAGER: part["activations"] * q["scores_unless_selective"],
    }


def step_terms(layout: dict, latency: bool = True) -> dict[str, float]:
    """Seconds each term contributes to the planner's step (``Layout.step_parts``): compute and
    the tensor-parallel all-reduces with their share of the bubble (the busy time is divided by
    1 - bubble), the bubble, pipeline sends and data-parallel traffic, and their sums.
    ``latency=False``: collectives at their bandwidth alone, as the lab allows a hand estimate
    (``gu.collectives.estimate_time``)."""
    x = evaluate(layout, latency=latency)
    part, keep = x.step_parts, 1 / (1 - x.bubble)

    def m_times(k: int) -> float:
        """The step of the same layout with k times the batch and k times the MFU: the same
        compute per GPU, k times the micro-batches per rank."""
        return parallelism.evaluate(
            model(),
            cluster(),
            JOB["global_batch_tokens"] * k,
            **layout,
            **{**framework(layout), "mfu": 0.5 * k},
            latency=latency,
        ).step_time

    c, t = part["compute"] * keep, part["tensor-parallel"] * keep
    return {
        WHOLE: x.step_time,
        "compute": c,
        "tensor-parallel all-reduces": t,
        "busy time (compute and all-reduces)": c + t,
        "bubble": part["bubble"],
        "pipeline sends": part["pipeline"],
        "data-parallel traffic": part["data-parallel"],
        "communication": t + part["pipeline"] + part["data-parallel"],
        M_WHOLE_BATCH: m_times(layout["dp"]) - x.step_time,
        M_TOKENS: m_times(model().seq_len) - x.step_time,
        M_WITHOUT_B: m_times(layout["micro_batch_size"]) - x.step_time,
    }


@dataclass(frozen=True)
class Relation:
    """One way a figure may relate to the planner's: ``term``'s contribution taken
    ``factor(quantities(layout))`` times, the other terms as the planner counts them;
    ``factor`` None: a constant, fitted to the answer. ``variant``: the key of the hint that
    names the cause (empty: the term's own hint)."""

    term: str
    label: str
    factor: Callable[[dict], float] | None = None
    variant: str = ""
    #: ``term`` is not in the planner's figure: the answer is the planner's plus ``term`` taken
    #: a known constant times (a fitted constant is kept only when it is a known one)
    added: bool = False


@dataclass(frozen=True)
class Fit:
    """A relation that reproduces the answer on every layout tried: ``factor`` is the constant
    found (None for a relation with a factor of its own), ``distance`` the summed
    |log(reproduced / yours)|, ``variant`` the cause it names, ``effect`` the largest
    |log(reproduced / the planner's)|: how much the relation changes the figure."""

    relation: Relation
    factor: float | None
    distance: float
    variant: str
    effect: float = 0.0

    @property
    def how(self) -> str:
        return f"x {self.factor:.4g}" if self.factor is not None else self.relation.label


@dataclass(frozen=True)
class Response:
    """The figures, yours and the planner's, as one setting changes alone."""

    setting: str
    values: tuple[str, ...]
    yours: tuple[float, ...]
    planner: tuple[float, ...]

    @property
    def mismatch(self) -> float:
        """The largest |log| of yours' relative change over the planner's (0: the same)."""
        y0, p0 = self.yours[0], self.planner[0]
        return max(
            abs(math.log((y / y0) / (p / p0)))
            for y, p in zip(self.yours, self.planner, strict=True)
        )

    def same_difference(self, tol: float) -> bool:
        """Whether yours differ from the planner's by the same amount (within ``tol`` of the
        smallest figure) whatever the setting: the setting leaves the mistake unchanged, which
        then lies in a term that does not depend on it (a constant added to a figure that
        shrinks as the setting changes is a growing ratio, not a response to the setting)."""
        gaps = [y - p for y, p in zip(self.yours, self.planner, strict=True)]
        return max(gaps) - min(gaps) <= tol * min(self.planner)


@dataclass(frozen=True)
class Evidence:
    """What the checker observed of a prediction: the figures on every layout tried (the panel
    first, then the probes), which panel layouts are off, the relations that reproduce the
    answer (nearest first) and the settings it responds to unlike the planner's (most first)."""

    what: str
    unit: str
    layouts: tuple[dict, ...]
    yours: tuple[float, ...]
    planner: tuple[float, ...]
    wrong: tuple[int, ...]
    fits: tuple[Fit, ...]
    responses: tuple[Response, ...]
    matched: tuple[str, ...]
    #: summed |log(yours / the planner's)| over the layouts, against the nearest split of it
    distance_right: float = 0.0
    #: when no one relation explains the answer: the terms whose constant factors (other than 1)
    #: together reproduce it on every layout, with the factors
    combined: tuple[tuple[str, float], ...] = ()
    #: a unit mistake (a known factor on the whole figure) found under the fits: they hold for
    #: the answer divided by it
    unit_mistake: str = ""
    #: the set of :data:`LAYOUT_SETS` that holds exactly the layouts tried on which the answer is
    #: off (by more than half the tolerance), right on all the others; "" if none does
    off_on: str = ""
    #: the relative difference beyond which a layout counted as off for ``off_on``
    off_tol: float = 0.0

    def _near(self) -> list[Fit]:
        best = self.fits[0]
        near = 2 * best.distance + 0.001 * len(self.layouts)
        return [f for f in self.fits if f.distance <= near]

    def alternatives(self, fit: Fit) -> list[str]:
        """For a fit of :data:`SCALINGS` (no cause of its own): how the other fits about as near
        change the same term, which the layouts tried do not tell apart from it."""
        if fit.variant or not self.fits:
            return []
        return [
            f.how for f in self._near() if f is not fit and f.relation.term == fit.relation.term
        ]

    def cause(self) -> Fit | None:
        """The fit that names the cause: the nearest, when every fit about as near (within twice
        its distance, plus 0.1% a layout) names the same cause; else None."""
        if not self.fits:
            return None
        best = self.fits[0]
        near = 2 * best.distance + 0.001 * len(self.layouts)
        close = [f for f in self.fits if f.distance <= near]
        if len({f.relation.term for f in close}) == 1:  # one term: its most specific relation
            return self._with_twins(next((f for f in close if f.variant), best), close)
        return best if len({f.variant or f.relation.term for f in close}) == 1 else None

    def _with_twins(self, fit: Fit, close: list[Fit]) -> Fit:
        """``fit``, naming too the causes of the fits that give the very same figures on every
        layout tried (the evidence cannot tell them apart: a probe the answer could not run,
        say), joined by "+" as :func:`hint_text` reads them."""
        if not fit.variant:
            return fit
        twins = [
            f.variant
            for f in close
            if f.variant
            and f.variant != fit.variant
            and math.isclose(f.distance, fit.distance, rel_tol=1e-9, abs_tol=1e-12)
            and math.isclose(f.effect, fit.effect, rel_tol=1e-9, abs_tol=1e-12)
        ]
        if not twins:
            return fit
        names = dict.fromkeys(n for v in (fit.variant, *twins) for n in v.split("+"))
        return replace(fit, variant="+".join(names))


def _known_cause(known: dict, term: str, factor: float) -> tuple[str, float] | None:
    """(the cause, its exact factor) when ``factor`` on ``term`` is one of the ``known``
    constants (within 3%; 0 within 0.03), else None. Two causes with the same constant are
    both named, joined by "+" (:func:`hint_text` gives both hints)."""
    for value, name in known.get(term, ()):
        if abs(factor) < 0.03 if value == 0 else abs(math.log(max(factor, 1e-9) / value)) < 0.03:
            same = [n for v, n in known[term] if v == value and n != name]
            return "+".join(dict.fromkeys([name, *same])), value
    return None


def hint_text(hints: dict, variant: str) -> str:
    """The hint of a cause, or of each cause a factor equally fits ("a+b": both, either may be
    the mistake)."""
    names = variant.split("+")
    if len(names) == 1:
        return hints[variant]
    texts = [hints[n].rstrip(".") for n in names]
    return "either " + "; or ".join(texts) + " (the same factor: check which you did)."


#: The share of the difference between an answer and the planner's figure (on a layout where
#: it is clearly off) that a relation may leave unexplained.
DEVIATION_SHARE = 1 / 3


def _contribution_fit(
    relation: Relation,
    facts: list[tuple[dict, dict]],
    yours: list[float],
    known: dict,
    fit_tol: float,
) -> Fit | None:
    """The fit of ``relation`` to ``yours`` over ``facts`` (each layout's quantities and terms),
    or None when it does not reproduce every layout within ``fit_tol``."""
    right = [terms[WHOLE] for _, terms in facts]
    share = [terms[relation.term] for _, terms in facts]
    shift = 0 if relation.added else 1  # an added term: the planner counts it 0 times
    if relation.factor is None:
        implied = [
            shift + (y - r) / d for y, r, d in zip(yours, right, share, strict=True) if d > 0.02 * r
        ]
        if not implied:
            return None
        constant = statistics.median(implied)
        if relation.added and _known_cause(known, relation.term, constant) is None:
            return None  # an added term is named only for a count whose cause is known
        factors = [constant] * len(facts)
    else:
        constant = None
        factors = [relation.factor(q) for q, _ in facts]
    made = [r + (f - shift) * d for r, d, f in zip(right, share, factors, strict=True)]
    if any(p <= 0 for p in made) or any(y <= 0 for y in yours):
        return None
    if not all(_close(p, y, fit_tol) for p, y in zip(made, yours, strict=True)):
        return None
    if all(_close(p, r, 0.005) for p, r in zip(made, right, strict=True)):
        return None  # it changes nothing: it cannot be what makes the answer differ
    # where the answer or the relation moves the figure clearly (by a quarter of the
    # tolerance), the relation must move it as the answer does, up to a third of the move:
    # within half the tolerance of a large figure, a relation on a small term can otherwise
    # "fit" while explaining only part of how that term changes (ZeRO-2's traffic x 2/(m + 1)
    # for reduce-scatters dp times too small, half the difference at m = 2), or change layouts
    # on which the answer is right (that traffic / tp on ZeRO-1 layouts, 3% of the step)
    for p, y, r in zip(made, yours, right, strict=True):
        moved = max(abs(y - r), abs(p - r))
        if moved > fit_tol / 2 * r and abs(p - y) > DEVIATION_SHARE * moved:
            return None
    variant = relation.variant
    if constant is not None:
        variant, constant = _known_cause(known, relation.term, constant) or ("", constant)
    distance = sum(abs(math.log(p / y)) for p, y in zip(made, yours, strict=True))
    effect = max(abs(math.log(p / r)) for p, r in zip(made, right, strict=True))
    return Fit(relation, constant, distance, variant, effect)


#: (terms, layout items) -> (quantities, terms) of the panels' and probes' layouts, the same
#: for every check (read, never changed): :meth:`Figure.remember_facts`.
_FACTS: dict[tuple, tuple[dict, dict]] = {}


@dataclass(frozen=True)
class Figure:
    """What one prediction exercise compares: its terms, relations, known constants, probes,
    tolerances and hints."""

    exercise_id: str
    what: str
    unit: str
    panel: tuple[dict, ...]
    probes: tuple[tuple[str, tuple[str, ...], tuple[dict, ...]], ...]
    terms: Callable[[dict], dict]
    relations: tuple[Relation, ...]
    known: dict
    tol: float
    hints: dict
    term_hints: dict
    setting_terms: dict
    generic: str
    copied_tol: float = 0.0
    #: The planner's figure as a sum of its parts, to show for one layout.
    parts: Callable[[dict], dict] | None = None
    #: Other splits of the planner's figure a correct hand estimate may follow (the step at
    #: bandwidth alone): a relation may hold against any of them.
    other_terms: tuple[Callable[[dict], dict], ...] = ()

    @property
    def fit_tol(self) -> float:
        """How close a relation must reproduce every figure: half the pass tolerance."""
        return self.tol / 2

    def facts(self, layout: dict, terms: Callable[[dict], dict] | None = None):
        """(quantities, terms) of ``layout``, the terms from ``terms`` or the planner's own
        (computed once per layout: the panel and probes are the same for every check)."""
        terms = terms or self.terms
        key = (terms, tuple(sorted(layout.items())))
        if key in _FACTS:
            return _FACTS[key]
        return quantities(layout), terms(layout)

    def remember_facts(self) -> None:
        """Compute the facts of the panel and probes once for every check, before the first
        learner's function runs (so no answer's patch of a helper can reach them)."""
        for layout in (*self.panel, *(lay for _, _, probe in self.probes for lay in probe)):
            for terms in (self.terms, *self.other_terms):
                key = (terms, tuple(sorted(layout.items())))
                if key not in _FACTS:
                    _FACTS[key] = quantities(layout), terms(layout)

    def single_layout_relations(self) -> list[Relation]:
        """The relations that say something on one layout alone: those with a factor of their
        own and the known constants (a fitted constant fits any one figure)."""
        # not the family of SCALINGS: on one layout some term x some setting gives nearly any
        # figure, by chance
        fixed = [r for r in self.relations if r.factor is not None and r.variant]
        added = {r.term for r in self.relations if r.added}
        for term, values in self.known.items():
            for value, name in values:
                fixed.append(
                    Relation(term, f"x {value:.3g}", lambda q, v=value: v, name, term in added)
                )
        return fixed


def gather_evidence(figure: Figure, layouts: list[dict], yours: list[float], answer=None):
    """The evidence on ``layouts`` (the panel), completed with the probes when ``answer`` (the
    learner's function) is given; probe layouts it cannot answer are left out."""
    layouts, yours = list(layouts), list(yours)
    n_panel = len(layouts)
    responses, matched = [], []
    for setting, values, probe in figure.probes if answer is not None else ():
        got = []
        for layout in probe:
            value, problem, called = _call(figure.exercise_id, answer, (dict(layout),), False)
            got.append(_number(value) if problem is None and not called else None)
        kept = [(v, lay, g) for v, lay, g in zip(values, probe, got, strict=True) if g]
        if len(kept) < 2 or any(g <= 0 for _, _, g in kept):
            continue
        planner = tuple(figure.facts(lay)[1][WHOLE] for _, lay, _ in kept)
        response = Response(
            setting, tuple(v for v, _, _ in kept), tuple(g for _, _, g in kept), planner
        )
        if response.mismatch <= figure.tol:
            matched.append(response)
        elif not response.same_difference(figure.fit_tol):
            responses.append(response)
        layouts += [lay for _, lay, _ in kept]
        yours += [g for _, _, g in kept]
    bases = [
        [figure.facts(layout, terms) for layout in layouts]
        for terms in (figure.terms, *figure.other_terms)
    ]
    right = [terms[WHOLE] for _, terms in bases[0]]
    distance_right = (
        min(
            sum(abs(math.log(y / t[WHOLE])) for y, (_, t) in zip(yours, facts, strict=True))
            for facts in bases
        )
        if all(y > 0 for y in yours)
        else math.inf
    )
    fits = _fits(figure, bases, yours)
    wrong = tuple(i for i in range(n_panel) if not _close(yours[i], right[i], figure.tol))
    unit_mistake = ""
    if not fits and len(layouts) > 1:  # a unit on top of one mistake: the mistake, in units
        for value, name in figure.known.get(WHOLE, ()):
            scaled = _fits(figure, bases, [y / value for y in yours])
            if (
                scaled
                and Evidence("", "", tuple(layouts), (), (), (), tuple(scaled), (), ()).cause()
            ):
                fits, unit_mistake = scaled, name
                break
    combined = ()
    if not fits and len(layouts) > 1 and all(y > 0 for y in yours):
        combined = (
            min(
                (_combined_fit(figure, facts, yours) for facts in bases),
                key=lambda c: (c is None, len(c or ())),
            )
            or ()
        )
    responses.sort(key=lambda r: -r.mismatch)
    off_on = ""
    for tol in (figure.fit_tol, figure.tol / 10):  # a small excess too, on a large figure
        off = [not _close(y, r, tol) for y, r in zip(yours, right, strict=True)]
        off_on = layout_set(layouts, off) or ""
        if off_on:
            break
    return Evidence(
        figure.what,
        figure.unit,
        tuple(layouts),
        tuple(yours),
        tuple(right),
        wrong,
        tuple(fits),
        tuple(responses),
        tuple(r.setting for r in matched),
        distance_right,
        tuple(combined),
        unit_mistake,
        off_on,
        tol if off_on else 0.0,
    )


def _fits(figure: Figure, bases: list, yours: list[float]) -> list[Fit]:
    """The relations of ``figure`` that reproduce ``yours`` against any split of the planner's
    figure in ``bases``, nearest first (on one layout only those that say something there)."""
    if not all(y > 0 for y in yours):
        return []
    n = len(bases[0])
    relations = figure.relations if n > 1 else figure.single_layout_relations()
    fits = []
    for relation in relations:
        found = [
            _contribution_fit(relation, facts, yours, figure.known, figure.fit_tol)
            for facts in bases
        ]
        found = [f for f in found if f is not None]
        if found:
            fits.append(min(found, key=lambda f: f.distance))
    return sorted(fits, key=lambda f: f.distance)


def _combined_fit(figure: Figure, facts: list[tuple[dict, dict]], yours: list[float]):
    """The terms of ``figure.setting_terms["parts"]`` whose constant factors, fitted together
    (least squares on the relative differences), reproduce ``yours`` within the fit tolerance
    on every layout: [(term, factor)] for the one or two factors other than 1, else None."""
    import numpy as np

    parts = figure.setting_terms["parts"]
    rows = np.array(
        [[terms[k] / y for k in parts] for y, (_, terms) in zip(yours, facts, strict=True)]
    )
    gaps = np.array([(y - terms[WHOLE]) / y for y, (_, terms) in zip(yours, facts, strict=True)])
    used = rows.max(axis=0) > 0.01  # terms that matter on some layout
    if not used.any():
        return None
    delta = np.zeros(len(parts))
    delta[used] = np.linalg.lstsq(rows[:, used], gaps, rcond=None)[0]
    made = [
        terms[WHOLE] + sum(d * terms[k] for d, k in zip(delta, parts, strict=True))
        for _, terms in facts
    ]
    if not all(p > 0 and _close(p, y, figure.fit_tol) for p, y in zip(made, yours, strict=True)):
        return None
    off = [
        (k, (_known_cause(figure.known, k, 1 + float(d)) or ("", 1 + float(d)))[1])
        for k, d in zip(parts, delta, strict=True)
        if abs(d) > 0.05
    ]
    return off if 1 <= len(off) <= 2 else None


def mistake_is_nearer(evidence: Evidence, fit: Fit, tol: float) -> bool:
    """Whether an answer within the tolerance ``tol`` is a known mistake's figure rather than
    an estimate of the planner's: the mistake moves the figure by half the tolerance or more on
    some layout (a term left out that is worth less, such as the pipeline sends, is a
    simplification the tolerance allows), and reproduces the answer at least 3 times as closely
    (and by 0.2% a layout) as the planner's own figure does."""
    if fit.effect < tol / 2:
        return False
    return 3 * fit.distance + 0.002 * len(evidence.layouts) < evidence.distance_right


def _series(values: tuple[float, ...], unit: str) -> str:
    return ", ".join(f"{v:.3g}" for v in values) + f" {unit}"


BYTES_PER_PARAMETER = {
    "bf16 weights": 2,
    "gradients": 2,
    "optimizer states": 12,
    "weights and gradients": 4,
    "model states": 16,
}


#: Powers as they may be written with ^, Python's bitwise XOR: (base, exponent).
POWERS = ((2, 30), (1024, 3), (2, 20), (1024, 2), (10, 9), (1000, 3), (2, 10))


def _divisor_reading(factor: float) -> str:
    """For GiB figures ``factor`` times the planner's: the number the bytes were divided by
    instead of 2**30 when it is a whole number, and a power written with ^ (XOR) that gives it;
    else ''."""
    divisor = GIB / factor
    n = round(divisor)
    if not 1 < n < GIB or not math.isclose(divisor, n, rel_tol=1e-6):
        return ""
    text = f" (the bytes divided by {n:,} where the planner divides by 2**30 = {GIB:,}"
    xor = [f"{a}^{b}" for a, b in POWERS if a ^ b == n]
    if xor:
        base, exponent = xor[0].split("^")
        text += f"; in Python {xor[0]} is {n}: ^ is bitwise XOR, the power is {base}**{exponent}"
    return text + ")"


def hint_from(figure: Figure, evidence: Evidence) -> str:
    """The hint the evidence supports: the cause when one relation explains every layout, else
    what was observed and what to check."""
    n = len(evidence.layouts)
    fit = evidence.cause()
    if fit is not None:
        term = fit.relation.term
        where = (
            f"on all {n} layouts tried"
            if n > len(figure.panel)
            else ("on this layout" if n == 1 else f"on all {n} layouts")
        )
        change = f"with its {term} {fit.how}"
        others = evidence.alternatives(fit)
        if others:  # say so when the layouts do not tell the factor apart
            change += f" (or {', or '.join(others)}: the layouts tried do not tell these apart)"
        if fit.relation.added and term in figure.term_hints:  # a term the planner does not
            count = fit.factor if fit.factor is not None else fit.relation.factor({})  # count
            change = f"plus {count:.3g} {figure.term_hints[term]}"
        elif fit.relation.added:  # the planner's figure with a setting miscounted
            change = fit.relation.label
        seen = f"yours equal the planner's figures {change} {where}"
        if evidence.unit_mistake:
            factor = dict((n_, v) for v, n_ in figure.known[WHOLE])[evidence.unit_mistake]
            seen = (
                f"yours are {factor:.4g} times the planner's figures {change} "
                f"{where}: two mistakes. First, {hint_text(figure.hints, evidence.unit_mistake)} "
                "Second"
            )
        if fit.variant:
            return f"{seen}: {hint_text(figure.hints, fit.variant)}"
        note = ""
        if term == WHOLE and fit.factor is not None and figure.unit == "GiB":
            note = _divisor_reading(fit.factor)
        if fit.factor is not None and term in BYTES_PER_PARAMETER:
            count = BYTES_PER_PARAMETER[term]
            note = (
                f" ({count * fit.factor:.3g} bytes per parameter where the planner counts {count})"
            )
        return f"{seen}{note}. The planner counts {figure.term_hints[term]}"
    if len(evidence.layouts) == 1:
        return _breakdown_hint(figure, evidence, fit_names=[f.variant for f in evidence.fits])
    if evidence.combined:
        changes = " and ".join(f"its {term} x {factor:.4g}" for term, factor in evidence.combined)
        causes = []
        for term, factor in evidence.combined:
            named = _known_cause(figure.known, term, factor)
            causes.append(
                hint_text(figure.hints, named[0])
                if named
                else f"the planner counts for the {term} {figure.term_hints[term]}"
            )
        return (
            f"yours equal the planner's figures with two terms changed, {changes}, on all {n} "
            "layouts tried. " + " ".join(c[0].upper() + c[1:] for c in causes)
        )
    if max(evidence.yours) <= min(evidence.yours) * 1.01:
        return (
            f"yours are {evidence.yours[0]:.3g} {figure.unit} on all {n} layouts tried, the "
            f"planner's from {min(evidence.planner):.3g} to {max(evidence.planner):.3g} "
            f"{figure.unit}: your function does not compute from the layout it is given. "
            + figure.generic[0].upper()
            + figure.generic[1:]
        )
    if evidence.off_on:
        where = evidence.off_on
        pairs = [
            (y, p)
            for y, p in zip(evidence.yours, evidence.planner, strict=True)
            if not _close(y, p, evidence.off_tol)
        ]
        gaps = sorted(y - p for y, p in pairs)
        ratios = sorted(y / p for y, p in pairs)
        by = (
            f"{gaps[0]:+.3g} {figure.unit}"
            if math.isclose(gaps[0], gaps[-1], rel_tol=0.02)
            else f"{gaps[0]:+.3g} to {gaps[-1]:+.3g} {figure.unit}, x {ratios[0]:.3g} to "
            f"{ratios[-1]:.3g}"
        )
        check = figure.setting_terms.get(where, figure.generic)
        return (
            f"yours are right on the {n - len(pairs)} layouts tried but those {where}, and off on "
            f"all {len(pairs)} of those ({by}): check what you count for layouts {where}: "
            f"{check}"
        )
    if evidence.responses:
        r = evidence.responses[0]
        same = max(r.yours) <= min(r.yours) * 1.01
        yours = (
            f"yours stay at {r.yours[0]:.3g} {figure.unit} (within 1%)"
            if same
            else f"yours go {_series(r.yours, figure.unit)}"
        )
        text = (
            f"when only {r.setting} changes ({', '.join(r.values)}), {yours}, the planner's "
            f"{_series(r.planner, figure.unit)}: check what depends on {r.setting}, "
            f"{figure.setting_terms[r.setting]}"
        )
        if evidence.matched:
            text += f" (yours respond as the planner's to {', '.join(evidence.matched)})"
        return text + "."
    ratios = [y / p for y, p in zip(evidence.yours, evidence.planner, strict=True)]
    seen = (
        f"yours respond to each setting as the planner's do, but are {min(ratios):.3g} to "
        f"{max(ratios):.3g} times them"
    )
    if all(not _close(r, 1.0, figure.tol) for r in ratios):
        return f"{seen}: a term that is off on every layout. {figure.generic}"
    return (  # right on some layouts, off on others
        f"{seen}, right on some layouts: compare each of your terms with the planner's on the "
        f"layouts listed above. {figure.generic}"
    )


def _other_best(x: parallelism.Layout, best: parallelism.Layout) -> bool:
    """Whether the planner's best layout is another than the evaluated ``x``."""
    return not (
        _close(x.step_time, best.step_time, 1e-9)
        and _close(x.memory_per_gpu, best.memory_per_gpu, 1e-9)
    )


def _best_layout_copied(name: str, best: parallelism.Layout) -> str:
    """The hint when a defence's figure is the planner's for its best layout, not the answer's."""
    return (
        f"your {name} is the planner's figure for its best layout ({best.short()}), not for "
        "yours: the defence predicts for the layout it defends, `my_layout()`, with your own "
        "prediction functions."
    )


def _breakdown_hint(figure: Figure, evidence: Evidence, fit_names: list[str]) -> str:
    """For one layout (a defence): the planner's terms, and the known causes that would give
    the figure when there are several."""
    (layout,) = evidence.layouts
    terms = figure.parts(layout)
    parts = " + ".join(f"{k} {value:.3g}" for k, value in terms.items() if value > 0)
    text = f"the planner's {evidence.planner[0]:.3g} {figure.unit} for it are {parts}"
    names = list(dict.fromkeys(n for n in fit_names if n))
    if "eager" in names and "scores_kept" in names:  # no selective recomputation: the same
        names.remove("scores_kept")
    if names:
        text += "; each of these mistakes would give your figure: " + "; ".join(
            hint_text(figure.hints, n) for n in names
        )
    return text + (
        ". Compare each of your terms with these (your prediction function's check tells "
        "them apart on several layouts)."
    )


# --- the memory per GPU ---------------------------------------------------------------------

#: What a term may wrongly be taken times or divided by, one setting or two at a time: a
#: relation of this family names no cause of its own (its hint is what the planner counts for
#: the term), only what was observed: how the term responds to the layout unlike the planner's.
MEMORY_SCALED_TERMS = (
    "bf16 weights",
    "gradients",
    "optimizer states",
    "model states",
    "activations",
    "ZeRO-3 gathered layers",
)
STEP_SETTING_PARTS = (
    "compute",
    "tensor-parallel all-reduces",
    "bubble",
    "pipeline sends",
    "data-parallel traffic",
)
SCALINGS = (
    ("tp", lambda q: q["tp"]),
    ("pp", lambda q: q["pp"]),
    ("(tp x pp)", lambda q: q["tp"] * q["pp"]),
    ("dp", lambda q: q["dp"]),
    ("m", lambda q: q["m"]),
    ("the micro-batch size b", lambda q: q["b"]),
)


def scaled(terms: tuple[str, ...], named: tuple[Relation, ...]) -> tuple[Relation, ...]:
    """``named`` and, for each of ``terms``, the term taken times and divided by each of
    :data:`SCALINGS` where ``named`` has no such relation (they name no cause: ``variant``
    empty)."""
    have = {(r.term, r.label) for r in named}
    family = []
    for term in terms:
        for name, factor in SCALINGS:
            for label, f in (
                (f"x {name}", factor),
                (f"/ {name}", lambda q, factor=factor: 1 / factor(q)),
            ):
                if (term, label) not in have:
                    family.append(Relation(term, label, f))
    return (*named, *family)


MEMORY_RELATIONS = (
    *(
        Relation(term, "x a constant")
        for term in (
            WHOLE,
            "bf16 weights",
            "gradients",
            "optimizer states",
            "weights and gradients",
            "model states",
            "model states ZeRO shards",
            "activations",
            "ZeRO-3 gathered layers",
        )
    ),
    Relation("model states", "x (tp x pp)", lambda q: q["tp"] * q["pp"], "not_split"),
    Relation("model states", "x tp", lambda q: q["tp"], "states_not_tp"),
    Relation("model states", "x pp", lambda q: q["pp"], "states_not_pp"),
    Relation("model states", "/ v", lambda q: 1 / q["v"], "states_over_v"),
    Relation("model states ZeRO shards", "x dp", lambda q: q["dp"], "no_zero"),
    Relation(
        "model states ZeRO shards",
        "/ (tp x pp)",
        lambda q: 1 / (q["tp"] * q["pp"]),
        "over_all_gpus",
    ),
    Relation("model states ZeRO keeps whole", "/ dp", lambda q: 1 / q["dp"], "all_sharded"),
    # one term sharded over dp one ZeRO stage too early, or left whole one stage too late (not
    # the weights under ZeRO-3: on the layouts tried, the same figures as its gathered layers x a
    # constant)
    *(
        Relation(
            term,
            f"{label} on ZeRO-{stage} layouts",
            lambda q, stage=stage, early=label == "/ dp": (
                (1 / q["dp"] if early else q["dp"]) if q["zero"] == stage else 1.0
            ),
            variant,
        )
        for term, label, stage, variant in (
            ("gradients", "/ dp", 1, "grads_zero1"),
            ("bf16 weights", "/ dp", 2, "weights_zero2"),
            ("optimizer states", "x dp", 1, "optimizer_zero1"),
            ("gradients", "x dp", 2, "grads_zero2"),
        )
    ),
    Relation(
        "activations",
        "x (micro-batches per rank / micro-batches in flight)",
        lambda q: q["m"] / q["in_flight"],
        "whole_batch",
    ),
    Relation(
        "activations",
        "x (m / the micro-batches in flight) on pipelined layouts",
        lambda q: q["m"] / q["in_flight"] if q["pp"] > 1 else 1.0,
        "all_in_flight",
    ),
    Relation(
        "activations",
        "/ the micro-batches in flight",
        lambda q: 1 / q["in_flight"],
        "one_in_flight",
    ),
    Relation("activations", "x m", lambda q: q["m"], "batch_as_micro"),
    Relation(
        "activations",
        "x (dp x m / the micro-batches in flight)",
        lambda q: q["dp"] * q["m"] / q["in_flight"],
        "global_batch",
    ),
    Relation("activations", "x tp", lambda q: q["tp"], "activations_not_split"),
    Relation("activations", "x pp", lambda q: q["pp"], "all_layers"),
    Relation(
        "activations",
        "as without recomputation",
        lambda q: q["no_recompute"],
        "no_recompute",
    ),
    Relation(
        "activations",
        "as full recomputation where the layout says selective",
        lambda q: q["selective_as_full"],
        "selective_as_full",
    ),
    Relation("activations", "with the s x s scores kept", lambda q: q["eager"], "eager"),
    Relation("activations", "with dropout masks", lambda q: q["dropout"], "dropout"),
    Relation(
        "activations",
        "as activation_bytes_per_layer's defaults count them (eager, dropout masks)",
        lambda q: q["defaults"],
        "eager",
    ),
    Relation(
        "activations",
        "without sequence parallelism",
        lambda q: q["no_sequence_parallel"],
        "no_sequence_parallel",
    ),
    Relation(
        "activations",
        "without sequence parallelism where layers are not recomputed",
        lambda q: q["no_sequence_parallel_kept"],
        "no_sequence_parallel",
    ),
    Relation(
        "activations",
        "counted as p micro-batches in flight (v p + p - 1 chunks interleaved), "
        "without the min() with m",
        lambda q: q["no_min"],
        "no_min",
    ),
    Relation(
        "activations",
        "counted as p micro-batches in flight on 1F1B layouts, without the min() with m",
        lambda q: q["no_min_1f1b"],
        "no_min_1f1b",
    ),
    Relation(
        "activations",
        "counted as v p + p - 1 chunks in flight on interleaved layouts, without the min() "
        "with v m",
        lambda q: q["no_min_interleaved"],
        "no_min_interleaved",
    ),
    Relation(
        "activations",
        "counted with the micro-batches in flight from m = 256 / dp (b times the planner's m)",
        lambda q: q["m_without_b"],
        "m_without_b",
    ),
    Relation(
        "activations",
        "x v (each chunk counted as a whole stage's L/p layers)",
        lambda q: q["v"],
        "chunk_as_stage",
    ),
    Relation(
        "activations",
        "x (1F1B's min(p, m) over the interleaved chunks in flight)",
        lambda q: q["as_1f1b"],
        "as_1f1b",
    ),
    Relation(
        "activations",
        "with the micro-batches (or chunks) in flight on every stage added up",
        lambda q: q["all_stages"],
        "all_stages",
    ),
    Relation(
        "activations",
        "counted as min(p - 1, m) micro-batches in flight on 1F1B layouts",
        lambda q: q["warmup_only"],
        "warmup_only",
    ),
    Relation(
        "activations",
        "counted one micro-batch short in flight on 1F1B layouts",
        lambda q: q["one_fewer_1f1b"],
        "warmup_only",
    ),
    Relation("ZeRO-3 gathered layers", "x tp", lambda q: q["tp"], "gathered_not_split"),
    Relation(SCORES, "x a known count of bytes", added=True),
    Relation(SCORES_EAGER, "x a known count of bytes", added=True),
)
MEMORY_RELATIONS = scaled(MEMORY_SCALED_TERMS, MEMORY_RELATIONS)
#: Constant factors whose cause is known, per term.
MEMORY_KNOWN = {
    WHOLE: (
        (2**30 / 1e9, "gigabytes"),
        (2**30, "bytes"),
        (1024, "mebibytes"),
        (2**30 / 1e6, "megabytes"),
    ),
    "optimizer states": ((0, "no_optimizer"), (1 / 3, "moments_left_out"), (2 / 3, "no_master")),
    "bf16 weights": ((2, "fp32_weights"),),
    "gradients": ((2, "fp32_weights"),),
    "weights and gradients": ((2, "fp32_weights"),),
    "activations": ((0, "no_activations"), (2, "fp32_activations")),
    "ZeRO-3 gathered layers": ((0, "no_gathered"),),
    # bytes per score: the bf16 softmax output (2), in fp32 (4), with dropout's mask and output
    # (5, Korthikanti et al. 2022's 5as^2b)
    SCORES: ((2, "scores_kept"), (4, "scores_kept"), (5, "scores_kept")),
    SCORES_EAGER: ((2, "eager"), (4, "eager"), (5, "eager")),
}

_STAGES = (
    "ZeRO-1 shards the optimizer states over dp, ZeRO-2 the gradients too, ZeRO-3 the bf16 "
    "weights too (ZeRO, sec. 5; gu.memory.model_state_bytes(..., dp=, zero_stage=))"
)
MEMORY_HINTS = {
    "grads_zero1": (
        "the gradients are sharded one ZeRO stage too early: under ZeRO-1 every rank keeps all "
        f"the gradients of the parameters it holds, 2 bytes each; {_STAGES}."
    ),
    "weights_zero2": (
        "the bf16 weights are sharded one ZeRO stage too early: under ZeRO-2 every rank keeps "
        f"all the weights of the parameters it holds, 2 bytes each; {_STAGES}."
    ),
    "optimizer_zero1": (
        f"the optimizer states are left whole under ZeRO-1, the stage that shards them: {_STAGES}."
    ),
    "grads_zero2": (
        f"the gradients are left whole under ZeRO-2, the stage that shards them: {_STAGES}."
    ),
    "no_optimizer": (
        "the optimizer states are missing: mixed-precision Adam keeps K = 12 bytes per parameter "
        "(fp32 master weights, momentum and variance) beside the 2 + 2 of bf16 weights and "
        "gradients (ZeRO, sec. 3.1)."
    ),
    "moments_left_out": (
        "that is 4 bytes of optimizer state per parameter, the fp32 master weights alone: Adam "
        "also keeps a momentum and a variance, 4 bytes each, so K = 12 (ZeRO, sec. 3.1)."
    ),
    "no_master": (
        "that is 8 bytes of optimizer state per parameter, Adam's momentum and variance: "
        "mixed-precision training also keeps fp32 master weights, 4 bytes, so K = 12 (ZeRO, "
        "sec. 3.1)."
    ),
    "fp32_weights": (
        "the weights and gradients a GPU computes with are bf16, 2 bytes each: the fp32 master "
        "copy is already one of the optimizer's K = 12 bytes."
    ),
    "not_split": (
        "model states count only the parameters this GPU holds: tensor parallelism and the "
        "pipeline divide the model, params / (tp x pp), before ZeRO shards anything."
    ),
    "states_not_tp": (
        "model states count only the parameters this GPU holds: tensor parallelism divides each "
        "layer's matrices over the t GPUs, params / (tp x pp)."
    ),
    "states_not_pp": (
        "model states count only the parameters this GPU holds: each pipeline stage holds L/p "
        "of the layers, params / (tp x pp)."
    ),
    "states_over_v": (
        "interleaving does not shrink the parameters a GPU holds: its v chunks of L/(p v) "
        "layers each are still L/p layers, so the model states stay params / (tp x pp), not "
        "divided by v too."
    ),
    "no_zero": (
        "the ZeRO stage shards over the dp ranks: stage 1 divides the optimizer states by dp, "
        "stage 2 the gradients too, stage 3 the weights too (gu.memory.model_state_bytes(..., "
        "dp=, zero_stage=))."
    ),
    "over_all_gpus": (
        "ZeRO shards over the dp ranks that hold copies of the same parameters, not over all 256 "
        "GPUs: the sharded states are bytes x params / (tp x pp) / dp; dividing by 256 divides "
        "them by tp x pp once more."
    ),
    "all_sharded": (
        "only ZeRO-3 divides everything by dp: stage 1 shards the optimizer states alone, stage 2 "
        "the optimizer states and gradients; the bf16 weights stay whole."
    ),
    "no_recompute": (
        "with full recomputation a layer keeps only its input, 2sbh bytes (/t with sequence "
        "parallelism), not its whole activations: recompute changes the per-layer count."
    ),
    "one_in_flight": (
        "the first pipeline stage holds the activations of several micro-batches at once: 1F1B "
        "min(p, m) micro-batches; interleaved min(v m, v p + p - 1) chunks of L/(p v) layers "
        "(gu.pipeline.in_flight(gu.pipeline.interleaved(p, m, v))[0])."
    ),
    "all_in_flight": (
        "that is GPipe's memory, all m micro-batches held: 1F1B runs each backward early, so the "
        "first stage holds at most min(p, m) micro-batches (interleaved: min(v m, v p + p - 1) "
        "chunks)."
    ),
    "whole_batch": (
        "that holds every micro-batch of the rank's batch at once; each micro-batch's backward "
        "frees its activations, so only those in flight are held: 1 without a pipeline, "
        "min(p, m) with 1F1B, min(v m, v p + p - 1) chunks of L/(p v) layers interleaved."
    ),
    "batch_as_micro": (
        "a layer's activations are those of one micro-batch, b = micro_batch_size sequences, "
        "not of the rank's m x b: pass micro_batch_size to activation_bytes_per_layer and "
        "multiply by the micro-batches in flight (1 without a pipeline, min(p, m) with 1F1B)."
    ),
    "global_batch": (
        "each data-parallel rank holds activations for its own micro-batches only (the batch's "
        "256 sequences are split over dp), and only for those in flight: 1 without a pipeline, "
        "min(p, m) with 1F1B, min(v m, v p + p - 1) chunks of L/(p v) layers interleaved."
    ),
    "no_activations": (
        "only model states: add the activations kept for the backward pass (gu.memory."
        "activation_bytes_per_layer x the layers per stage x the micro-batches in flight)."
    ),
    "activations_not_split": (
        "with tensor and sequence parallelism every activation of a layer is split over the t "
        "GPUs: pass tp= and sequence_parallel=True (for t > 1) to activation_bytes_per_layer."
    ),
    "all_layers": (
        "a GPU keeps the activations of its own stage's L/p layers, not of all 80 layers."
    ),
    "fp32_activations": (
        "twice the activations, as 4-byte (fp32) values would give: the planner counts 16-bit "
        "activations, as gu.memory.activation_bytes_per_layer does (a layer's input alone is "
        "2 s b h bytes)."
    ),
    "selective_as_full": (
        "selective recomputation drops only what is cheap to recompute, the attention scores "
        "(which flash attention never stores anyway): each layer still keeps its other "
        "activations, about 32 s b h / t bytes with sequence parallelism (gu.memory); only full "
        'recomputation keeps just the layer\'s input (recompute="selective" in '
        "gu.memory.activation_bytes_per_layer)."
    ),
    "dropout": (
        "Llama trains without dropout, so no dropout masks are kept: dropout_masks=False in "
        "gu.memory.activation_bytes_per_layer (its default, True, is GPT's)."
    ),
    "no_sequence_parallel": (
        "with sequence parallelism (the planner's, for t > 1) the norms' inputs and the "
        "residual stream, kept whole by tensor parallelism alone, are split over the t GPUs "
        "too: sequence_parallel=True in gu.memory.activation_bytes_per_layer."
    ),
    "no_min": (
        "the first stage holds min(p, m) micro-batches (1F1B) or min(v m, v p + p - 1) chunks "
        "(interleaved): with fewer micro-batches than that, all m (v m chunks) are in flight, "
        "no more."
    ),
    "no_min_1f1b": (
        "1F1B's first stage holds min(p, m) micro-batches: with fewer micro-batches than stages "
        "(m < p) only m of them exist, all in flight, not p."
    ),
    "all_stages": (
        "a GPU holds the activations of its own stage only: count what the first stage holds "
        "at once (the most of any stage), min(p, m) micro-batches for 1F1B or min(v m, v p + "
        "p - 1) chunks interleaved (gu.pipeline.in_flight(...)[0]), not the sum over the "
        "stages."
    ),
    "warmup_only": (
        "1F1B's first stage runs p - 1 warm-up forwards and then one more forward before its "
        "first backward frees anything, so it holds min(p, m) micro-batches at once, one more "
        "than the warm-up's p - 1 (gu.pipeline.in_flight(gu.pipeline.one_f_one_b(p, m))[0])."
    ),
    "chunk_as_stage": (
        "an interleaved chunk holds L/(p v) layers, a v-th of a stage's L/p: the first stage "
        "holds min(v m, v p + p - 1) chunks of L/(p v) layers each."
    ),
    "no_min_interleaved": (
        "the interleaved first stage holds min(v m, v p + p - 1) chunks of L/(p v) layers: "
        "v p + p - 1 is Megatron's warm-up when there are enough micro-batches, but with m = p "
        "there are only v m chunks to run, and all of them are in flight, no more."
    ),
    "m_without_b": (
        "the micro-batches per data-parallel rank are m = 256 / (dp x b), sequences / (dp x "
        "micro_batch_size): counted as 256 / dp, m is b times too large, so the min() with m "
        "that limits the micro-batches (chunks) in flight when they are few does not bind."
    ),
    "as_1f1b": (
        "the interleaved schedule warms up further than 1F1B: the first stage holds "
        "min(v m, v p + p - 1) chunks of L/(p v) layers, not min(p, m) micro-batches "
        "(gu.pipeline.in_flight(gu.pipeline.interleaved(p, m, v))[0])."
    ),
    "gathered_not_split": (
        "with tensor parallelism a GPU gathers only its 1/t of each layer's weights: the planner "
        "counts 2 x 2 x LLAMA.layer_params / t bytes for the two gathered layers."
    ),
    "eager": (
        "the planner counts a fused (flash) attention, which keeps no s x s scores: "
        'attention="flash" in gu.memory.activation_bytes_per_layer (and Llama has no dropout: '
        "dropout_masks=False)."
    ),
    "scores_kept": (
        "the s x s attention scores kept, even on layers with selective recomputation. The "
        "planner counts a fused (flash) attention, which never stores them: "
        "its backward recomputes them from Q, K and V and one fp32 log-sum-exp per head and "
        'token (4 a s b / t bytes a layer), attention="flash" in '
        "gu.memory.activation_bytes_per_layer (and Llama has no dropout: dropout_masks=False); "
        "even eager attention's scores are recomputed, not kept, with selective recomputation."
    ),
    "no_gathered": (
        "ZeRO-3 also holds the full bf16 weights of the layers it has gathered: the planner "
        "counts two layers, 2 x 2 x 12 h^2 / t bytes."
    ),
    "gigabytes": "the answer is in GiB (2**30 bytes); you divided by 1e9.",
    "megabytes": "the answer is in GiB (2**30 bytes); you divided by 1e6 (MB).",
    "mebibytes": "the answer is in GiB (bytes / 2**30); you returned MiB (bytes / 2**20).",
    "bytes": "return GiB (bytes / 2**30), not bytes.",
}
MEMORY_TERM_HINTS = {
    WHOLE: (
        "each term in GiB (bytes / 2**30): a factor on the whole figure is a unit or a constant "
        "that multiplies every term."
    ),
    "bf16 weights": (
        "2 bytes per parameter this GPU holds, params / (tp x pp), divided by dp only with ZeRO-3."
    ),
    "gradients": "bf16 gradients, 2 bytes per parameter held, divided by dp from ZeRO-2 on.",
    "optimizer states": (
        "Adam's 12 bytes per parameter held (fp32 master weights, momentum and variance), "
        "divided by dp from ZeRO-1 on."
    ),
    "weights and gradients": (
        "2 + 2 bytes per parameter held (bf16), ZeRO-2 dividing the gradients by dp, ZeRO-3 "
        "the weights too."
    ),
    "model states": (
        "16 bytes per parameter held, params / (tp x pp), sharded over dp as the ZeRO stage says "
        "(gu.memory.model_state_bytes)."
    ),
    "model states ZeRO shards": (
        "these divided by dp: stage 1 the optimizer's 12 bytes per parameter held, stage 2 the "
        "gradients' 2 too, stage 3 the weights' 2 too."
    ),
    "model states ZeRO keeps whole": (
        "the states the stage does not shard whole: at stage 1 the bf16 weights and gradients, "
        "at stage 2 the weights."
    ),
    "activations": (
        "gu.memory.activation_bytes_per_layer(s, b, h, a, tp=t, sequence_parallel=t > 1, "
        'recompute=..., attention="flash", dropout_masks=False) x the L/p layers of a stage x '
        "the micro-batches in flight (1F1B: min(p, m); interleaved: min(v m, v p + p - 1) "
        "chunks of L/(p v) layers)."
    ),
    "ZeRO-3 gathered layers": "two gathered layers with ZeRO-3, 2 x 2 x LLAMA.layer_params / t.",
    # added terms: the phrase after "yours equal the planner's figures plus <bytes>"
    SCORES: (
        "bytes for each of the a s x s attention scores of every layer and micro-batch in flight "
        "that is not fully recomputed (a s^2 b / t scores a layer: a term growing with s^2 "
        "where the planner's activations grow with s)"
    ),
    SCORES_EAGER: (
        "bytes for each of the a s x s attention scores of every layer and micro-batch in flight "
        "that is not recomputed (a s^2 b / t scores a layer: a term growing with s^2 where the "
        "planner's activations grow with s)"
    ),
}
MEMORY_SETTING_TERMS = {
    "without a pipeline (pp = 1)": (
        "the activations of one micro-batch of all L layers: without a pipeline a rank runs its "
        "m micro-batches one after another (gradient accumulation), and each one's backward "
        "frees its activations before the next forward, so one is held at a time."
    ),
    "with 1F1B (pp > 1, v = 1)": (
        "the micro-batches in flight on the first stage, min(p, m): p - 1 warm-up forwards and "
        "one more before its first backward (gu.pipeline.in_flight(gu.pipeline.one_f_one_b(p, "
        "m))[0])."
    ),
    "interleaved (v > 1)": (
        "the chunks in flight, min(v m, v p + p - 1) of L/(p v) layers each "
        "(gu.pipeline.in_flight(gu.pipeline.interleaved(p, m, v))[0])."
    ),
    "the ZeRO stage": (
        "which model states it divides by dp (1: the optimizer's, 2: the gradients' too, 3: the "
        "weights' too, and two gathered layers)"
    ),
    "the micro-batch size": (
        "the activations per layer (they grow with b) and the micro-batches in flight, "
        "min(p, m) with m = 256 / (dp x b)"
    ),
    "recompute": "the activations per layer (full recomputation keeps only each layer's input)",
    "tp (dp changing with it)": (
        "the params / (tp x pp) a GPU holds, the activations per layer (split over t with "
        "sequence parallelism) and the dp that ZeRO shards over"
    ),
    "pp (dp changing with it)": (
        "the params / (tp x pp) a GPU holds, the L/p layers of a stage, the micro-batches in "
        "flight, min(p, m), and the dp that ZeRO shards over"
    ),
    "the interleave v": "the chunks in flight, min(v m, v p + p - 1) of L/(p v) layers each",
    "the interleave v with m = p": (
        "the chunks in flight, min(v m, v p + p - 1) of L/(p v) layers each: with m = p there "
        "are only v m of them, fewer than the warm-up's v p + p - 1"
    ),
    "parts": (
        "bf16 weights",
        "gradients",
        "optimizer states",
        "activations",
        "ZeRO-3 gathered layers",
    ),
}
MEMORY_GENERIC = (
    "memory per GPU = model states of the params / (tp x pp) this GPU holds, sharded as the ZeRO "
    "stage says (gu.memory.model_state_bytes) + activations per layer (gu.memory."
    'activation_bytes_per_layer with tp, sequence_parallel=tp > 1, recompute, attention="flash", '
    "dropout_masks=False) x the layers per stage x the micro-batches (or chunks) in flight "
    "(+ two gathered layers for ZeRO-3)."
)


def _probe(setting: str, values: tuple[str, ...], layouts: tuple[dict, ...]):
    return (setting, values, layouts)


#: Layouts that change one setting at a time (dp changes with tp or pp: they use 256 GPUs).
MEMORY_PROBES = (
    _probe(
        "the ZeRO stage",
        ("0", "1", "2", "3"),
        tuple(_layout(32, 8, 1, z, recompute="full") for z in range(4)),
    ),
    _probe(
        "the micro-batch size", ("1", "2", "4"), tuple(_layout(8, 4, 8, 1, b=b) for b in (1, 2, 4))
    ),
    _probe(
        "recompute",
        ("none", "full"),
        tuple(_layout(8, 4, 8, 1, recompute=r) for r in ("none", "full")),
    ),
    _probe(
        "tp (dp changing with it)",
        ("2", "4", "8"),
        (_layout(16, 2, 8, 1), _layout(8, 4, 8, 1), _layout(4, 8, 8, 1)),
    ),
    _probe(
        "pp (dp changing with it)",
        ("2", "4", "8"),
        (_layout(32, 4, 2, 1), _layout(16, 4, 4, 1), _layout(8, 4, 8, 1)),
    ),
    _probe("the interleave v", ("1", "2", "5"), tuple(_layout(8, 4, 8, 1, v=v) for v in (1, 2, 5))),
    # m = p with b = 1 (so t = 1: b m = t p on 256 GPUs): the only layouts where the min() with
    # v m binds while m = 256 / dp (b left out) is still right
    _probe(
        "the interleave v with m = p",
        ("1", "2", "5"),
        tuple(_layout(32, 1, 8, 1, v=v) for v in (1, 2, 5)),
    ),
)

MEMORY = Figure(
    "planner_memory_prediction",
    "memory per GPU",
    "GiB",
    MEMORY_PANEL,
    MEMORY_PROBES,
    memory_terms,
    MEMORY_RELATIONS,
    MEMORY_KNOWN,
    MEMORY_TOL,
    MEMORY_HINTS,
    MEMORY_TERM_HINTS,
    MEMORY_SETTING_TERMS,
    MEMORY_GENERIC,
    parts=lambda layout: {k: memory_terms(layout)[k] for k in MEMORY_SETTING_TERMS["parts"]},
)


# --- the step time --------------------------------------------------------------------------


def bandwidth_step_terms(layout: dict) -> dict[str, float]:
    """:func:`step_terms` with every collective at its bandwidth alone."""
    return step_terms(layout, latency=False)


STEP_RELATIONS = (
    *(
        Relation(term, "x a constant")
        for term in (
            WHOLE,
            "compute",
            "tensor-parallel all-reduces",
            "busy time (compute and all-reduces)",
            "bubble",
            "pipeline sends",
            "data-parallel traffic",
            "communication",
        )
    ),
    Relation("compute", "x (tp x pp)", lambda q: q["tp"] * q["pp"], "not_divided"),
    Relation("compute", "x dp", lambda q: q["dp"], "not_per_replica"),
    Relation("compute", "as the forward pass alone", lambda q: q["forward_share"], "forward_only"),
    Relation(
        "compute",
        "without the recomputed forward",
        lambda q: q["recompute_flops"],
        "no_recompute_flops",
    ),
    Relation("compute", "as 6N (8N) FLOPs per token", lambda q: q["params_only"], "params_only"),
    Relation("compute", "with causal attention's half scores", lambda q: q["causal"], "causal"),
    Relation(
        "tensor-parallel all-reduces", "x pp (all L layers)", lambda q: q["pp"], "tp_all_layers"
    ),
    Relation(
        "tensor-parallel all-reduces",
        "x 2 / (4, or 6 with full recompute)",
        lambda q: 2 / q["passes"],
        "tp_forward_only",
    ),
    Relation(
        "tensor-parallel all-reduces",
        "x 4 / (4, or 6 with full recompute)",
        lambda q: 4 / q["passes"],
        "tp_no_recompute",
    ),
    Relation(
        "data-parallel traffic",
        "x m on ZeRO-0/1 layouts",
        lambda q: q["m"] if q["zero"] < 2 else 1.0,
        "allreduce_per_micro",
    ),
    Relation(
        "data-parallel traffic",
        "x 2 / (m + 1) on ZeRO-2 layouts",
        lambda q: 2 / (q["m"] + 1) if q["zero"] == 2 else 1.0,
        "zero2_once",
    ),
    Relation(
        "data-parallel traffic",
        "x (tp x pp)",
        lambda q: q["tp"] * q["pp"],
        "dp_whole_model",
    ),
    Relation("data-parallel traffic", "x tp", lambda q: q["tp"], "dp_not_tp"),
    Relation("data-parallel traffic", "x pp", lambda q: q["pp"], "dp_not_pp"),
    Relation(
        "data-parallel traffic",
        "x (2m + 1) / (m + 1) on ZeRO-2 layouts",
        lambda q: (2 * q["m"] + 1) / (q["m"] + 1) if q["zero"] == 2 else 1.0,
        "zero2_all_reduce",
    ),
    Relation(
        "data-parallel traffic",
        "as if each group's GPUs shared nodes (NVLink inside, 8 NICs a node across)",
        lambda q: q["dp_packed"],
        "dp_packed",
    ),
    Relation(
        M_WHOLE_BATCH,
        "as with m = 256 / b micro-batches per rank, dp times the planner's",
        lambda q: 1.0,
        "m_whole_batch",
        added=True,
    ),
    Relation(
        M_TOKENS,
        "as with m = 2**21 / (dp x b) micro-batches per rank, counted in tokens",
        lambda q: 1.0,
        "m_tokens",
        added=True,
    ),
    Relation(
        M_WITHOUT_B,
        "as with m = 256 / dp micro-batches per rank, b times the planner's",
        lambda q: 1.0,
        "m_without_b",
        added=True,
    ),
    Relation(
        "busy time (compute and all-reduces)",
        "/ m (one micro-batch's)",
        lambda q: 1 / q["m"],
        "one_micro",
    ),
    Relation(
        "bubble",
        "taken with (p - 1)/(v m) as its share of the step (the large-m approximation)",
        lambda q: q["large_m_bubble"],
        "large_m_bubble",
    ),
    Relation("bubble", "x (1 - bubble)", lambda q: 1 - q["bubble"], "bubble_times"),
    Relation(
        "busy time (compute and all-reduces)",
        "/ (1 - p/(v m + p - 1)) instead of / (1 - (p - 1)/(v m + p - 1))",
        lambda q: q["bubble_p"],
        "bubble_p",
    ),
    Relation(
        "bubble",
        "of the all-reduces alone (the compute not divided by 1 - bubble)",
        lambda q: q["tp_share"],
        "bubble_tp_only",
    ),
    Relation("bubble", "as without interleaving", lambda q: q["no_interleave"], "no_interleave"),
    Relation(
        "tensor-parallel all-reduces",
        "x v (each of the v chunks charged a whole stage's L/p layers)",
        lambda q: q["v"],
        "tp_chunk_as_stage",
    ),
)
STEP_RELATIONS = scaled(STEP_SETTING_PARTS, STEP_RELATIONS)
_SPEC = specs.get(JOB["gpu"])
#: NVLink's bandwidth over one NIC's (gu.specs): a term counted over the other link.
LINK_RATIO = _SPEC.nvlink_bandwidth / _SPEC.network_bandwidth
STEP_KNOWN = {
    WHOLE: ((1e3, "milliseconds"), (1e6, "microseconds")),
    # half the planner's compute time: the dense peak without MFU, or twice bf16's peak (FP8)
    "compute": (
        (0.5, "peak"),
        (0.5, "fp8_peak"),
        # the fp32 (non-tensor-core) peak in place of bf16's (TF32's, 2x, is left out: a factor
        # of 2 on compute has other causes)
        (_SPEC.bf16_dense_flops / _SPEC.fp32_flops, "fp32_peak"),
        # the time at peak multiplied by MFU = 0.5 instead of divided by it: 0.5 x 0.5
        (0.25, "mfu_times"),
        # the batch's FLOPs divided by the GPU count on top of the whole cluster's peak
        (1 / (JOB["gpus_per_node"] * JOB["nodes"]), "gpus_twice"),
        # the batch's FLOPs shared by the nodes instead of the GPUs: x GPUs per node
        (JOB["gpus_per_node"], "nodes_for_gpus"),
    ),
    "tensor-parallel all-reduces": ((0, "no_tp"), (LINK_RATIO, "link")),
    "data-parallel traffic": (
        (0, "no_dp"),
        (2, "fp32_grads"),
        (1 / LINK_RATIO, "link"),
        (LINK_RATIO, "link"),
    ),
    "bubble": ((0, "no_bubble"),),
    "pipeline sends": ((0, "no_pp"), (1 / LINK_RATIO, "link"), (LINK_RATIO, "link")),
    # the whole step divided by the planner's MFU (0.5, parallelism.evaluate's default)
    "communication": (
        (0, "no_comm"),
        (1 / inspect.signature(parallelism.evaluate).parameters["mfu"].default, "mfu_on_comm"),
        # every message counted in values, not bf16 bytes (2 each)
        (0.5, "values_not_bytes"),
    ),
}
STEP_HINTS = {
    "no_bubble": (
        "the pipeline bubble is missing: with p stages a fraction (p - 1)/(v m + p - 1) of the "
        "step idles, so the busy time is divided by 1 - bubble."
    ),
    "bubble_p": (
        "the idle share is (p - 1)/(v m + p - 1): the pipeline fills and drains over p - 1 "
        "idle slots out of v m + p - 1, not p of them; with p it idles even without a pipeline "
        "(1/(v m) at p = 1, where the planner has no bubble)."
    ),
    "bubble_tp_only": (
        "the bubble idles the GPU for the whole busy time's share: step = (compute + "
        "all-reduces) / (1 - bubble) + sends + data-parallel traffic; dividing the all-reduces "
        "alone (compute + tp / (1 - bubble): / binds before +) leaves the compute's bubble out."
    ),
    "bubble_times": (
        "the bubble is a fraction of the whole step, (p - 1)/(v m + p - 1) of it idle, so "
        "step = busy / (1 - bubble), not busy x (1 + bubble)."
    ),
    "peak": (
        "as at the GPU's dense peak: the planner assumes the matmuls reach MFU = 0.5 of it "
        "(gu.flops.peak_flops x 0.5), with 6N + 12 L h s FLOPs per token (8N + 16 L h s with "
        "full recompute)."
    ),
    "fp32_peak": (
        "as at the fp32 peak: the job's matmuls run in bf16 on the tensor cores, so "
        "MFU = 0.5 applies to the bf16 dense peak "
        f"({flops.peak_flops(JOB['gpu']) / 1e12:.0f} TFLOP/s, gu.flops.peak_flops(gpu)), "
        f"{_SPEC.bf16_dense_flops / _SPEC.fp32_flops:.1f}x the fp32 one."
    ),
    "mfu_times": (
        "as the time at peak multiplied by MFU = 0.5: MFU is the share of the peak the "
        "matmuls reach, so the compute time is FLOPs / (peak x 0.5), twice the time at peak, "
        "not half of it."
    ),
    "nodes_for_gpus": (
        f"as with the batch's FLOPs shared by the {JOB['nodes']} nodes instead of the "
        f"{JOB['gpus_per_node'] * JOB['nodes']} GPUs (x {JOB['gpus_per_node']}, the GPUs per "
        "node): every GPU computes its own share, the batch's FLOPs / (GPUs x peak x MFU)."
    ),
    "values_not_bytes": (
        "every message takes half its time: its size counted in values, not bytes. The "
        "collectives' cost model takes bytes, and a bf16 value is 2 bytes (activations s x b x h "
        "values are 2 s b h bytes, gradients 2 bytes per parameter)."
    ),
    "mfu_on_comm": (
        "x 1/MFU: the whole step was divided by MFU = 0.5, communication included. MFU is the "
        "share of the peak the matmuls reach: it divides the compute time only; the "
        "collectives and sends take their bytes over the link's bandwidth."
    ),
    "tp_chunk_as_stage": (
        "with interleaving a GPU runs v chunks of L/(p v) layers per micro-batch, L/p layers "
        "in all: its tensor-parallel all-reduces are those of L/p layers per micro-batch, "
        "however many chunks they are cut into, not v times that."
    ),
    "gpus_twice": (
        f"as with the batch's FLOPs divided by the {JOB['gpus_per_node'] * JOB['nodes']} GPUs "
        "twice: gu.flops.peak_flops(gpu, n_gpus=...) is already the whole cluster's peak, so "
        "divide the batch's FLOPs by it once (or by one GPU's peak x the GPU count)."
    ),
    "fp8_peak": (
        "as at a peak twice bf16's, FP8's (gu.flops.peak_flops(gpu, \"fp8\")): the job's "
        "matmuls run in bf16, so MFU = 0.5 applies to the bf16 dense peak "
        f"({flops.peak_flops(JOB['gpu']) / 1e12:.0f} TFLOP/s)."
    ),
    "zero2_all_reduce": (
        "ZeRO-2 reduce-scatters the gradients on every micro-batch (each rank keeps only its "
        "shard), half an all-reduce's traffic, (n - 1)/n of the 2 bytes per parameter held "
        "rather than 2 (n - 1)/n, then all-gathers the new weights once: (m + 1) x 2 bytes per "
        "parameter held per step, not 2m + 1 (gu.collectives)."
    ),
    "dp_packed": (
        "ranks are laid out TP innermost, then PP, then DP (Megatron-LM), so a data-parallel "
        "group's GPUs are tp x pp apart: with tp x pp >= 8 it has one GPU per node, and its "
        "collectives run over that GPU's own NIC "
        f"({_SPEC.network_bandwidth / 1e9:.0f} GB/s, 1/{LINK_RATIO:.0f} of NVLink's "
        f"{_SPEC.nvlink_bandwidth / 1e9:.0f} GB/s), not over NVLink inside a node and a "
        "node's 8 NICs across (gpus_per_node in gu.collectives.estimate_time: the group's GPUs "
        "per node)."
    ),
    "link": (
        f"x {LINK_RATIO:.0f} or / {LINK_RATIO:.0f} is NVLink's bandwidth over one NIC's "
        f"({_SPEC.nvlink_bandwidth / 1e9:.0f} / {_SPEC.network_bandwidth / 1e9:.0f} GB/s, "
        "gu.specs): that term runs over the other link in the planner. Tensor-parallel "
        "all-reduces stay inside a node (NVLink); pipeline sends cross nodes when tp x pp > 8; "
        "a data-parallel group's GPUs are tp x pp apart, so with tp x pp >= 8 it has one GPU "
        "per node and runs over that GPU's own NIC."
    ),
    "m_whole_batch": (
        "m is the number of micro-batches of one data-parallel rank, 256 / (dp x b): counted "
        "over the whole batch, 256 / b, it is dp times too large, which multiplies the "
        "tensor-parallel all-reduces, the pipeline sends (and ZeRO-2's reduce-scatters) by dp "
        "and shrinks the bubble (p - 1)/(v m + p - 1)."
    ),
    "m_tokens": (
        "m counts micro-batches of b sequences, 256 / (dp x b): dividing the batch's 2**21 "
        "tokens instead of its 256 sequences makes it s = 8,192 times too large, and with it "
        "the tensor-parallel all-reduces and the pipeline sends (and ZeRO-2's reduce-scatters), "
        "while the bubble (p - 1)/(v m + p - 1) all but vanishes."
    ),
    "m_without_b": (
        "the micro-batches per data-parallel rank are m = 256 / (dp x b), sequences / (dp x "
        "micro_batch_size): counted as 256 / dp, m is b times too large, which multiplies the "
        "tensor-parallel all-reduces (each already of b sequences), the pipeline sends (and "
        "ZeRO-2's reduce-scatters) by b and shrinks the bubble (p - 1)/(v m + p - 1)."
    ),
    "one_micro": (
        "that is one micro-batch's time: a data-parallel rank runs m = 256 / (dp x b) "
        "micro-batches a step, each with its compute and its 4 (6 with full recompute) "
        "all-reduces per layer of the stage, so the busy time (and the bubble it makes) is m "
        "times one micro-batch's."
    ),
    "large_m_bubble": (
        "(p - 1)/(v m) is the bubble's ratio to the busy time (its share of the step when m is "
        "large); its share of the step is (p - 1)/(v m + p - 1), so step = busy / (1 - "
        "(p - 1)/(v m + p - 1)) = busy x (1 + (p - 1)/(v m)), not busy / (1 - (p - 1)/(v m))."
    ),
    "forward_only": (
        "that counts the forward pass only, 2N FLOPs per token: the backward pass costs twice "
        "the forward, 6N + 12 L h s in all (gu.flops.hardware_flops_per_token)."
    ),
    "no_comm": (
        "communication is missing: in the planner's default nothing hides it (Megatron-LM's "
        "defaults), so tensor-parallel all-reduces, pipeline sends and data-parallel traffic add "
        "to the step."
    ),
    "no_tp": (
        "the tensor-parallel all-reduces are missing: 4 per layer and micro-batch (6 with full "
        "recompute) of 2 s b h bytes, on the critical path (gu.collectives)."
    ),
    "tp_forward_only": (
        "the backward pass all-reduces too: 2 all-reduces per layer and micro-batch forward and "
        "2 backward, 4 (6 with full recompute, whose repeated forward adds 2), not the forward's "
        "2 alone."
    ),
    "tp_no_recompute": (
        "full recomputation repeats the forward and so its 2 all-reduces: 6 per layer and "
        "micro-batch, not 4."
    ),
    "no_pp": (
        "the pipeline sends are missing: v m + p - 2 sends each way of the 2 s b h / t bytes of a "
        "micro-batch's activations, on the critical path (the network when tp x pp > 8)."
    ),
    "no_dp": (
        "the data-parallel traffic is missing: ZeRO-0/1 all-reduce the bf16 gradients once per "
        "step; ZeRO-2 reduce-scatters them on every micro-batch, (m + 1) x 2 bytes per parameter "
        "held; not hidden in the planner's default."
    ),
    "allreduce_per_micro": (
        "ZeRO-0 and ZeRO-1 accumulate the gradients over the m micro-batches and all-reduce them "
        "once per step, not once per micro-batch (only ZeRO-2, which keeps just its shard, "
        "reduce-scatters on every micro-batch)."
    ),
    "no_recompute_flops": (
        "full recomputation runs every forward twice: 8N + 16 L h s FLOPs per token instead of "
        "6N + 12 L h s (gu.flops.hardware_flops_per_token(..., recompute=))."
    ),
    "params_only": (
        "6N (8N with recompute) leaves out the attention scores, 12 L h s FLOPs per token, "
        "15% of the work at 8,192 tokens: use gu.flops.hardware_flops_per_token."
    ),
    "no_interleave": (
        "interleaving shortens the bubble: with v chunks per GPU it is (p - 1)/(v m + p - 1), "
        "not (p - 1)/(m + p - 1)."
    ),
    "not_per_replica": (
        "each model replica (tp x pp GPUs) processes only batch/dp tokens: divide the batch's "
        "FLOPs by all 256 GPUs."
    ),
    "not_divided": (
        "a replica's tp x pp GPUs share its FLOPs (t splits each matmul, p the layers): each "
        "GPU computes the batch's FLOPs / dp / (tp x pp), that is / 256."
    ),
    "zero2_once": (
        "ZeRO-2 keeps only its shard of the gradients, so it cannot accumulate them: it "
        "reduce-scatters them on every micro-batch, then all-gathers the new weights once, "
        "(m + 1) x 2 bytes per parameter held per step, not ZeRO-1's single all-reduce."
    ),
    "causal": (
        "the planner charges the whole s x s attention scores, as PaLM's count does "
        "(gu.flops.hardware_flops_per_token with causal=False, its default), the convention its "
        "MFU of 0.5 was calibrated in."
    ),
    "tp_all_layers": (
        "a GPU all-reduces only for the L/p layers of its own stage: 4 (6) all-reduces per layer "
        "of the stage and per micro-batch."
    ),
    "fp32_grads": (
        "the gradients data parallelism moves are bf16, 2 bytes per parameter held (ZeRO's "
        "count), not fp32's 4."
    ),
    "dp_whole_model": (
        "a data-parallel group reduces only the gradients of the parameters its GPUs hold, "
        "2 bytes x params / (tp x pp), not the whole model's: the other tp x pp - 1 shares are "
        "reduced at the same time by the other data-parallel groups (one per tensor- and "
        "pipeline-parallel rank)."
    ),
    "dp_not_tp": (
        "tensor parallelism splits every layer's matrices over the t GPUs, so each GPU holds "
        "and reduces over its data-parallel group only params / (tp x pp) gradients, "
        "2 bytes each."
    ),
    "dp_not_pp": (
        "each pipeline stage holds only its L/p layers, so its data-parallel group reduces only "
        "their gradients: params / (tp x pp), 2 bytes each, per GPU."
    ),
    "milliseconds": "return seconds, not milliseconds.",
    "microseconds": "return seconds, not microseconds.",
}
STEP_TERM_HINTS = {
    WHOLE: (
        "each term in seconds: a factor on the whole figure is a unit or a constant that "
        "multiplies every term."
    ),
    "compute": (
        "hardware FLOPs per token (gu.flops.hardware_flops_per_token with the layout's recompute "
        "and flash attention) x 2**21 tokens / (256 GPUs x peak x MFU 0.5), divided by "
        "1 - bubble."
    ),
    "tensor-parallel all-reduces": (
        "4 all-reduces (6 with full recompute) per layer of a stage and per micro-batch, of "
        "2 s b h bytes over the t GPUs of a node (gu.collectives), divided by 1 - bubble."
    ),
    "busy time (compute and all-reduces)": (
        "compute + tensor-parallel all-reduces, divided by 1 - bubble, bubble = "
        "(p - 1)/(v m + p - 1)."
    ),
    "bubble": "(compute + all-reduces) x bubble / (1 - bubble), bubble = (p - 1)/(v m + p - 1).",
    "pipeline sends": (
        "v m + p - 2 sends each way of 2 s b h / t bytes (over the network when tp x pp > 8)."
    ),
    "data-parallel traffic": (
        "with ZeRO-0/1 one all-reduce of the bf16 gradients a GPU holds per step; with ZeRO-2 a "
        "reduce-scatter per micro-batch and one all-gather; over the dp ranks (gu.collectives)."
    ),
    "communication": (
        "tensor-parallel all-reduces, pipeline sends and data-parallel traffic, none hidden "
        "(Megatron-LM's defaults)."
    ),
}
STEP_SETTING_TERMS = {
    "without a pipeline (pp = 1)": (
        "no bubble (p - 1 = 0 idle slots) and no pipeline sends: the step is compute + "
        "tensor-parallel all-reduces + data-parallel traffic."
    ),
    "with ZeRO-2": (
        "ZeRO-2's data-parallel traffic: a reduce-scatter of the whole gradient buffer, 2 bytes "
        "per parameter held, on every micro-batch, and one all-gather of the weights, over the "
        "dp ranks (gu.collectives.estimate_time takes the whole buffer's bytes for both)."
    ),
    "the ZeRO stage": (
        "the data-parallel traffic (ZeRO-0/1: one all-reduce per step; ZeRO-2: a reduce-scatter "
        "per micro-batch and one all-gather)"
    ),
    "the micro-batch size": (
        "m = 256 / (dp x b): the bubble (p - 1)/(v m + p - 1), the v m + p - 2 pipeline sends "
        "and the all-reduces per micro-batch, whose bytes grow with b"
    ),
    "recompute": (
        "the FLOPs per token (8N + 16 L h s with full recomputation) and the all-reduces per "
        "layer (6 instead of 4)"
    ),
    "tp (dp changing with it)": (
        "each GPU's compute (1/256 of the batch's), the all-reduces' size and count, the "
        "micro-batches m = 256 / (dp x b) and the data-parallel group"
    ),
    "pp (dp changing with it)": (
        "the bubble, the layers per stage whose all-reduces a GPU runs, the pipeline sends and "
        "the micro-batches m = 256 / (dp x b)"
    ),
    "the interleave v": "the bubble (p - 1)/(v m + p - 1) and the v m + p - 2 pipeline sends",
    "the micro-batch size with ZeRO-2": (
        "m = 256 / (dp x b), ZeRO-2's reduce-scatters (one per micro-batch, each of the whole "
        "gradient buffer) and the all-reduces per micro-batch, whose bytes grow with b"
    ),
    "parts": (
        "compute",
        "tensor-parallel all-reduces",
        "bubble",
        "pipeline sends",
        "data-parallel traffic",
    ),
}
STEP_GENERIC = (
    "step = (compute + tensor-parallel all-reduces) / (1 - bubble) + pipeline sends + "
    "data-parallel traffic; compute = hardware FLOPs per token x tokens / (256 GPUs x peak x "
    "MFU 0.5) on the busiest stage; each collective's time from chapter 08's cost model."
)
#: No ZeRO-3 (see STEP_PANEL).
STEP_PROBES = (
    _probe("the ZeRO stage", ("0", "1", "2"), tuple(_layout(32, 8, 1, z) for z in range(3))),
    _probe(
        "the micro-batch size", ("1", "2", "4"), tuple(_layout(16, 4, 4, 1, b=b) for b in (1, 2, 4))
    ),
    _probe(
        "recompute",
        ("none", "selective", "full"),
        tuple(_layout(16, 4, 4, 1, recompute=r) for r in ("none", "selective", "full")),
    ),
    _probe(
        "tp (dp changing with it)",
        ("2", "4", "8"),
        (_layout(16, 2, 8, 1), _layout(8, 4, 8, 1), _layout(4, 8, 8, 1)),
    ),
    _probe(
        "pp (dp changing with it)",
        ("2", "4", "8"),
        (_layout(32, 4, 2, 1), _layout(16, 4, 4, 1), _layout(8, 4, 8, 1)),
    ),
    _probe(
        "the interleave v", ("1", "2", "4"), tuple(_layout(16, 4, 4, 1, v=v) for v in (1, 2, 4))
    ),
    # ZeRO-2 reduce-scatters on every micro-batch: its traffic grows with m, which the ZeRO
    # probe (m = 8 throughout) cannot show; relations of ZeRO-2's count of m are told apart here
    _probe(
        "the micro-batch size with ZeRO-2",
        ("1", "2", "4"),
        tuple(_layout(32, 8, 1, 2, b=b) for b in (1, 2, 4)),
    ),
)

STEP = Figure(
    "planner_step_time",
    "seconds per step",
    "s",
    STEP_PANEL,
    STEP_PROBES,
    step_terms,
    STEP_RELATIONS,
    STEP_KNOWN,
    STEP_TOL,
    STEP_HINTS,
    STEP_TERM_HINTS,
    STEP_SETTING_TERMS,
    STEP_GENERIC,
    copied_tol=COPIED_TOL,
    parts=lambda layout: dict(evaluate(layout).step_parts),
    other_terms=(bandwidth_step_terms,),
)


def _close(a: float, b: float, tol: float) -> bool:
    return math.isclose(a, b, rel_tol=tol)


def _panel_check(figure: Figure, answer) -> CheckResult:
    """Call ``answer`` on every layout of the figure's panel and compare with the planner's
    figures; when it is off, gather the evidence (probes included) and hint from it."""
    exercise_id, unit = figure.exercise_id, figure.unit
    problem = _function_check(exercise_id, answer)
    if problem is not None:
        return problem
    figure.remember_facts()  # before the answer runs
    values = []
    calls: list[tuple[str, dict]] = []
    for layout in figure.panel:
        errors: list = []
        value, problem, called = _call(
            exercise_id, answer, (dict(layout),), allow_plan=False, errors=errors
        )
        calls = calls or list(_LAST_CALLS)
        if called:
            return _planner_called(exercise_id, called)
        if problem is not None:
            if not errors:  # not a function, or not attempted
                return problem
            if isinstance(errors[0], (KeyError, IndexError)):  # a table without this layout
                return _lookup_failed(exercise_id, layout, type(errors[0]).__name__)
            return _raised(figure, answer, layout, problem, errors[0])
        number = _number(value)
        if number is None:
            # neither is in plan's list: OFF_GRID's v = 5, and selective recomputation (which
            # plan lists as "none" under flash attention)
            if value is None and (layout is OFF_GRID or layout["recompute"] == "selective"):
                return _lookup_failed(exercise_id, layout, "it returned None")
            return _not_a_number(exercise_id, value, figure.what, unit)
        values.append(number)
    right = [figure.facts(layout)[1][WHOLE] for layout in figure.panel]
    n = len(figure.panel)
    if figure.copied_tol and all(
        _close(got, r, figure.copied_tol) for got, r in zip(values, right, strict=True)
    ):
        return _copied(exercise_id, figure.what, f"on all {n} layouts")
    wrong = [i for i in range(n) if not _close(values[i], right[i], figure.tol)]
    if not wrong:
        evidence = gather_evidence(figure, list(figure.panel), values, answer)
        fit = evidence.cause()
        if fit is not None and fit.variant and mistake_is_nearer(evidence, fit, figure.tol):
            return failed(
                exercise_id,
                f"Your prediction is within {figure.tol:.0%} of the planner's on the {n} layouts "
                f"of the panel, but on all {len(evidence.layouts)} layouts tried it is nearer a "
                "known mistake than the planner's figure.",
                hint_from(figure, evidence),
            )
        return passed(
            exercise_id,
            f"Your prediction is within {figure.tol:.0%} of the planner's on all {n} layouts "
            f"(e.g. {short(figure.panel[0])}: {_fmt(values[0], unit)}).",
        )
    lines = [
        f"  {short(figure.panel[i])}: yours {_fmt(values[i], unit)}, the planner's "
        f"{_fmt(right[i], unit)}"
        for i in wrong
    ]
    what_line = (
        f"Your prediction is off by more than {figure.tol:.0%} on {len(wrong)} of {n} "
        "layouts:\n" + "\n".join(lines)
    )
    evidence = gather_evidence(figure, list(figure.panel), values, answer)
    hint = hint_from(figure, evidence)
    arguments = _argument_evidence(calls)
    if arguments:
        hint = f"{arguments} {hint[0].upper()}{hint[1:]}" if hint else arguments
    return failed(exercise_id, what_line, hint)


def _check_memory(answer) -> CheckResult:
    return _panel_check(MEMORY, answer)


def _check_step(answer) -> CheckResult:
    return _panel_check(STEP, answer)


# --- choosing a layout ------------------------------------------------------------------------


def _fit_hint(x: parallelism.Layout) -> str:
    parts = x.memory_breakdown
    states = parts["parameters"] + parts["gradients"] + parts["optimizer"]
    if parts["activations"] > states:
        return (
            f"activations take {parts['activations'] / GIB:.0f} GiB of it: full recomputation "
            "keeps only each layer's input (selective saves nothing more with flash attention); "
            "more tensor parallelism splits them further, and a smaller micro-batch keeps "
            "fewer bytes per layer."
        )
    return (
        f"model states take {states / GIB:.0f} GiB of it: shard them (a higher ZeRO stage over "
        "dp) or split the model over more GPUs (tp x pp)."
    )


def judge_layout(exercise_id: str, value) -> tuple[dict | None, CheckResult | None]:
    """The layout if it keeps the rules and fits, else the failure."""
    layout, problem = read_layout(value)
    if problem is not None:
        return None, failed(exercise_id, *problem)
    broken = rule_broken(layout)
    if broken is not None:
        what, kind = broken
        return None, failed(exercise_id, f"{short(layout)}: {what}", RULE_HINTS[kind])
    x = evaluate(layout)
    if not x.fits:
        usable = x.memory_per_gpu + x.margin
        return None, failed(
            exercise_id,
            f"{short(layout)} needs {x.memory_per_gpu / GIB:.1f} GiB per GPU, over the "
            f"{usable / GIB:.0f} GiB usable.",
            _interleave_hint(layout, x) or _fit_hint(x),
        )
    return layout, None


def _interleave_hint(layout: dict, x: parallelism.Layout) -> str | None:
    """When the same pipelined layout with more virtual stages keeps the rules and fits: how
    many layers' activations the first stage holds with each (the chunks in flight x L/(p v))."""
    pp, v = layout["pp"], layout["interleave"]
    if pp == 1:
        return None
    layers = model().layers
    m = JOB["global_batch_tokens"] // model().seq_len // (layout["dp"] * layout["micro_batch_size"])
    for more in range(v + 1, 2 * v + 6):
        other = dict(layout, interleave=more)
        if rule_broken(other) is not None or not (y := evaluate(other)).fits:
            continue
        chunks = {w: parallelism.in_flight_chunks(pp, m, w) for w in (v, more)}
        size = {w: layers // (pp * w) for w in (v, more)}  # layers per chunk
        return (
            f"the same layout with v = {more} fits ({y.memory_per_gpu / GIB:.1f} GiB): its first "
            f"stage holds {chunks[more]} chunks of {size[more]} layers "
            f"({chunks[more] * size[more]} layers' activations) in flight, against {chunks[v]} "
            f"chunks of {size[v]} ({chunks[v] * size[v]}) with v = {v}. More virtual stages keep "
            "fewer layers' activations in flight on the first stage (min(v m, v p + p - 1) chunks "
            "of L/(p v) layers)."
        )
    return None


def _check_layout(answer) -> CheckResult:
    eid = "planner_layout_fits"
    if not callable(answer):
        return failed(
            eid,
            f"Expected a function that returns your layout, got {type(answer).__name__}.",
            "define `def my_layout(): " + EXAMPLE + "` and pass `my_layout`.",
        )
    value, problem, _ = _call(eid, answer, (), allow_plan=True)
    if problem is not None:
        return problem
    layout, problem = judge_layout(eid, value)
    if problem is not None:
        return problem
    x, best = evaluate(layout), planner_best()
    ratio = x.step_time / best.step_time
    judged = _judged_as(layout)
    if ratio > FACTOR:
        diff = main_differences(x, best)
        extra = x.step_parts[diff[0]] - best.step_parts[diff[0]]
        return failed(
            eid,
            f"{short(layout)} fits ({x.memory_per_gpu / GIB:.1f} GiB), but its step, "
            f"{x.step_time:.3g} s{judged}, is {ratio:.2f}x the planner's best: {best.short()}, "
            f"{best.step_time:.3g} s ({best.memory_per_gpu / GIB:.1f} GiB).",
            f"the main difference is {PART_WORDS[diff[0]]}: {extra:.3g} s more per step. "
            f"Find a layout within {FACTOR}x of the best.",
        )
    return passed(
        eid,
        f"{short(layout)} keeps the rules, fits ({x.memory_per_gpu / GIB:.1f} of "
        f"{(x.memory_per_gpu + x.margin) / GIB:.0f} GiB) and its step ({x.step_time:.3g} s"
        f"{judged}) is {ratio:.2f}x the planner's best.",
    )


# --- defending it -----------------------------------------------------------------------------

DEFEND_KEYS = ("layout", "memory_gib", "step_seconds", "bound", "vs_best", "main_difference")
DEFEND_EXAMPLE = (
    'return dict(layout=my_layout(), memory_gib=..., step_seconds=..., bound="...", '
    'vs_best=..., main_difference="...")'
)


def _one_layout_hint(figure: Figure, layout: dict, got: float) -> str:
    """The hint for one figure of a defence: the cause when one known relation alone gives it on
    this layout, else the planner's terms for it (and the causes that would give it)."""
    return hint_from(figure, gather_evidence(figure, [layout], [got]))


VS_BEST_READINGS = {
    "inverse": "vs_best is your step time divided by the planner's best, not the other way round.",
    "excess": (
        "vs_best is the ratio of the two step times itself (1.13 for 13% slower), not the "
        "fraction by which yours is slower."
    ),
    "percent": "vs_best is a ratio (1.13), not a percentage (113).",
    "percent_excess": "vs_best is a ratio (1.13 for 13% slower), not the percentage slower (13).",
    "unruled": (
        "the best to compare with is the fastest fitting layout that keeps the lab's rules "
        "(`ranked[0]`); the planner's own first layout may break them (uneven stages)."
    ),
}


def _vs_best_hint(ratio: float | None, expected: float, x: parallelism.Layout) -> str:
    """The reading of vs_best that gives the learner's number, if one does: its inverse, the
    excess over 1, a percentage, or the planner's best without the lab's rules."""
    if ratio is not None:
        ranked = parallelism.plan(model(), cluster(), JOB["global_batch_tokens"])
        unruled = next(r for r in ranked if r.fits)
        best = planner_best()
        readings = {
            "inverse": 1 / expected,
            "excess": expected - 1,
            "percent": 100 * expected,
            "percent_excess": 100 * (expected - 1),
            "unruled": x.step_time / unruled.step_time,
            "memory": x.memory_per_gpu / best.memory_per_gpu,
        }
        # the nearest reading within the tolerance: the first one within it took a memory
        # ratio of 0.835 for the inverse of 1.08 (0.926), a wrong specific hint
        near = [
            (abs(ratio - value) / max(abs(value), 1e-9), name)
            for name, value in readings.items()
            # relative: an excess of 0.08 read with a 0.02 floor took 0.058 (a ratio to the
            # slowest layout, in a held-out answer) for the excess, a wrong specific hint
            if abs(ratio - value) <= max(RATIO_TOL * abs(value), 0.002)
            and not _close(value, expected, RATIO_TOL)
        ]
        if near:
            name = min(near)[1]
            if name == "memory":
                return (
                    f"{ratio:.3g} is your layout's memory per GPU over the best layout's "
                    f"({x.memory_per_gpu / GIB:.3g} / {best.memory_per_gpu / GIB:.3g} GiB): "
                    "vs_best compares step times, your step time / the best's."
                )
            return VS_BEST_READINGS[name]
    return (
        "vs_best = your step time / the step time of the planner's best layout that keeps "
        "the lab's rules (the first fitting one of gu.parallelism.plan that does)."
    )


def _not_own(eid: str, answer, value: dict, layout: dict) -> CheckResult | None:
    """Evidence that a defence is not of the learner's own layout and predictions: a layout
    other than the one their ``my_layout()`` returns (when ``defend`` calls it), or a
    ``memory_gib`` or ``step_seconds`` that is a number written in ``defend``'s own code."""
    code = getattr(answer, "__code__", None)
    mine = getattr(answer, "__globals__", {}).get("my_layout")
    if code is not None and callable(mine) and "my_layout" in code.co_names:
        got, problem, _ = _call(eid, mine, (), allow_plan=True)
        own = read_layout(got)[0] if problem is None else None
        if own is not None and own != layout:
            return failed(
                eid,
                f"layout is {short(layout)}, but your my_layout() returns {short(own)}.",
                "defend your own layout: return layout=my_layout() (the dict) with your "
                "predictions for it.",
            )
    constants = {
        c for c in getattr(code, "co_consts", ()) if isinstance(c, float | int) and c is not True
    }
    for key in ("memory_gib", "step_seconds"):
        number = value[key]
        if isinstance(number, float | int) and not isinstance(number, bool) and number in constants:
            return failed(
                eid,
                f"{key} is {number!r}, a number written into defend(), not a prediction of your "
                "functions.",
                "return predict_memory_gib(layout) and predict_step_seconds(layout) for your "
                "layout: the defence holds your own predictions, whatever they are.",
            )
    return None


def _swapped(memory_gib: float, step: float | None, x: parallelism.Layout):
    """(what, hint) when memory_gib is off the planner's memory but equals its step time (and
    step_seconds its memory, when it does): the two fields exchanged; else None."""
    gib = x.memory_per_gpu / GIB
    if _close(memory_gib, gib, MEMORY_TOL) or not _close(memory_gib, x.step_time, STEP_TOL):
        return None
    hint = (
        "memory_gib is predict_memory_gib(layout), in GiB; step_seconds is "
        "predict_step_seconds(layout), in seconds."
    )
    if step is not None and _close(step, gib, MEMORY_TOL):
        return (
            f"memory_gib is {memory_gib:.3g} and step_seconds {step:.3g}: each is the other's "
            f"figure (the planner's: {gib:.3g} GiB and {x.step_time:.3g} s), so the two are "
            "swapped.",
            hint,
        )
    return (
        f"memory_gib is {memory_gib:.3g}, the planner's step time for your layout "
        f"({x.step_time:.3g} s), not its memory ({gib:.3g} GiB).",
        hint,
    )


def _check_defend(answer) -> CheckResult:
    eid = "planner_defend"
    if not callable(answer):
        return failed(
            eid,
            f"Expected a function that returns your defence, got {type(answer).__name__}.",
            "define `def defend(): " + DEFEND_EXAMPLE + "` and pass `defend`.",
        )
    value, problem, called = _call(eid, answer, (), allow_plan=True)
    if called:
        return failed(
            eid,
            f"Your function calls {called} for a layout: its numbers are the ones yours are "
            "compared with.",
            "give your own predictions (your functions above); gu.parallelism.plan is fine for "
            "the planner's best.",
        )
    if problem is not None:
        return problem
    if not isinstance(value, dict) or any(k not in value for k in DEFEND_KEYS):
        missing = [k for k in DEFEND_KEYS if not isinstance(value, dict) or k not in value]
        return failed(
            eid,
            f"Expected a dict with the keys {', '.join(DEFEND_KEYS)}; "
            + (
                f"{', '.join(missing)} missing."
                if isinstance(value, dict)
                else f"got {type(value).__name__}."
            ),
            DEFEND_EXAMPLE + ".",
        )
    layout, problem = judge_layout(eid, value["layout"])
    if problem is not None:
        return problem
    problem = _not_own(eid, answer, value, layout)
    if problem is not None:
        return problem
    x, best = evaluate(layout), planner_best()
    memory_gib, step = _number(value["memory_gib"]), _number(value["step_seconds"])
    if memory_gib is None:
        return failed(eid, f"memory_gib is {_shown(value['memory_gib'])}.", "give a number of GiB.")
    swapped = _swapped(memory_gib, step, x)
    if swapped is not None:
        return failed(eid, *swapped)
    if not _close(memory_gib, x.memory_per_gpu / GIB, MEMORY_TOL):
        usable = (x.memory_per_gpu + x.margin) / GIB
        gpus = JOB["gpus_per_node"] * JOB["nodes"]
        if _close(memory_gib, x.memory_per_gpu / GIB / usable, MEMORY_TOL):
            hint = (
                f"{memory_gib:.3g} is the prediction as a share of the {usable:.0f} GiB usable "
                f"({x.memory_per_gpu / GIB:.3g} / {usable:.0f}): memory_gib is the memory per "
                "GPU itself, in GiB."
            )
        elif _close(memory_gib, x.memory_per_gpu / GIB * gpus, MEMORY_TOL):
            hint = (
                f"{memory_gib:.3g} GiB is the prediction x {gpus}, the GPU count: the memory of "
                "the whole cluster. memory_gib is what one GPU holds (each holds its own shard "
                "of the model and its own activations), in GiB."
            )
        elif _other_best(x, best) and _close(memory_gib, best.memory_per_gpu / GIB, 0.01):
            hint = _best_layout_copied("memory_gib", best)
        else:
            hint = _one_layout_hint(MEMORY, layout, memory_gib)
        return failed(
            eid,
            f"memory_gib: yours {memory_gib:.3g} GiB, the planner's "
            f"{x.memory_per_gpu / GIB:.3g} GiB for {short(layout)}.",
            hint,
        )
    if step is None:
        return failed(eid, f"step_seconds is {_shown(value['step_seconds'])}.", "give seconds.")
    if _close(step, x.step_time, COPIED_TOL):
        return _copied(eid, "step_seconds", f"for {short(layout)}")
    if not _close(step, x.step_time, STEP_TOL):
        if _other_best(x, best) and _close(step, best.step_time, 0.01):
            hint = _best_layout_copied("step_seconds", best)
        else:
            hint = _one_layout_hint(STEP, layout, step)
        return failed(
            eid,
            f"step_seconds: yours {step:.3g} s, the planner's {x.step_time:.3g} s for "
            f"{short(layout)}.",
            hint,
        )
    parts = x.step_parts
    shares = ", ".join(f"{k} {parts[k]:.2g} s" for k in PARTS)
    if value["bound"] not in BOUNDS:
        return failed(
            eid,
            f"bound is {_shown(value['bound'])}.",
            'bound is one of "compute", "NVLink" or "network" (the planner\'s words).',
        )
    if value["bound"] != x.bound:
        exposed = ", ".join(f"{k} {s:.2g} s" for k, s in x.exposed.items())
        return failed(
            eid,
            f"bound: you say {value['bound']}, the planner says {x.bound} for {short(layout)}.",
            f"a step is bound by the link whose exposed seconds are the most (here {exposed}), "
            "once they exceed 1% of the step; else by compute. TP all-reduces stay inside the "
            "node (NVLink); pipeline sends across nodes and data-parallel traffic whose ranks sit "
            "in different nodes use the network.",
        )
    ratio, expected = _number(value["vs_best"]), x.step_time / best.step_time
    if ratio is None or not _close(ratio, expected, RATIO_TOL):
        shown = _shown(value["vs_best"]) if ratio is None else f"{ratio:.3g}"
        hint = _vs_best_hint(ratio, expected, x)
        return failed(
            eid,
            f"vs_best: yours {shown}, the planner's {expected:.3g} ({best.short()}, "
            f"{best.step_time:.3g} s).",
            hint,
        )
    diffs = main_differences(x, best)
    choice = value["main_difference"]
    allowed = set(diffs) | ({"none"} if expected <= 1.02 else set())
    if choice not in (*PARTS, "none"):
        return failed(
            eid,
            f"main_difference is {_shown(choice)}.",
            'main_difference is "none" or one of "' + '", "'.join(PARTS) + '".',
        )
    if choice not in allowed:
        best_parts = best.step_parts
        delta = ", ".join(f"{k} {parts[k] - best_parts[k]:+.2g} s" for k in PARTS)
        expected_word = diffs[0] if diffs else "none"
        return failed(
            eid,
            f"main_difference: you say {choice}; the parts of your step minus the best's are: "
            f"{delta}.",
            f"the main difference is the part that costs your layout the most extra seconds "
            f'({expected_word}); "none" when your layout is as fast (within 2%).',
        )
    return passed(
        eid,
        f"{short(layout)}: {x.memory_per_gpu / GIB:.1f} GiB, {x.step_time:.3g} s per step "
        f"({shares}), bound by {x.bound}, {expected:.2f}x the planner's best ({best.short()}).",
    )


def _exercise(id: str, title: str, signature: str, run) -> Exercise:  # noqa: A002
    return Exercise(
        id=id,
        chapter=CHAPTER,
        title=title,
        signature=signature,
        launch="called in the checker's own process",
        run=run,
        kind="function",
    )


register(
    _exercise(
        "planner_layout_fits",
        "Choose a layout for Llama 3 70B on 256 H100s",
        "my_layout() -> dict(dp, tp, pp, zero_stage, micro_batch_size, recompute, interleave)",
        _check_layout,
    )
)
register(
    _exercise(
        "planner_memory_prediction",
        "Predict the planner's memory per GPU",
        "predict_memory_gib(layout: dict) -> GiB per GPU, called on several layouts",
        _check_memory,
    )
)
register(
    _exercise(
        "planner_step_time",
        "Predict the planner's step time",
        "predict_step_seconds(layout: dict) -> seconds per step, called on several layouts",
        _check_step,
    )
)
register(
    _exercise(
        "planner_defend",
        "Defend your layout against the planner's list",
        "defend() -> dict(layout, memory_gib, step_seconds, bound, vs_best, main_difference)",
        _check_defend,
    )
)
