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
  layouts chosen so that each usual mistake shows (optimizer states left out, fp32 weights,
  model states not divided by t x p or not sharded as the ZeRO stage says, activations without
  recomputation or without the micro-batches in flight; the bubble, the MFU, the backward's
  FLOPs, communication left out) and names the mistake from the pattern of the answers. An
  answer that calls ``gu.parallelism.evaluate`` or ``plan`` is told to predict instead.
* ``planner_defend``: the learner's own layout with their predictions for it, what bounds its
  step, how much slower it is than the planner's best and the main term of the difference.

The expected values are ``gu.parallelism.evaluate``'s; the mistakes are recomputed from its
parts (``Layout.memory_breakdown``, ``compute_time``, ``comm_times``, ``exposed``, ``bubble``).
"""

from __future__ import annotations

import inspect
import math
import numbers
import sys
from collections.abc import Callable

from .. import flops, memory, parallelism
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


def evaluate(layout: dict) -> parallelism.Layout:
    """The planner's figures for a layout of the lab's job, under its framework's behaviour
    (:func:`framework`)."""
    return parallelism.evaluate(
        model(), cluster(), JOB["global_batch_tokens"], **layout, **framework(layout)
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
            return None, (
                f"Expected a layout, a dict with the keys {', '.join(KEYS)}; got "
                f"{_shown(value)} ({type(value).__name__}).",
                EXAMPLE + ".",
            )
    unknown = [k for k in value if k not in KEYS]
    if unknown:
        name = str(unknown[0])
        note = ""
        if "micro" in name:
            note = (
                " The number of micro-batches is not a choice of its own: it follows from the "
                "batch, dp and micro_batch_size."
            )
        return None, (
            f"Your layout has a key this lab does not know: {_shown(name)}.{note}",
            f"use exactly the keys {', '.join(KEYS)} (interleave may be left out: 1).",
        )
    value = {"interleave": 1, **value}
    missing = [k for k in KEYS if k not in value]
    if missing:
        return None, (
            f"Your layout has no {', '.join(missing)}.",
            f"give every one of {', '.join(KEYS)}.",
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


def step_parts(x: parallelism.Layout) -> dict:
    """Seconds of each term of the planner's step: compute, bubble, exposed tensor-parallel,
    pipeline and data-parallel communication (they add up to ``x.step_time``)."""
    tp = x.comm_times["tp"]  # exposed: tp_overlap is off in the lab
    pp = x.comm_times["pp"]
    dp = max(0.0, sum(x.exposed.values()) - tp - pp)
    bubble = max(0.0, x.step_time - x.compute_time - tp - pp - dp)  # 0, not -1e-16
    return {
        "compute": x.compute_time,
        "bubble": bubble,
        "tensor-parallel": tp,
        "pipeline": pp,
        "data-parallel": dp,
    }


def main_differences(mine: parallelism.Layout, best: parallelism.Layout) -> list[str]:
    """The parts that cost ``mine`` the most seconds more than ``best`` (the largest, and any
    within 20% of it); [] when ``mine`` is not slower."""
    a, b = step_parts(mine), step_parts(best)
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

    def __init__(self, allow_plan: bool) -> None:
        self.allow_plan = allow_plan
        self.called: str | None = None
        self._evaluate = parallelism.evaluate.__code__
        self._plan = parallelism.plan.__code__

    def __call__(self, frame, event, arg) -> None:
        if event != "call" or self.called:
            return
        code = frame.f_code
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


def _call(exercise_id: str, function, args: tuple, allow_plan: bool):
    """(value, None, called) or (None, CheckResult, called)."""
    problem = _cannot_call(exercise_id, function, args)
    if problem is not None:
        return None, problem, None
    watch = _PlannerWatch(allow_plan)
    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        value = function(*args)
    except NotImplementedError:
        return None, not_attempted(exercise_id), watch.called
    except (Exception, SystemExit) as error:
        try:
            text = str(error)
        except Exception:
            text = ""
        text = text if len(text) < 200 else text[:197] + "..."
        return (
            None,
            failed(
                exercise_id,
                f"Your function raised {type(error).__name__}" + (f": {text}" if text else "."),
                "run it in a cell of its own to see the full error.",
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


#: Layouts the memory prediction is checked on: 1F1B with m >= p and m < p, interleaved,
#: ZeRO-0/1/2/3, recompute none/selective/full, t = 2, 4, 8.
MEMORY_PANEL = (
    _layout(8, 4, 8, 1),
    _layout(8, 8, 4, 1, recompute="selective", v=4),
    _layout(32, 8, 1, 2, b=2, recompute="full"),
    _layout(64, 4, 1, 3, recompute="full"),
    _layout(4, 8, 8, 0),
    _layout(16, 2, 8, 1, b=4, recompute="full"),
    OFF_GRID,
)

#: Layouts the step-time prediction is checked on: the planner's best, TP 8 (exposed
#: all-reduces), a deep pipeline with few micro-batches (a 47% bubble), interleaving with few
#: micro-batches, ZeRO-2 reduce-scattering on every micro-batch, and t = 2 with 16 stages
#: (little tensor-parallel traffic). No ZeRO-3: its thousands
#: of per-tensor collectives are latency-bound, beyond a hand estimate (chapter 10's comparison).
STEP_PANEL = (
    _layout(16, 4, 4, 1, v=4),
    _layout(32, 8, 1, 1),
    _layout(8, 4, 8, 1, b=4, recompute="full"),
    _layout(16, 4, 4, 1, b=4, recompute="full", v=4),
    _layout(32, 8, 1, 2, recompute="full"),
    _layout(8, 2, 16, 1),
    OFF_GRID,
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


def memory_variants(layout: dict) -> dict[str, float]:
    """GiB per GPU of ``layout`` as the planner counts it ("right") and as each mistake does."""
    mod, x = model(), evaluate(layout)
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    zero, b, recompute = layout["zero_stage"], layout["micro_batch_size"], layout["recompute"]
    zero = zero if dp > 1 else 0
    m = sequences() // (dp * b)
    local = mod.params / (tp * pp)
    per_stage = mod.layers // pp

    def states(n=local, stage=zero, **bytes_) -> float:
        return memory.model_state_bytes(n, dp=dp, zero_stage=stage, **bytes_).total

    def per_layer(**options) -> float:
        kw = dict(
            tp=tp,
            sequence_parallel=tp > 1,
            recompute=recompute,
            dropout_masks=False,
            attention="flash",
        )
        kw.update(options)
        return memory.activation_bytes_per_layer(mod.seq_len, b, mod.hidden, mod.heads, **kw)

    chunks = 1 if pp == 1 else (min(pp, m) if v == 1 else min(v * m, v * pp + pp - 1))
    held = per_stage / v * chunks  # layers' worth of activations held
    acts = per_layer() * held
    gathered = x.memory_breakdown["zero3_gathered"]
    right = states() + acts + gathered
    total = {
        "right": right,
        "no_optimizer": states(optimizer_bytes=0) + acts + gathered,
        "fp32_weights": states(param_bytes=4) + acts + gathered,
        "fp32_weights_grads": states(param_bytes=4, grad_bytes=4) + acts + gathered,
        "not_split": states(n=mod.params) + acts + gathered,
        "no_zero": states(stage=0) + acts + gathered,
        "all_sharded": states(stage=3) + acts + gathered,
        "no_recompute": states() + per_layer(recompute="none") * held + gathered,
        "one_in_flight": states() + per_layer() * per_stage + gathered,
        "all_in_flight": states() + per_layer() * per_stage * (m if pp > 1 else 1) + gathered,
        "no_activations": states() + gathered,
        "activations_not_split": states()
        + per_layer(tp=1, sequence_parallel=False) * held
        + gathered,
        "eager": states() + per_layer(attention="eager") * held + gathered,
        "no_gathered": states() + acts,
    }
    result = {k: t / GIB for k, t in total.items()}
    result["gigabytes"] = right / 1e9
    result["bytes"] = right
    return result


MEMORY_HINTS = {
    "no_optimizer": (
        "the optimizer states are missing: mixed-precision Adam keeps K = 12 bytes per parameter "
        "(fp32 master weights, momentum and variance) beside the 2 + 2 of bf16 weights and "
        "gradients (ZeRO, sec. 3.1)."
    ),
    "fp32_weights": (
        "the weights and gradients a GPU computes with are bf16, 2 bytes each: the fp32 master "
        "copy is already one of the optimizer's K = 12 bytes."
    ),
    "not_split": (
        "model states count only the parameters this GPU holds: tensor parallelism and the "
        "pipeline divide the model, params / (tp x pp), before ZeRO shards anything."
    ),
    "no_zero": (
        "the ZeRO stage shards over the dp ranks: stage 1 divides the optimizer states by dp, "
        "stage 2 the gradients too, stage 3 the weights too (gu.memory.model_state_bytes(..., "
        "dp=, zero_stage=))."
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
    "no_activations": (
        "only model states: add the activations kept for the backward pass (gu.memory."
        "activation_bytes_per_layer x the layers per stage x the micro-batches in flight)."
    ),
    "activations_not_split": (
        "with tensor and sequence parallelism every activation of a layer is split over the t "
        "GPUs: pass tp= and sequence_parallel=True (for t > 1) to activation_bytes_per_layer."
    ),
    "eager": (
        "the planner counts a fused (flash) attention, which keeps no s x s scores: "
        'attention="flash" in gu.memory.activation_bytes_per_layer (and Llama has no dropout: '
        "dropout_masks=False)."
    ),
    "no_gathered": (
        "ZeRO-3 also holds the full bf16 weights of the layers it has gathered: the planner "
        "counts two layers, 2 x 2 x 12 h^2 / t bytes."
    ),
    "gigabytes": "the answer is in GiB (2**30 bytes); you divided by 1e9.",
    "bytes": "return GiB (bytes / 2**30), not bytes.",
}
MEMORY_HINTS["fp32_weights_grads"] = MEMORY_HINTS["fp32_weights"]
MEMORY_GENERIC = (
    "memory per GPU = model states of the params / (tp x pp) this GPU holds, sharded as the ZeRO "
    "stage says (gu.memory.model_state_bytes) + activations per layer (gu.memory."
    'activation_bytes_per_layer with tp, sequence_parallel=tp > 1, recompute, attention="flash", '
    "dropout_masks=False) x the layers per stage x the micro-batches (or chunks) in flight "
    "(+ two gathered layers for ZeRO-3)."
)


def step_variants(layout: dict) -> dict[str, float]:
    """Seconds per step of ``layout`` as the planner counts it ("right") and as each mistake
    does, recomputed from the planner's own parts."""
    mod, x = model(), evaluate(layout)
    parts = step_parts(x)
    c, tp, pp, dp = (
        parts["compute"],
        parts["tensor-parallel"],
        parts["pipeline"],
        parts["data-parallel"],
    )
    beta = x.bubble
    p = layout["pp"]
    m = sequences() // (layout["dp"] * layout["micro_batch_size"])
    recompute = layout["recompute"]
    shape = dict(layers=mod.layers, d_model=mod.hidden, seq_len=mod.seq_len)
    hw = flops.hardware_flops_per_token(mod.params, recompute=recompute, attention="flash", **shape)
    hw_none = flops.hardware_flops_per_token(mod.params, attention="flash", **shape)
    forward = 2 * mod.params + 4 * mod.layers * mod.hidden * mod.seq_len
    params_only = (8 if recompute == "full" else 6) * mod.params

    def step(compute=c, bubble=beta, t=tp, p_=pp, d=dp) -> float:
        return (compute + t) / (1 - bubble) + p_ + d

    no_interleave = (p - 1) / (m + p - 1) if p > 1 else 0.0
    return {
        "right": x.step_time,
        "no_bubble": step(bubble=0.0),
        "peak": step(compute=c * 0.5),
        "forward_only": step(compute=c * forward / hw),
        "no_comm": step(t=0.0, p_=0.0, d=0.0),
        "no_tp": step(t=0.0),
        "no_dp": step(d=0.0),
        "no_recompute_flops": step(compute=c * hw_none / hw),
        "params_only": step(compute=c * params_only / hw),
        "no_interleave": step(bubble=no_interleave),
        "zero2_once": step(d=dp * 2 / (m + 1)) if layout["zero_stage"] == 2 else x.step_time,
        "not_per_replica": step(compute=c * layout["dp"]),
        "milliseconds": x.step_time * 1e3,
    }


STEP_HINTS = {
    "no_bubble": (
        "the pipeline bubble is missing: with p stages a fraction (p - 1)/(v m + p - 1) of the "
        "step idles, so the busy time is divided by 1 - bubble."
    ),
    "peak": (
        "that is at the GPU's peak: the planner assumes the matmuls reach MFU = 0.5 of the dense "
        "peak (gu.flops.peak_flops x 0.5)."
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
    "no_dp": (
        "the data-parallel traffic is missing: ZeRO-0/1 all-reduce the bf16 gradients once per "
        "step; ZeRO-2 reduce-scatters them on every micro-batch, (m + 1) x 2 bytes per parameter "
        "held; not hidden in the planner's default."
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
    "zero2_once": (
        "ZeRO-2 keeps only its shard of the gradients, so it cannot accumulate them: it "
        "reduce-scatters them on every micro-batch, then all-gathers the new weights once, "
        "(m + 1) x 2 bytes per parameter held per step, not ZeRO-1's single all-reduce."
    ),
    "milliseconds": "return seconds, not milliseconds.",
}
STEP_GENERIC = (
    "step = (compute + tensor-parallel all-reduces) / (1 - bubble) + pipeline sends + "
    "data-parallel traffic; compute = hardware FLOPs per token x tokens / (256 GPUs x peak x "
    "MFU 0.5) on the busiest stage; each collective's time from chapter 08's cost model."
)


def _close(a: float, b: float, tol: float) -> bool:
    return math.isclose(a, b, rel_tol=tol)


def classify(values: list[float], variants: list[dict], tol: float) -> list[str]:
    """The mistakes whose values match ``values`` within ``tol`` on every layout (and that are
    not right everywhere), nearest first; when the nearest is clearly nearer (half the summed
    log-distance of the next, or less) only that one."""
    names = [k for k in variants[0] if k != "right"]
    found = []
    for name in names:
        matches = all(_close(g, v[name], tol) for g, v in zip(values, variants, strict=True))
        if matches and not all(_close(v[name], v["right"], tol) for v in variants):
            distance = sum(
                abs(math.log(max(got, 1e-300) / max(v[name], 1e-300)))
                for got, v in zip(values, variants, strict=True)
            )
            found.append((distance, name))
    found.sort()
    if len(found) > 1 and found[0][0] <= 0.5 * found[1][0]:
        return [found[0][1]]
    return [name for _, name in found]


def _panel_check(
    exercise_id: str,
    answer,
    panel: tuple[dict, ...],
    variants_of: Callable[[dict], dict],
    hints: dict,
    generic: str,
    tol: float,
    unit: str,
    what: str,
    copied_tol: float = 0.0,
) -> CheckResult:
    """Call ``answer`` on every layout of ``panel`` and compare with the planner's figures;
    ``copied_tol`` > 0: agreement that close on every layout is a copy (:data:`COPIED_TOL`)."""
    problem = _function_check(exercise_id, answer)
    if problem is not None:
        return problem
    values = []
    for layout in panel:
        value, problem, called = _call(exercise_id, answer, (dict(layout),), allow_plan=False)
        if called:
            return _planner_called(exercise_id, called)
        if problem is not None:
            if any(f"raised {e}" in problem.message for e in ("KeyError", "IndexError")):
                error = problem.message.split("raised ", 1)[-1].split(":")[0].rstrip(".")
                return _lookup_failed(exercise_id, layout, error)
            if "Your function raised" in problem.message:
                return failed(
                    exercise_id,
                    problem.message.split("not yet. ", 1)[-1].split("\n")[0]
                    + f" (for the layout {short(layout)}).",
                    "run your function on that layout in a cell of its own to see the full error.",
                )
            return problem
        number = _number(value)
        if number is None:
            if value is None and layout is OFF_GRID:
                return _lookup_failed(exercise_id, layout, "it returned None")
            return _not_a_number(exercise_id, value, what, unit)
        values.append(number)
    variants = [variants_of(layout) for layout in panel]
    right = [v["right"] for v in variants]
    if copied_tol and all(_close(got, r, copied_tol) for got, r in zip(values, right, strict=True)):
        return _copied(exercise_id, what, f"on all {len(panel)} layouts")
    wrong = [
        i for i, (got, r) in enumerate(zip(values, right, strict=True)) if not _close(got, r, tol)
    ]
    if not wrong:
        return passed(
            exercise_id,
            f"Your prediction is within {tol:.0%} of the planner's on all {len(panel)} layouts "
            f"(e.g. {short(panel[0])}: {_fmt(values[0], unit)}).",
        )
    lines = [
        f"  {short(panel[i])}: yours {_fmt(values[i], unit)}, the planner's {_fmt(right[i], unit)}"
        for i in wrong
    ]
    what_line = (
        f"Your prediction is off by more than {tol:.0%} on {len(wrong)} of {len(panel)} "
        "layouts:\n" + "\n".join(lines)
    )
    found = classify(values, variants, tol)
    texts = list(dict.fromkeys(hints[k] for k in found))
    hint = texts[0] if len(texts) == 1 else generic
    return failed(exercise_id, what_line, hint)


def _check_memory(answer) -> CheckResult:
    return _panel_check(
        "planner_memory_prediction",
        answer,
        MEMORY_PANEL,
        memory_variants,
        MEMORY_HINTS,
        MEMORY_GENERIC,
        MEMORY_TOL,
        "GiB",
        "memory per GPU",
    )


def _check_step(answer) -> CheckResult:
    return _panel_check(
        "planner_step_time",
        answer,
        STEP_PANEL,
        step_variants,
        STEP_HINTS,
        STEP_GENERIC,
        STEP_TOL,
        "s",
        "seconds per step",
        copied_tol=COPIED_TOL,
    )


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
            _fit_hint(x),
        )
    return layout, None


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
        extra = step_parts(x)[diff[0]] - step_parts(best)[diff[0]]
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


def _one_layout_hint(values: dict, got: float, tol: float, hints: dict) -> str | None:
    """The hint of the mistake nearest to ``got`` on one layout, if one stands out."""
    texts = list(dict.fromkeys(hints[k] for k in classify([got], [values], tol)))
    return texts[0] if len(texts) == 1 else None


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
    x, best = evaluate(layout), planner_best()
    memory_gib, step = _number(value["memory_gib"]), _number(value["step_seconds"])
    if memory_gib is None:
        return failed(eid, f"memory_gib is {_shown(value['memory_gib'])}.", "give a number of GiB.")
    if not _close(memory_gib, x.memory_per_gpu / GIB, MEMORY_TOL):
        hint = _one_layout_hint(memory_variants(layout), memory_gib, MEMORY_TOL, MEMORY_HINTS)
        return failed(
            eid,
            f"memory_gib: yours {memory_gib:.3g} GiB, the planner's "
            f"{x.memory_per_gpu / GIB:.3g} GiB for {short(layout)}.",
            hint or MEMORY_GENERIC,
        )
    if step is None:
        return failed(eid, f"step_seconds is {_shown(value['step_seconds'])}.", "give seconds.")
    if _close(step, x.step_time, COPIED_TOL):
        return _copied(eid, "step_seconds", f"for {short(layout)}")
    if not _close(step, x.step_time, STEP_TOL):
        hint = _one_layout_hint(step_variants(layout), step, STEP_TOL, STEP_HINTS)
        return failed(
            eid,
            f"step_seconds: yours {step:.3g} s, the planner's {x.step_time:.3g} s for "
            f"{short(layout)}.",
            hint or STEP_GENERIC,
        )
    parts = step_parts(x)
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
        hint = (
            "vs_best is your step time divided by the planner's best, not the other way round."
            if ratio and _close(1 / ratio, expected, RATIO_TOL)
            else "vs_best = your step time / the step time of the planner's best layout that keeps "
            "the lab's rules (the first fitting one of gu.parallelism.plan that does)."
        )
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
        best_parts = step_parts(best)
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
