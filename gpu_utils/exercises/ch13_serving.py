"""Exercises of lab 13, serving models (chapter 13): five functions the chapter's API computes,
written by the learner and held against it (``gu.inference`` is the oracle).

* ``serving_decode_step``: the lower bound of one decode step, in seconds (section 1), on a
  panel of published shapes and an odd one: batch 1, 2, 3 and larger, context 0, int8 and int4
  weights, an int8 cache, memory- and compute-bound cases (``gu.inference.decode_step``).
* ``serving_kv_budget``: the largest batch of sequences of a given context whose KV cache fits
  beside the weights in a usable share of a GPU's memory, 0 when the weights do not fit
  (section 3; ``gu.inference.max_batch``).
* ``serving_paged_allocator``: a block table (section 5), a class replayed operation by
  operation against ``gu.inference.PagedAllocator`` on several block sizes (1, 2, 3, 5, 16).
* ``serving_schedule_step``: one step of the continuous-batching scheduler (section 4), run
  inside ``gu.inference.serve``'s loop on seven request mixes (1, 2, 3, 5 and 7 requests, a
  cache that fills up, a budget smaller than a prompt) lock-step with
  ``gu.inference.schedule_step``: the plan and the state after every step, then each run's
  TTFT and TPOT. A known mistake (prefill before decode, a chunk over the budget left, the
  wrong victim...) is named only when, recomputed on every state seen, it gives every plan the
  learner's step gave; otherwise the message says what the step did.
* ``serving_speculative_tokens``: expected tokens per verification step of speculative
  decoding (section 7; ``gu.inference.speculative_expected_tokens``, shown beside a Monte
  Carlo run).

Hints come from evidence: which cases of the panel are wrong and what they have in common (a
cache to read, a compute-bound step, weights stored in fewer bytes...), how the wrong values
relate to the right ones (a constant factor, a unit factor, an offset: ``_evidence``), and
which variant of the formula (a known mistake computed on the same cases) reproduces every
value. A cause is named only when one variant explains every case; otherwise the message says
which cases are wrong and restates the formula.
"""

from __future__ import annotations

import copy
import inspect
import math
import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import combinations

import numpy as np

from ..facts import specs
from ..serving import inference
from ._evidence import find_relation, match_candidates
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "13_serving"
GIB = 2**30
#: Relative tolerance: the formulas are exact, so only the order of floating-point operations
#: separates two correct answers.
RTOL = 1e-4


# --- calling the learner's code ------------------------------------------------------------------


def _shown(value) -> str:
    try:
        text = repr(value)
    except Exception:  # e.g. an integer too long to print
        text = "a value"
    return text if len(text) <= 60 else text[:57] + "..."


class _Watch:
    """Notes whether any of the oracle's functions run while the learner's code does."""

    def __init__(self, functions: dict[str, Callable]) -> None:
        self.codes = {f.__code__: name for name, f in functions.items()}
        self.called: str | None = None

    def __call__(self, frame, event, arg) -> None:
        if event == "call" and self.called is None and frame.f_code in self.codes:
            self.called = self.codes[frame.f_code]


class _Raised(Exception):
    """The learner's code raised ``error`` (kept to word the message)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(type(error).__name__)
        self.error = error

    def text(self) -> str:
        try:
            text = str(self.error)
        except Exception:
            text = ""
        text = text if len(text) < 200 else text[:197] + "..."
        name = type(self.error).__name__
        return name + (f": {text}" if text else "")


def _run(function: Callable, args: tuple, watch: _Watch):
    """``function(*args)`` under ``watch``; NotImplementedError passes through (a stub), any
    other exception comes back as :class:`_Raised`."""
    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        return function(*args)
    except NotImplementedError:
        raise
    except (Exception, SystemExit) as error:
        raise _Raised(error) from None
    finally:
        sys.setprofile(previous)


def _cannot_call(eid: str, function, n_args: int, example: str) -> CheckResult | None:
    """A message when ``function`` is not a function of ``n_args`` positional arguments."""
    if not callable(function):
        return failed(
            eid,
            f"Expected a function, got {_shown(function)} ({type(function).__name__}).",
            f"define `{example}` and pass the function itself.",
        )
    try:
        inspect.signature(function).bind(*range(n_args))
    except TypeError:
        try:
            mine = ", ".join(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            mine = "..."
        return failed(
            eid,
            f"Your function takes ({mine}), but this exercise calls it with {n_args} arguments.",
            f"define it with the lab's signature: `{example}`.",
        )
    except ValueError:  # no signature to read (a builtin): just call it
        return None
    return None


def _copied(eid: str, name: str) -> CheckResult:
    return failed(
        eid,
        f"Your code calls {name}: it computes the very figure your answer is compared with.",
        "write the formula yourself from the chapter's section; use the course's function "
        "afterwards to compare.",
    )


def _number(value) -> float | None:
    if getattr(value, "ndim", None) == 0:  # a 0-d array, e.g. from np.maximum
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


# --- a panel of cases and the evidence a wrong answer leaves --------------------------------------


@dataclass(frozen=True)
class Case:
    """One call of the learner's function: ``args`` in the lab's order, ``label`` for the
    learner, and which ``features`` (keys of the panel's features) the case has."""

    label: str
    args: tuple
    features: frozenset = field(default_factory=frozenset)


@dataclass(frozen=True)
class Panel:
    """An exercise's cases, the oracle, the known variants of the formula and the features
    that tell cases apart."""

    eid: str
    example: str  # the signature, as the learner defines it
    cases: tuple[Case, ...]
    expected: Callable[[Case], float]  # the oracle (gu.inference)
    variants: dict[str, tuple[Callable[[Case], float], str]]  # name -> (formula, hint)
    features: dict[str, str]  # name -> what the cases with it have ("a cache to read ...")
    recipe: str  # the generic hint: the formula in words
    unit: str
    oracle: dict[str, Callable]  # the API functions an answer must not call
    integer: bool = False
    #: hints for a constant factor between the answer and the oracle (on every case)
    factors: dict[float, str] = field(default_factory=dict)
    #: (feature, exception name) -> hint, for an answer that raises only on those cases
    raises: dict[tuple[str, str], str] = field(default_factory=dict)
    #: feature -> hint, for an answer that returns inf or NaN only on those cases
    nonfinite: dict[str, str] = field(default_factory=dict)
    passed_note: Callable[[list[float]], str] | None = None
    #: the hint for negative values where the answer is never negative
    negative: str = ""
    #: features of cases an answer may handle apart (a = 1, k = 0): a variant that gives every
    #: wrong value is named when only such cases are right
    special: frozenset = frozenset()


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fmt(value: float, unit: str, integer: bool = False) -> str:
    if integer and float(value).is_integer():
        return f"{int(value):,} {unit}".strip()
    return f"{value:.4g} {unit}".strip()


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-300)


def _which(panel: Panel, indices) -> frozenset[str] | None:
    """The feature, or pair of features, that the cases ``indices`` have and no other case
    has; None if none does."""
    wrong = set(indices)
    cases = panel.cases
    names = list(panel.features)
    for name in names:
        if {i for i, c in enumerate(cases) if name in c.features} == wrong:
            return frozenset([name])
    for a, b in combinations(names, 2):
        if {i for i, c in enumerate(cases) if a in c.features and b in c.features} == wrong:
            return frozenset([a, b])
    return None


def _those_with(panel: Panel, features: frozenset[str]) -> str:
    return " and ".join(panel.features[f] for f in panel.features if f in features)


def _call_panel(panel: Panel, function) -> tuple[list | None, CheckResult | None]:
    """The learner's value on every case (None for a case that raised), or a verdict."""
    eid = panel.eid
    problem = _cannot_call(eid, function, len(panel.cases[0].args), panel.example)
    if problem is not None:
        return None, problem
    watch = _Watch(panel.oracle)
    values: list = []
    raised: dict[int, _Raised] = {}
    for i, case in enumerate(panel.cases):
        try:
            values.append(_run(function, case.args, watch))
        except NotImplementedError:
            return None, not_attempted(eid)
        except _Raised as error:
            raised[i] = error
            values.append(None)
        if watch.called:
            return None, _copied(eid, watch.called)
    if not raised:
        return values, None
    what, hint = _raised_verdict(panel, raised)
    rest = [i for i in range(len(panel.cases)) if i not in raised]
    if rest:  # the other cases may show a mistake that also explains the exception
        sub = replace(panel, cases=tuple(panel.cases[i] for i in rest))
        ok, other, cause = _judge(sub, [values[i] for i in rest])
        if not ok:
            what = f"{what} On the other cases, {other[:1].lower()}{other[1:]}"
            if cause not in (panel.recipe, _cap(panel.recipe)):
                hint = cause  # a cause named from the values that came back
    return None, failed(eid, what, hint)


def _raised_verdict(panel: Panel, raised: dict) -> tuple[str, str]:
    first = min(raised)
    error = raised[first]
    where = panel.cases[first].label
    only = _which(panel, raised)
    hint = "run it in a cell of its own on that case to see the full error."
    if only is not None and len(only) == 1:
        (feature,) = only
        name = type(error.error).__name__
        hint = panel.raises.get((feature, name)) or (
            f"it raises only on the cases with {panel.features[feature]}: {hint}"
        )
    n = len(raised)
    more = f" (and on {n - 1} other case{'s' if n > 2 else ''})" if n > 1 else ""
    return f"Your function raised {error.text()} on {where}{more}.", hint


def judge_panel(panel: Panel, function) -> CheckResult:
    """Call ``function`` on every case and compare with the oracle; when it is off, name the
    cause from the evidence (a variant that reproduces every wrong value, a constant factor or
    offset, the feature the wrong cases share, an argument the answer ignores), or say which
    case is wrong and how."""
    values, problem = _call_panel(panel, function)
    if problem is not None:
        return problem
    ok, what, hint = _judge(panel, values)
    if ok:
        return passed(panel.eid, what)
    if hint.endswith(_cap(panel.recipe)) or hint == panel.recipe:  # no formula named yet
        ignored = _insensitive(panel, function, values)
        if ignored:  # before what the wrong cases share, or the formula in words
            hint = f"{ignored} {_cap(hint)}"
    return failed(panel.eid, what, hint)


def _argument_names(panel: Panel) -> list[str]:
    """The parameter names of the panel's example signature, ``def f(a, b, c):``."""
    inside = panel.example.partition("(")[2].partition(")")[0]
    return [name.strip() for name in inside.split(",") if name.strip()]


def _nudges(value) -> tuple:
    """Two other valid values of an argument, one below and one above: for a share or a
    probability (0 < v <= 1, not an integer) halfway to 0 and halfway to 1; for any other
    positive number half and double (an integer stays one); () for anything else."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        return ()
    if value <= 1 and not isinstance(value, numbers.Integral):
        return tuple(v for v in (value / 2, (1 + value) / 2) if v != value)
    if isinstance(value, numbers.Integral):
        return tuple(v for v in (int(value) // 2, int(value) * 2) if v > 0 and v != value)
    return (value / 2, value * 2)


def _insensitive(panel: Panel, function, values: list) -> str:
    """A sentence naming the one argument the learner's value ignores everywhere while the
    oracle's depends on it; "" when the evidence names none. Evidence: on every case, move one
    argument at a time down and up; an argument is ignored when the learner's value moves on
    no case at all, while the right answer moves on some. One case would not do: a wrong
    maximum (or a value stuck at 0) hides an argument that the answer does use elsewhere."""
    names = _argument_names(panel)
    want = [float(panel.expected(c)) for c in panel.cases]
    got = [_number(v) for v in values]
    if any(g is None for g in got):
        return ""
    watch = _Watch(panel.oracle)
    ignored = []
    for position, name in enumerate(names[: len(panel.cases[0].args)]):
        example, used = None, False
        for i, case in enumerate(panel.cases):
            for other in _nudges(case.args[position]):
                args = (*case.args[:position], other, *case.args[position + 1 :])
                try:
                    right = float(panel.expected(replace(case, args=args)))
                    moved = _number(_run(function, args, watch))
                except (_Raised, ArithmeticError, ValueError, NotImplementedError):
                    return ""
                if moved is None or watch.called:
                    return ""
                if not _close(moved, got[i]):
                    used = True
                    break
                if example is None and not _close(right, want[i]):
                    example = (case, i, other, right)
            if used:
                break
        if not used and example is not None:
            ignored.append((position, name, example))
    if len(ignored) != 1:
        return ""
    ((position, name, (case, i, other, right)),) = ignored
    return (
        f"your value does not depend on `{name}` on any case: on {case.label}, with {name} = "
        f"{other:g} instead of {case.args[position]:g} the right answer goes from "
        f"{_fmt(want[i], panel.unit)} to {_fmt(right, panel.unit)}, yours stays "
        f"{_fmt(got[i], panel.unit)}."
    )


def judge_values(panel: Panel, values: list) -> CheckResult:
    """The verdict on the learner's ``values`` of ``panel``'s cases."""
    ok, what, hint = _judge(panel, values)
    return passed(panel.eid, what) if ok else failed(panel.eid, what, hint)


def _judge(panel: Panel, values: list) -> tuple[bool, str, str]:
    """(passed, what, hint) for the learner's ``values`` of ``panel``'s cases."""
    want = [float(panel.expected(c)) for c in panel.cases]
    got: list[float] = []
    for case, value in zip(panel.cases, values, strict=True):
        number = _number(value)
        if number is None:
            return (
                False,
                f"On {case.label} your function returned {_shown(value)} "
                f"({type(value).__name__}), not a number.",
                f"end it with `return <{panel.unit}>`.",
            )
        got.append(number)
    bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if not _close(g, w)]
    if not bad:
        if panel.integer:
            off = [i for i, v in enumerate(values) if not float(got[i]).is_integer()]
            if off:  # within the tolerance, yet not a whole number
                return (
                    False,
                    f"On {panel.cases[off[0]].label} you returned {got[off[0]]:.6g}: "
                    "a batch is a whole number of sequences.",
                    "round down (`//` or math.floor): a part of a sequence does not run.",
                )
        note = panel.passed_note(got) if panel.passed_note else ""
        oracle = next(iter(panel.oracle))
        return True, f"All {len(want)} cases agree with {oracle}.{note}", ""
    first = bad[0]
    case = panel.cases[first]
    ratio = got[first] / want[first] if want[first] else math.inf
    what = (
        f"{len(bad)} of {len(want)} cases differ; on {case.label}: you returned "
        f"{_fmt(got[first], panel.unit, panel.integer)}, expected "
        f"{_fmt(want[first], panel.unit, panel.integer)}"
        + (f" ({ratio:.4g}x)." if math.isfinite(ratio) and want[first] else ".")
    )
    return False, what, _hint(panel, got, want, bad)


def _hint(panel: Panel, got: list[float], want: list[float], bad: list[int]) -> str:
    """The cause, from the evidence: see :func:`judge_panel`."""
    finite = [math.isfinite(g) for g in got]
    if not all(finite):
        where = [i for i, ok in enumerate(finite) if not ok]
        only = _which(panel, where)
        if only is not None and len(only) == 1:
            (feature,) = only
            if feature in panel.nonfinite:
                return panel.nonfinite[feature]
        return "some of your values are inf or NaN (a division by zero, or 0/0): " + panel.recipe
    if panel.negative and any(got[i] < 0 for i in bad):
        return panel.negative
    g, w = np.array(got), np.array(want)
    candidates = {}
    for name, (formula, _) in panel.variants.items():
        try:
            candidates[name] = np.array([float(formula(c)) for c in panel.cases])
        except (ArithmeticError, ValueError):
            continue
    names = [
        n for n, values in candidates.items()
        if match_candidates(g, {n: values}, rtol=RTOL, atol=0.0) is not None
    ]  # fmt: skip
    good = [i for i in range(len(got)) if i not in bad]
    if (
        not names and len(bad) >= 2 and all(panel.cases[i].features & panel.special for i in good)
    ):  # a variant that gives every wrong value, the right ones being special cases (a = 1,
        # k = 0) that an answer may handle apart
        at = np.array(bad)
        names = [
            n for n, values in candidates.items()
            if match_candidates(g[at], {n: values[at]}, rtol=RTOL, atol=0.0) is not None
        ]  # fmt: skip
    if len(names) == 1:
        return panel.variants[names[0]][1]
    if names:  # these cases cannot tell the variants apart: say each
        lead = "either of two mistakes" if len(names) == 2 else "more than one mistake"
        return f"{lead} gives these values. " + " Or: ".join(
            panel.variants[n][1][0].upper() + panel.variants[n][1][1:] for n in names[:2]
        )
    relation = find_relation(g, w, rtol=RTOL, atol=0.0)
    shared = _which(panel, bad)
    if relation is not None and relation.kind in ("constant_factor", "unit_factor", "offset"):
        if relation.kind == "constant_factor" and not relation.subset:
            for factor, text in panel.factors.items():
                if math.isclose(relation.value, factor, rel_tol=RTOL):
                    return text
        if not relation.subset:
            return f"{relation.describe()} on every case. {_cap(panel.recipe)}"
    if shared is not None:
        return (
            f"the cases that are wrong are exactly those with {_those_with(panel, shared)}; "
            f"the others are right. {_cap(panel.recipe)}"
        )
    if relation is not None and relation.kind in ("constant_factor", "unit_factor", "offset"):
        return f"on the cases that are wrong, {relation.describe()}. {_cap(panel.recipe)}"
    return panel.recipe


# --- serving_decode_step ------------------------------------------------------------------------

DECODE_EXAMPLE = (
    "def decode_step_seconds(params, layers, hidden, kv_heads, head_dim, batch, context, "
    "bandwidth, peak, weight_bytes, kv_bytes):"
)

#: An odd decoder (3 layers, 96 wide, 3 heads sharing 1 key-value head, tied embeddings, so
#: every parameter is streamed): small enough to be compute-bound at a batch of 1,000.
ODD = inference.Decoder(1_234_567, 3, 96, 3, 1, 100, tied_embeddings=True, source="odd")


@dataclass(frozen=True)
class _Step:
    model: str
    gpu: str
    batch: int
    context: int
    weight_bytes: float = 2
    kv_bytes: float = 2

    @property
    def decoder(self) -> inference.Decoder:
        return ODD if self.model == "odd" else inference.DECODERS[self.model]

    @property
    def dtype(self) -> str:
        return "bf16" if specs.get(self.gpu).peak_flops("bf16") else "fp16"


def _step_case(s: _Step) -> Case:
    d, spec = s.decoder, specs.get(s.gpu)
    api = inference.decode_step(d, s.gpu, s.batch, s.context, s.weight_bytes, s.kv_bytes, s.dtype)
    features = {"batch>1"} if s.batch > 1 else set()
    features.add("cache" if s.context > 0 else "context0")
    if api.bound == "compute":
        features.add("compute")
    if s.weight_bytes != 2:
        features.add("weights")
    if s.kv_bytes != 2:
        features.add("kv_bytes")
    if d.kv_heads < d.heads:
        features.add("gqa")
    name = "an odd decoder (3 layers, 96 wide, 1 KV head)" if s.model == "odd" else s.model
    storage = {2: "bf16", 1: "int8", 0.5: "int4"}
    label = (
        f"{name} on the {s.gpu}, batch {s.batch}, context {s.context:,}, "
        f"{storage[s.weight_bytes]} weights"
        + (f", {storage[s.kv_bytes]} cache" if s.kv_bytes != 2 else "")
    )
    args = (
        d.streamed_params,
        d.layers,
        d.hidden,
        d.kv_heads,
        d.head_dim,
        s.batch,
        s.context,
        spec.hbm_bandwidth,
        spec.peak_flops(s.dtype),
        s.weight_bytes,
        s.kv_bytes,
    )
    return Case(label, args, frozenset(features))


STEPS = (
    _Step("Llama 3 8B", "H100-SXM", 1, 4096),
    _Step("Llama 2 7B", "A100-SXM4-80GB", 3, 1000),
    _Step("Llama 2 70B", "H100-SXM", 2, 0, weight_bytes=1),
    _Step("Llama 3 70B", "H100-SXM", 5, 2048, weight_bytes=0.5, kv_bytes=1),
    _Step("Llama 3 8B", "H100-SXM", 512, 0),
    _Step("Llama 3 8B", "H100-SXM", 2048, 0),
    _Step("odd", "L4", 1000, 7),
    _Step("Llama 2 7B", "T4", 1, 1),
)


def _decode_variant(
    *,
    kv_factor: float = 2,
    cache: bool = True,
    cache_batch: bool = True,
    cache_layers: bool = True,
    mha: bool = False,
    batch_weights: bool = False,
    flops_per_weight: float = 2,
    how: str = "max",
    bits: bool = False,
) -> Callable[[Case], float]:
    """The step's bound computed with one known mistake (the defaults: the right formula)."""

    def formula(case: Case) -> float:
        p, layers, h, kvh, hd, b, ctx, bw, peak, wb, kvb = case.args
        if bits:
            wb, kvb = 8 * wb, 8 * kvb
        width = h if mha else kvh * hd
        per_token = kv_factor * (layers if cache_layers else 1) * width * kvb
        kv = (b if cache_batch else 1) * ctx * per_token if cache else 0
        weights = p * wb * (b if batch_weights else 1)
        flops = b * (flops_per_weight * p + 4 * layers * h * ctx)
        memory, compute = (weights + kv) / bw, flops / peak
        return {"max": max(memory, compute), "sum": memory + compute, "memory": memory}.get(
            how, compute
        )

    return formula


DECODE_RECIPE = (
    "a step reads every weight once (params x weight_bytes) and each sequence's cache "
    "(batch x context x 2 x layers x kv_heads x head_dim x kv_bytes: a key and a value per "
    "layer), and does batch x (2 x params + 4 x layers x hidden x context) FLOPs; its bound is "
    "the larger of bytes / bandwidth and FLOPs / peak."
)

DECODE = Panel(
    eid="serving_decode_step",
    example=DECODE_EXAMPLE,
    cases=tuple(_step_case(s) for s in STEPS),
    expected=lambda c: _decode_variant()(c),
    variants={
        "kv_once": (
            _decode_variant(kv_factor=1),
            "your cache term is half the right one: each token keeps a key AND a value vector "
            "in every layer, 2 x layers x kv_heads x head_dim x kv_bytes bytes.",
        ),
        "no_cache": (
            _decode_variant(cache=False),
            "your step reads no KV cache: besides the weights, each of the batch's sequences "
            "reads the keys and values of its context tokens (batch x context x bytes per "
            "token).",
        ),
        "cache_one_sequence": (
            _decode_variant(cache_batch=False),
            "your cache term is one sequence's: every sequence of the batch reads its own "
            "cache, so multiply it by batch (the weights, unlike the cache, are read once for "
            "the whole batch).",
        ),
        "cache_one_layer": (
            _decode_variant(cache_layers=False),
            "your cache term is one layer's: every layer keeps its own keys and values, so "
            "multiply by layers.",
        ),
        "mha_cache": (
            _decode_variant(mha=True),
            "your cache is as wide as hidden on the grouped-query models: with GQA only the "
            "kv_heads key-value heads are kept, kv_heads x head_dim wide per key (or value).",
        ),
        "batch_weights": (
            _decode_variant(batch_weights=True),
            "you multiplied the weights' bytes by the batch: a step reads each weight once and "
            "uses it for every sequence of the batch (that is why batching pays).",
        ),
        "one_flop_per_weight": (
            _decode_variant(flops_per_weight=1),
            "your compute time is too small on the compute-bound cases: each weight is a "
            "multiply and an add per sequence, 2 FLOPs.",
        ),
        "sum": (
            _decode_variant(how="sum"),
            "you added the memory time and the compute time; the GPU reads and computes at "
            "once, so the bound is the larger of the two (max), not their sum.",
        ),
        "memory_only": (
            _decode_variant(how="memory"),
            "your values are the memory time (bytes / bandwidth) on every case: the compute "
            "time is missing or too small, yet on the compute-bound ones (a large batch) the "
            "FLOPs take longer: return max(bytes / bandwidth, FLOPs / peak).",
        ),
        "compute_only": (
            _decode_variant(how="compute"),
            "your values are the compute time (FLOPs / peak) on every case: the memory time "
            "is missing or far too small, yet at small batch the step is bound by reading the "
            "weights and cache: return max(bytes / bandwidth, FLOPs / peak).",
        ),
        "bits": (
            _decode_variant(bits=True),
            "your memory time is 8x too large: weight_bytes and kv_bytes are bytes per value "
            "already, not bits.",
        ),
    },
    features={
        "batch>1": "more than one sequence (batch > 1)",
        "cache": "a cache to read (context > 0)",
        "context0": "no cache yet (context 0)",
        "compute": "a compute-bound step (a large batch)",
        "weights": "int8 or int4 weights (weight_bytes 1 or 0.5)",
        "kv_bytes": "an int8 cache (kv_bytes 1)",
        "gqa": "grouped-query attention (kv_heads x head_dim < hidden)",
    },
    recipe=DECODE_RECIPE,
    unit="seconds",
    oracle={
        "gu.inference.decode_step": inference.decode_step,
        "gu.inference.Decoder.flops_per_token": inference.Decoder.flops_per_token,
    },
    factors={
        1e3: "your values are 1,000x the expected ones: return seconds, not milliseconds.",
        1e6: "your values are 1e6 x the expected ones: return seconds, not microseconds.",
        1e-3: "your values are 1/1,000 of the expected ones: bandwidth and peak are per "
        "second already (bytes/s, FLOP/s).",
    },
)


# --- serving_kv_budget --------------------------------------------------------------------------

BUDGET_EXAMPLE = (
    "def max_batch(params, layers, kv_heads, head_dim, context, memory_gib, usable, "
    "weight_bytes, kv_bytes):"
)


@dataclass(frozen=True)
class _Budget:
    model: str
    gpu: str
    context: int
    usable: float = 0.9
    weight_bytes: float = 2
    kv_bytes: float = 2

    @property
    def decoder(self) -> inference.Decoder:
        return ODD if self.model == "odd" else inference.DECODERS[self.model]


def _budget_case(s: _Budget) -> Case:
    d, spec = s.decoder, specs.get(s.gpu)
    answer = inference.max_batch(d, s.gpu, s.context, s.usable, s.weight_bytes, s.kv_bytes)
    features = set()
    if answer == 0:
        features.add("none")
    if d.kv_heads == d.heads:
        features.add("mha")
    if s.weight_bytes != 2 or s.kv_bytes != 2:
        features.add("quantised")
    if s.usable != 0.9:
        features.add("usable")
    name = "an odd decoder (3 layers, 1 KV head of 32)" if s.model == "odd" else s.model
    storage = {2: "bf16", 1: "int8", 0.5: "int4"}
    label = (
        f"{name} on the {s.gpu} ({spec.hbm_bytes / GIB:.0f} GiB, {s.usable:.0%} usable), "
        f"context {s.context:,}, {storage[s.weight_bytes]} weights"
        + (f", {storage[s.kv_bytes]} cache" if s.kv_bytes != 2 else "")
    )
    args = (
        d.params,
        d.layers,
        d.kv_heads,
        d.head_dim,
        s.context,
        spec.hbm_bytes / GIB,
        s.usable,
        s.weight_bytes,
        s.kv_bytes,
    )
    return Case(label, args, frozenset(features))


BUDGETS = (
    _Budget("Llama 3 8B", "H100-SXM", 4096),
    _Budget("Llama 2 7B", "T4", 2048),
    _Budget("Llama 2 13B", "T4", 1024),
    _Budget("Llama 2 70B", "H100-SXM", 4096, weight_bytes=0.5, kv_bytes=1),
    _Budget("Llama 3 8B", "L4", 16384),
    _Budget("Llama 2 7B", "L4", 7000, usable=0.85),
    _Budget("odd", "T4", 3000),
)


def _budget_variant(
    *,
    kv_factor: float = 2,
    gb: bool = False,
    usable: str = "total",
    weights: bool = True,
    rounding: str = "floor",
    bits: bool = False,
) -> Callable[[Case], float]:
    def formula(case: Case) -> float:
        p, layers, kvh, hd, ctx, gib, share, wb, kvb = case.args
        if bits:
            wb, kvb = 8 * wb, 8 * kvb
        memory = gib * (1e9 if gb else GIB)
        weight = p * wb if weights else 0
        room = {"total": share * memory - weight, "none": memory - weight}.get(
            usable, share * (memory - weight)
        )
        per_sequence = ctx * kv_factor * layers * kvh * hd * kvb
        if room <= 0:
            return 0
        exact = room / per_sequence
        if rounding == "none":
            return exact
        return {"floor": math.floor, "ceil": math.ceil, "round": round}[rounding](exact)

    return formula


BUDGET_RECIPE = (
    "the room is usable x memory_gib x 2**30 bytes minus params x weight_bytes (0 sequences "
    "if that is not positive); one sequence takes context x 2 x layers x kv_heads x head_dim "
    "x kv_bytes; the answer is the room divided by that, rounded down."
)

BUDGET = Panel(
    eid="serving_kv_budget",
    example=BUDGET_EXAMPLE,
    cases=tuple(_budget_case(s) for s in BUDGETS),
    expected=lambda c: _budget_variant()(c),
    variants={
        "ceil": (
            _budget_variant(rounding="ceil"),
            "you rounded up: one sequence more than fits. Round down (`//` or math.floor): "
            "the last, partial sequence has no room.",
        ),
        "round": (
            _budget_variant(rounding="round"),
            "you rounded to the nearest whole number; where it rounds up, that sequence does "
            "not fit. Round down (`//` or math.floor).",
        ),
        "unrounded": (
            _budget_variant(rounding="none"),
            "a batch is a whole number of sequences: round the quotient down (`//` or "
            "math.floor); the last, partial sequence has no room.",
        ),
        "kv_once": (
            _budget_variant(kv_factor=1),
            "you counted one vector per token and layer; the cache keeps a key AND a value: "
            "2 x layers x kv_heads x head_dim x kv_bytes bytes per token.",
        ),
        "gb": (
            _budget_variant(gb=True),
            "you took a GiB as 1e9 bytes; memory is counted in GiB, 2**30 bytes (7% more: "
            "a GPU's '80 GB' is 80 x 2**30).",
        ),
        "all_memory": (
            _budget_variant(usable="none"),
            "you used all of the memory; only `usable` of it (vLLM's 90%) is for the weights "
            "and the cache.",
        ),
        "usable_after_weights": (
            _budget_variant(usable="after"),
            "you took `usable` of what the weights leave; `usable` is the share of the whole "
            "memory that weights and cache may take together: usable x memory - weights.",
        ),
        "no_weights": (
            _budget_variant(weights=False),
            "you left the weights out: they take params x weight_bytes of the usable memory "
            "before any cache.",
        ),
        "bits": (
            _budget_variant(bits=True),
            "weight_bytes and kv_bytes are bytes per value already, not bits: no factor 8.",
        ),
    },
    features={
        "none": "weights that do not fit (the answer 0)",
        "mha": "a cache of every head (kv_heads = heads)",
        "quantised": "int4 weights or an int8 cache",
        "usable": "a usable share other than 90%",
    },
    recipe=BUDGET_RECIPE,
    unit="sequences",
    oracle={"gu.inference.max_batch": inference.max_batch},
    integer=True,
    negative="when the weights alone do not fit, no sequence does: return 0, not a negative batch.",
    nonfinite={
        "none": "where the weights do not fit your value is not finite: return 0 there.",
    },
)


# --- serving_speculative_tokens -----------------------------------------------------------------

SPEC_EXAMPLE = "def expected_tokens(acceptance, draft):"
SPECULATIONS = ((0.8, 4), (0.6, 3), (0.9, 1), (0.7, 2), (0.75, 7), (0.5, 0), (0.0, 5), (1.0, 3))


def _spec_case(acceptance: float, draft: int) -> Case:
    features = set()
    if acceptance == 1:
        features.add("one")
    if acceptance == 0:
        features.add("zero")
    if draft == 0:
        features.add("no_draft")
    return Case(
        f"acceptance {acceptance:g}, draft {draft}", (acceptance, draft), frozenset(features)
    )


def _geometric(a: float, k: int) -> float:
    return float(k) if a == 1 else (1 - a**k) / (1 - a)


def _monte_carlo_note(got: list[float]) -> str:
    a, k = SPECULATIONS[0]
    simulated = inference.speculative_monte_carlo(a, k, steps=100_000, seed=13)
    return (
        f"\nAt acceptance {a:g} and draft {k} yours is {got[0]:.4g}; 100,000 simulated "
        f"verifications give {simulated:.4g}."
    )


SPEC_RECIPE = (
    "a verification yields the drafted tokens up to the first rejected one (token i survives "
    "with probability a^i) plus one token of the target's own: 1 + a + a^2 + ... + a^k."
)

SPECULATIVE = Panel(
    eid="serving_speculative_tokens",
    example=SPEC_EXAMPLE,
    cases=tuple(_spec_case(a, k) for a, k in SPECULATIONS),
    expected=lambda c: inference.speculative_expected_tokens(*c.args),
    variants={
        "no_target_token": (
            lambda c: _geometric(c.args[0], c.args[1] + 1) - 1,
            "you counted the accepted drafts only: every verification also yields one token "
            "of the target's own (its correction after a rejection, or a bonus token when all "
            "k are accepted), so add 1.",
        ),
        "k_terms": (
            lambda c: _geometric(*c.args),
            "your sum has k terms; it has k + 1: the target's own token (a^0 = 1) and the k "
            "drafts, a^1 ... a^k.",
        ),
        "rejection_for_acceptance": (
            lambda c: _geometric(1 - c.args[0], c.args[1] + 1),
            "your values are the sum for the rejection probability 1 - a: the i-th draft "
            "survives with probability a^i, a the acceptance (so a high acceptance gives many "
            "tokens): 1 + a + a^2 + ... + a^k.",
        ),
        "independent": (
            lambda c: 1 + c.args[0] * c.args[1],
            "you counted each draft accepted with probability a on its own (1 + k a); a draft "
            "counts only if every draft before it was accepted too: a^i for the i-th.",
        ),
        "all_accepted": (
            lambda c: c.args[1] + 1,
            "you assume every draft is accepted (k + 1 tokens); each is accepted with "
            "probability a, and only up to the first rejection.",
        ),
        "unbounded": (
            lambda c: math.inf if c.args[0] == 1 else 1 / (1 - c.args[0]),
            "your formula ignores the draft length: with k drafts at most k + 1 tokens come "
            "out, so the sum stops at a^k.",
        ),
    },
    features={
        "one": "acceptance 1 (every draft accepted)",
        "zero": "acceptance 0 (every draft rejected)",
        "no_draft": "draft 0 (no speculation)",
    },
    recipe=SPEC_RECIPE,
    unit="tokens",
    oracle={
        "gu.inference.speculative_expected_tokens": inference.speculative_expected_tokens,
        "gu.inference.speculative_speedup": inference.speculative_speedup,
    },
    raises={
        ("one", "ZeroDivisionError"): (
            "at acceptance 1 the closed form (1 - a^(k+1)) / (1 - a) is 0/0; its limit is "
            "k + 1 (every draft accepted, plus the target's token): handle a == 1 apart."
        ),
    },
    nonfinite={
        "one": (
            "at acceptance 1 your value is not finite: (1 - a^(k+1)) / (1 - a) is 0/0 there; "
            "its limit is k + 1 (every draft accepted, plus the target's token)."
        ),
    },
    passed_note=_monte_carlo_note,
    special=frozenset({"one", "zero", "no_draft"}),
)


def _speculative_check(answer) -> CheckResult:
    # a closed form computed with numpy may warn at a = 1: the value is what is judged
    with np.errstate(divide="ignore", invalid="ignore"):
        return judge_panel(SPECULATIVE, answer)


# --- serving_paged_allocator --------------------------------------------------------------------

ALLOCATOR_EXAMPLE = "class BlockAllocator: def __init__(self, num_blocks, block_size): ..."

#: Scenarios: (num_blocks, block_size, operations). An operation is ("grow", seq, tokens),
#: ("free", seq) or ("blocks_for", tokens); after each one the checker compares the free blocks
#: and the tables with gu.inference.PagedAllocator's. A freed sequence comes back under its
#: name (a preempted one is prefilled again): it starts from 0 tokens.
SCENARIOS = (
    (8, 16, [("blocks_for", 0), ("blocks_for", 16), ("blocks_for", 17),
             ("grow", "a", 0), ("grow", "b", 33), ("grow", "a", 5), ("grow", "a", 20),
             ("grow", "a", 7), ("grow", "a", 1), ("free", "b"), ("grow", "c", 40),
             ("grow", "c", 50), ("grow", "a", 15), ("free", "a"), ("grow", "c", 50)]),
    (3, 1, [("blocks_for", 1), ("blocks_for", 2), ("grow", "x", 2), ("grow", "y", 2),
            ("grow", "y", 1), ("free", "x"), ("grow", "y", 2)]),
    (5, 3, [("blocks_for", 3), ("blocks_for", 4), ("grow", "a", 3), ("grow", "a", 1),
            ("grow", "b", 7), ("grow", "b", 2), ("grow", "b", 1), ("free", "a"),
            ("grow", "b", 1), ("grow", "d", 3), ("free", "d"), ("grow", "a", 2)]),
    (7, 5, [("grow", 1, 12), ("grow", 2, 13), ("grow", 3, 4), ("free", 2), ("grow", 1, 3),
            ("grow", 4, 11), ("grow", 3, 2), ("free", 1), ("free", 3), ("free", 4)]),
    (2, 2, [("blocks_for", 5), ("grow", "s", 3), ("grow", "s", 1), ("grow", "s", 1),
            ("free", "s"), ("grow", "t", 4)]),
)  # fmt: skip


class _Off(Exception):
    """The replay found a difference: (what, hint)."""

    def __init__(self, what: str, hint: str) -> None:
        super().__init__(what)
        self.what, self.hint = what, hint


def _op_text(op) -> str:
    if op[0] == "grow":
        return f"grow({op[1]!r}, {op[2]})"
    return f"{op[0]}({op[1]!r})"


def _free_count(learner) -> int | None:
    value = learner.free_blocks
    if callable(value):
        value = value()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        number = _number(value)
        if number is None or not number.is_integer():
            return None
        value = int(number)
    return int(value)


def _ids(value, num_blocks: int) -> list[int] | None:
    """``value`` as a list of block numbers in range, or None."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v < num_blocks:
            return None
        out.append(int(v))
    return out


def _count_hint(held: int, tokens: int, size: int, got: int, history: list) -> str:
    """Why a grow took ``got`` new blocks: the formula that reproduces this grow and every
    earlier one (``history``: (held, tokens, size, blocks taken)), or the rule. The learner's
    own blocks_for was right on every size asked before (the scenarios ask it first), so the
    rules that need a wrong blocks_for are tried only when the learner has none of their own
    that was checked."""

    def need(n: int) -> int:
        return -(-n // size)

    rules = {
        "the new tokens alone": (
            lambda h, t, s: -(-t // s),
            "you counted blocks for the new tokens alone; the free slots of the sequence's "
            "last block come first: new blocks = blocks_for(held + tokens) - blocks_for(held).",
        ),
        "floor": (
            lambda h, t, s: (h + t) // s - h // s,
            "you count full blocks (floor); a partly filled block is a block too: "
            "blocks_for(n) = ceil(n / block_size), i.e. -(-n // block_size).",
        ),
        "a block too many": (
            lambda h, t, s: (h + t) // s + 1 - (h // s + 1 if h else 0),
            "blocks_for(n) gives one block too many when n is a multiple of block_size "
            "(n // block_size + 1); use ceil(n / block_size), i.e. -(-n // block_size).",
        ),
        "one per grow": (
            lambda h, t, s: 1 if t else 0,
            "you take one block per grow whatever the tokens; take as many as the sequence's "
            "new length needs: blocks_for(held + tokens) - blocks_for(held).",
        ),
        "always one": (
            lambda h, t, s: 1,
            "you take a block on every grow, even when the last block has room (or nothing is "
            "added); a new block only when the last one is full.",
        ),
    }
    del rules["floor"], rules["a block too many"]  # blocks_for itself passed: see above
    seen = [*history, (held, tokens, size, got)]
    found = [
        hint for rule, hint in rules.values() if all(rule(h, t, s) == n for h, t, s, n in seen)
    ]
    if len(found) == 1:
        return found[0]
    if found:
        return "either of two mistakes gives these counts. " + " Or: ".join(found[:2])
    return (
        f"{held} + {tokens} tokens need {need(held + tokens)} blocks of {size} and the sequence "
        f"held {need(held)}: new blocks = blocks_for(held + tokens) - blocks_for(held)."
    )


def _replay(cls, scenario, watch: _Watch, history: list) -> None:
    """Replay one scenario on the learner's class and on the oracle; raise :class:`_Off` at
    the first difference."""
    num_blocks, size, ops = scenario
    where = f"With {num_blocks} blocks of {size} tokens"
    try:
        learner = _run(cls, (num_blocks, size), watch)
    except _Raised as error:
        raise _Off(
            f"BlockAllocator({num_blocks}, {size}) raised {error.text()}.",
            "__init__ takes (num_blocks, block_size) and sets up the free blocks.",
        ) from None
    oracle = inference.PagedAllocator(num_blocks, size)
    done: list[str] = []
    freed: dict = {}  # tokens a sequence held when it was last freed

    def off(what: str, hint: str):
        steps = f" after {', '.join(done[-4:])}" if done else ""
        return _Off(f"{where}{steps}: {what}", hint)

    for op in ops:
        kind = op[0]
        call = _op_text(op)
        if kind == "blocks_for":
            try:
                got = _run(learner.blocks_for, (op[1],), watch)
            except _Raised as error:
                raise off(
                    f"blocks_for({op[1]}) raised {error.text()}.",
                    "blocks_for(tokens) returns the blocks that many tokens need.",
                ) from None
            want = oracle.blocks_for(op[1])
            number = _number(got)
            if number != want:
                hint = (
                    "a block holds block_size tokens and a partly filled one counts whole: "
                    "ceil(tokens / block_size), i.e. -(-tokens // block_size)."
                )
                if number == op[1] // size:
                    hint = "you rounded down; " + hint
                elif number == op[1] // size + 1:
                    hint = "one block too many when tokens is a multiple of block_size; " + hint
                raise off(f"blocks_for({op[1]}) returned {_shown(got)}, expected {want}.", hint)
            done.append(call)
            continue
        free_before = oracle.free_blocks
        if kind == "free":
            try:
                _run(learner.free, (op[1],), watch)
            except _Raised as error:
                raise off(
                    f"free({op[1]!r}) raised {error.text()}.",
                    "free(seq) gives back every block of seq and forgets it.",
                ) from None
            freed[op[1]] = oracle._tokens.get(op[1], 0)
            oracle.free(op[1])
        else:
            seq, tokens = op[1], op[2]
            held = oracle._tokens.get(seq, 0)
            table = oracle.block_table(seq) if seq in oracle._tables else []
            try:
                want = oracle.grow(seq, tokens)
            except inference.CacheFull:
                want = None
            try:
                got = _run(learner.grow, (seq, tokens), watch)
            except _Raised as error:
                if isinstance(error.error, inference.CacheFull):
                    if want is not None:
                        raise off(
                            f"{call} raised CacheFull, but {free_before} blocks were free and "
                            f"it needed {len(want)}.",
                            "raise CacheFull only when fewer blocks are free than the new "
                            "length needs.",
                        ) from None
                    got = None
                elif want is None:
                    raise off(
                        f"{call} needed more blocks than the {free_before} free and raised "
                        f"{error.text()}.",
                        "raise gu.inference.CacheFull (the scheduler catches that one to "
                        "preempt), taking no block.",
                    ) from None
                else:
                    hint = "run the same operations in a cell of your own to see the error."
                    if seq not in table and isinstance(error.error, KeyError):
                        hint = "a new sequence starts with no blocks and 0 tokens."
                    raise off(f"{call} raised {error.text()}.", hint) from None
            else:
                if want is None:
                    raise off(
                        f"{call} returned {_shown(got)}, but only {free_before} blocks were "
                        "free, fewer than it needs.",
                        "check first that enough blocks are free; if not, raise "
                        "gu.inference.CacheFull and take nothing.",
                    )
                blocks = _ids(got, num_blocks)
                if blocks is None:
                    raise off(
                        f"{call} returned {_shown(got)}.",
                        f"return the list of the block numbers (0 to {num_blocks - 1}) it took.",
                    )
                if len(blocks) != len(want):
                    hint = _count_hint(held, tokens, size, len(blocks), history)
                    old = freed.get(seq, 0)
                    if (
                        seq not in table
                        and old
                        and len(blocks) == (-(-(old + tokens) // size) + (old // -size))
                    ):  # the count of a sequence that still holds its old tokens
                        hint = (
                            f"{seq!r} was freed while it held {old} tokens, and your grow "
                            f"counted from {old}, not from 0: free must forget the sequence "
                            "(its blocks and its tokens), so that one that comes back (a "
                            "preempted sequence, prefilled again) starts empty."
                        )
                    mine = _tables(learner, oracle, watch).get(seq)
                    whole = table and _ids(mine, num_blocks) == blocks  # held blocks before
                    if len(blocks) > len(want) and whole:
                        hint = (
                            "grow returns the blocks it took just now, not the sequence's "
                            "whole table (block_table gives that)."
                        )
                    raise off(
                        f"{call} took {len(blocks)} new block(s) for a sequence holding {held} "
                        f"tokens; expected {len(want)}.",
                        hint,
                    )
                history.append((held, tokens, size, len(blocks)))
                _distinct(learner, blocks, seq, call, oracle, watch, off)
        done.append(call)
        _same_state(learner, oracle, call, free_before, watch, off)


def _tables(learner, oracle, watch) -> dict:
    """The learner's block table of every sequence the oracle holds."""
    out = {}
    for seq in oracle._tables:
        try:
            out[seq] = _run(learner.block_table, (seq,), watch)
        except _Raised as error:
            raise _Off(
                f"block_table({seq!r}) raised {error.text()}.",
                "block_table(seq) returns the list of the blocks seq holds, in the order it "
                "took them.",
            ) from None
    return out


def _distinct(learner, blocks, seq, call, oracle, watch, off) -> None:
    if len(set(blocks)) != len(blocks):
        raise off(f"{call} returned {blocks}: a block twice.", "take each block once.")
    for other, table in _tables(learner, oracle, watch).items():
        ids = _ids(table, oracle.num_blocks) or []
        shared = set(blocks) & set(ids if other != seq else ids[: len(ids) - len(blocks)])
        if shared:
            block = min(shared)
            owner = "it already held" if other == seq else f"sequence {other!r} holds"
            raise off(
                f"{call} returned block {block}, which {owner}.",
                "hand out only free blocks: keep a list of the free ones, take from it in "
                "grow and put a sequence's blocks back in free.",
            )


def _same_state(learner, oracle, call, free_before, watch, off) -> None:
    try:
        free = _free_count(learner)
    except Exception as error:  # an attribute the class does not have, or one that raises
        raise off(
            f"reading free_blocks raised {type(error).__name__}.",
            "give the class a free_blocks attribute or property: the number of free blocks.",
        ) from None
    if free is None:
        raise off(
            "free_blocks is not a whole number.",
            "free_blocks is the number of blocks no sequence holds.",
        )
    want = oracle.free_blocks
    if free != want:
        if call.startswith("free") and free == free_before:
            hint = "free(seq) must give every block of seq back to the free ones."
        elif call.startswith("grow") and free == free_before != want:
            hint = "free_blocks must fall by the blocks a grow takes."
        elif call.startswith("grow") and want == free_before:
            hint = (
                "a grow that raises CacheFull takes nothing: check that enough blocks are "
                "free before taking any."
            )
        else:
            hint = "free_blocks is num_blocks minus the blocks the sequences hold."
        raise off(f"after {call}, free_blocks is {free}; expected {want}.", hint)
    for seq, table in _tables(learner, oracle, watch).items():
        ids = _ids(table, oracle.num_blocks)
        expected = oracle.block_table(seq)
        if ids is None or len(ids) != len(expected):
            raise off(
                f"after {call}, block_table({seq!r}) is {_shown(table)}; it holds "
                f"{len(expected)} block(s).",
                "block_table(seq) lists every block seq took, in the order it took them.",
            )


def _allocator_check(answer) -> CheckResult:
    eid = "serving_paged_allocator"
    if isinstance(answer, type) and issubclass(answer, inference.PagedAllocator):
        return _copied(eid, "gu.inference.PagedAllocator (your class inherits from it)")
    if not callable(answer):
        return failed(
            eid,
            f"Expected a class, got {_shown(answer)} ({type(answer).__name__}).",
            "define `class BlockAllocator:` with __init__(self, num_blocks, block_size), "
            "blocks_for, grow, free, block_table and free_blocks; pass the class itself.",
        )
    problem = _cannot_call(eid, answer, 2, ALLOCATOR_EXAMPLE)
    if problem is not None:
        return problem
    oracle_methods = {
        f"gu.inference.PagedAllocator.{n}": getattr(inference.PagedAllocator, n)
        for n in ("grow", "free", "can_grow", "blocks_for")
    }
    watch = _Watch(oracle_methods)
    history: list = []
    for scenario in SCENARIOS:
        try:
            _replay(answer, scenario, watch, history)
        except NotImplementedError:
            return not_attempted(eid)
        except _Off as off:
            if watch.called:
                return _copied(eid, watch.called)
            return failed(eid, off.what, off.hint)
        except AttributeError as error:  # a method or attribute the class lacks
            name = getattr(error, "name", None) or "a method"
            return failed(
                eid,
                f"Your class has no {name}.",
                "it needs blocks_for(tokens), grow(seq, tokens), free(seq), block_table(seq) "
                "and free_blocks.",
            )
        if watch.called:
            return _copied(eid, watch.called)
    ops = sum(len(s[2]) for s in SCENARIOS)
    sizes = ", ".join(str(s[1]) for s in SCENARIOS[:-1]) + f" and {SCENARIOS[-1][1]}"
    return passed(
        eid,
        f"{ops} operations in {len(SCENARIOS)} caches agree with\n"
        f"gu.inference.PagedAllocator (blocks of {sizes} tokens).",
    )


# --- serving_schedule_step -----------------------------------------------------------------------

SCHEDULE_EXAMPLE = "def schedule_step(state, token_budget, max_batch):"

#: Request mixes: (what they test, requests as (id, arrival step, prompt, output), token_budget,
#: num_blocks, block_size, max_batch). Each runs through gu.inference.serve's loop with the
#: learner's step, lock-step with gu.inference.schedule_step.
MIXES = (
    ("1 request, its prompt longer than the budget", [(0, 0, 7, 4)], 3, 8, 4, None),
    ("2 requests, the second arriving while the first decodes",
     [(0, 0, 5, 6), (1, 2, 9, 3)], 8, 16, 3, None),
    ("3 requests in a cache that fills up", [(0, 0, 2, 6), (1, 0, 4, 5), (2, 0, 4, 5)],
     16, 3, 4, None),
    ("5 requests, their decodes using up a budget of 3",
     [(0, 0, 1, 6), (1, 0, 1, 4), (2, 0, 1, 5), (3, 0, 2, 5), (4, 1, 3, 2)], 3, 32, 2, None),
    ("5 requests, max_batch 2", [(0, 0, 4, 3), (1, 0, 6, 2), (2, 0, 3, 4), (3, 1, 5, 1),
                                 (4, 3, 2, 2)], 6, 32, 2, 2),
    ("3 requests, the oldest waiting one too long for the free blocks",
     [(0, 0, 13, 5), (1, 1, 9, 2), (2, 1, 3, 2)], 32, 6, 4, None),
    ("7 requests of mixed lengths in a small cache",
     [(0, 0, 11, 6), (1, 0, 3, 9), (2, 1, 17, 4), (3, 2, 5, 7), (4, 2, 2, 10), (5, 4, 9, 5),
      (6, 6, 13, 3)], 10, 9, 5, 4),
)  # fmt: skip

RULE_DECODE = (
    "every running sequence past its prompt (to_prefill == 0) decodes one token, in the order "
    "of state.running, each spending one token of the budget, before any prompt chunk."
)
RULE_CHUNK = (
    "after the decodes, chunks of min(budget left, to_prefill) tokens: the running sequences still "
    "prefilling first, then the waiting ones, in order; stop at the first that finds no budget, "
    "a full batch (a waiting one) or too few free blocks for its chunk."
)
RULE_VICTIM = (
    "when a decoding sequence finds no free block, preempt the most recently admitted sequence "
    "(state.running[-1], possibly itself), again until it can grow."
)

#: Known mistakes, computed on the same states as the learner's step: name -> hint.
STEP_MISTAKES = {
    "prefill_first": "your step prefills before it decodes: " + RULE_DECODE,
    "whole_prompt": (
        "you took a whole prompt as one chunk, more than the budget left; a chunk is "
        "min(budget left, to_prefill), and the next step takes the rest."
    ),
    "per_request_budget": (
        "the budget is per step, not per request: decodes and chunks together spend at most "
        "token_budget tokens, so each chunk is min(budget left, to_prefill)."
    ),
    "free_decodes": "each decode spends one token of the budget too, before the chunks.",
    "oldest_victim": (
        "your step preempted the oldest running sequence (state.running[0]) each time; preempt "
        "the most recently admitted one (state.running[-1]): it has the least work to redo."
    ),
    "self_victim": (
        "your step preempted the sequence that needed the block each time; the victim is the "
        "most recently admitted one (state.running[-1]), which is that sequence only when it "
        "is the newest."
    ),
    "no_preemption": (
        "a decoding sequence that finds no free block does not just wait: preempt the most "
        "recently admitted sequence (state.running[-1], possibly itself), again until it can "
        "grow."
    ),
    "no_free": "free the victim's blocks (state.cache.free(id)): that is what preempting is for.",
    "no_recompute": (
        "a preempted sequence loses its whole cache: its to_prefill is its prompt plus the "
        "tokens it generated (recomputation), not the prompt alone."
    ),
    "to_the_back": (
        "put a preempted sequence at the front of state.waiting (state.waiting.insert(0, seq)): "
        "it is the first to be prefilled again."
    ),
    "skip_blocked": (
        "when a chunk does not fit (too few free blocks), stop there: a later request must not "
        "go ahead of an older one (oldest first)."
    ),
    "waiting_first": (
        "the chunks of sequences already running come before new admissions from state.waiting."
    ),
    "no_max_batch": "admit a waiting sequence only while len(state.running) < max_batch.",
    "decode_prefilling": (
        "a sequence still prefilling (to_prefill > 0) does not decode: its first token comes "
        "with the chunk that ends its prompt."
    ),
}


def _variant_step(state, budget_total, max_batch, mistake):
    """gu.inference.schedule_step with one known mistake (``STEP_MISTAKES``)."""
    running, waiting, cache = state.running, state.waiting, state.cache
    budget = budget_total
    decode, prefill, admitted, preempted = [], [], [], []

    def preempt(victim) -> None:
        if mistake != "no_free":
            cache.free(victim.id)
        running.remove(victim)
        victim.to_prefill = victim.request.prompt
        if mistake != "no_recompute":
            victim.to_prefill += victim.generated
        if mistake == "to_the_back":
            waiting.append(victim)
        else:
            waiting.insert(0, victim)
        preempted.append(victim.id)

    def decode_phase() -> None:
        nonlocal budget
        ready = [s for s in running if s.to_prefill == 0 or mistake == "decode_prefilling"]
        for seq in ready:
            if seq not in running or (budget <= 0 and mistake != "free_decodes"):
                continue
            while not cache.can_grow(seq.id) and seq in running:
                if mistake == "no_preemption":
                    break
                victim = {"oldest_victim": running[0], "self_victim": seq}.get(mistake, running[-1])
                preempt(victim)
            if seq not in running or not cache.can_grow(seq.id):
                continue
            cache.grow(seq.id)
            if mistake != "free_decodes":
                budget -= 1
            decode.append(seq.id)

    def prefill_phase() -> None:
        nonlocal budget
        prefilling = [s for s in running if s.to_prefill > 0]
        order = list(waiting) + prefilling if mistake == "waiting_first" else prefilling + waiting
        for seq in order:
            full = max_batch is not None and len(running) >= max_batch
            if mistake == "no_max_batch":
                full = False
            if budget <= 0:
                break
            if seq not in running and full:
                break
            chunk = min(budget, seq.to_prefill)
            if mistake == "whole_prompt":
                chunk = seq.to_prefill
            if not cache.can_grow(seq.id, chunk):
                if mistake == "skip_blocked":
                    continue
                break
            if seq not in running:
                waiting.remove(seq)
                running.append(seq)
                admitted.append(seq.id)
            cache.grow(seq.id, chunk)
            seq.to_prefill -= chunk
            if mistake != "per_request_budget":  # each request spends the budget left anew
                budget -= chunk
            prefill.append((seq.id, chunk))

    if mistake == "prefill_first":
        prefill_phase()
        decode_phase()
    else:
        decode_phase()
        prefill_phase()
    return inference.StepPlan(tuple(decode), tuple(prefill), tuple(admitted), tuple(preempted))


def _ints(value) -> list[int] | None:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            return None
        out.append(int(v))
    return out


def _as_plan(value):
    """The learner's plan as (decode set, prefill dict, admitted set, preempted set), or None
    with a sentence when it cannot be read."""
    if isinstance(value, dict):
        fields = {k: value.get(k, ()) for k in ("decode", "prefill", "admitted", "preempted")}
        if not set(value) & set(fields):
            return None
    elif all(hasattr(value, k) for k in ("decode", "prefill", "admitted", "preempted")):
        fields = {k: getattr(value, k) for k in ("decode", "prefill", "admitted", "preempted")}
    else:
        return None
    chunks = fields["prefill"]
    pairs = list(chunks.items()) if isinstance(chunks, dict) else chunks
    try:
        pairs = [tuple(p) for p in pairs]
    except TypeError:
        return None
    if not all(len(p) == 2 and _ints(p) is not None for p in pairs):
        return None
    lists = [_ints(fields[k]) for k in ("decode", "admitted", "preempted")]
    if any(x is None for x in lists):
        return None
    prefill = {}
    for i, n in pairs:
        prefill[int(i)] = prefill.get(int(i), 0) + int(n)
    return (frozenset(lists[0]), prefill, frozenset(lists[1]), frozenset(lists[2]))


def _plan_text(plan) -> str:
    decode, prefill, admitted, preempted = plan
    parts = [f"decodes requests {sorted(decode)}" if decode else "decodes nothing"]
    chunks = [f"{n} token{'s' * (n != 1)} of request {i}" for i, n in prefill.items()]
    parts.append("prefills " + ", ".join(chunks) if chunks else "prefills nothing")
    if admitted:
        parts.append(f"admits {sorted(admitted)}")
    if preempted:
        parts.append(f"preempts {sorted(preempted)}")
    return "; ".join(parts)


def _state_text(state, budget) -> str:
    def seq(s) -> str:
        return f"{s.id} ({s.to_prefill} to prefill)" if s.to_prefill else f"{s.id} (decoding)"

    running = ", ".join(seq(s) for s in state.running) or "none"
    waiting = ", ".join(str(s.id) for s in state.waiting) or "none"
    return (
        f"running {running}; waiting {waiting}; {state.cache.free_blocks} free block(s) of "
        f"{state.cache.block_size}; budget {budget}"
    )


class _Lockstep:
    """The learner's step as :func:`gu.inference.serve` calls it, compared at every step with
    the reference on a copy of the same state; raises :class:`_Off` at the first difference."""

    def __init__(self, answer, mix, watch: _Watch, history: list) -> None:
        self.answer, self.mix, self.watch, self.history = answer, mix, watch, history
        self.step = 0

    def off(self, state_text: str, what: str, hint: str) -> _Off:
        name, _, budget, blocks, size, max_batch = self.mix
        batch = f", max_batch {max_batch}" if max_batch else ""
        return _Off(
            f"Mix '{name}' (budget {budget}, {blocks} blocks of {size}{batch}), step "
            f"{self.step}, {state_text}: {what}",
            hint,
        )

    def __call__(self, state, token_budget, max_batch, policy="continuous"):
        before = copy.deepcopy(state)
        reference = copy.deepcopy(state)
        want_plan = inference.schedule_step(reference, token_budget, max_batch)
        want = _as_plan(want_plan)
        text = _state_text(before, token_budget)
        try:
            got = _run(self.answer, (state, token_budget, max_batch), self.watch)
        except _Raised as error:
            hint = "run the lab's example state through your step in a cell to see the error."
            if isinstance(error.error, inference.CacheFull):
                hint = (
                    "check state.cache.can_grow(id, tokens) before each grow: "
                    + RULE_VICTIM
                    + " A chunk that does not fit waits."
                )
            raise self.off(text, f"your step raised {error.text()}.", hint) from None
        plan = _as_plan(got)
        if plan is None:
            raise self.off(
                text,
                f"your step returned {_shown(got)}.",
                "return gu.inference.StepPlan(decode=[ids], prefill=[(id, tokens), ...], "
                "admitted=[ids], preempted=[ids]).",
            )
        self.history.append((before, token_budget, max_batch, plan))
        if plan != want:
            raise self.off(
                text,
                f"your step {_plan_text(plan)}; expected: {_plan_text(want)}.",
                self._plan_hint(plan, want),
            )
        shapes = (
            isinstance(getattr(state, "running", None), list),
            isinstance(getattr(state, "waiting", None), list),
            isinstance(getattr(state, "cache", None), inference.PagedAllocator),
        )
        if not all(shapes) or not all(
            isinstance(x, inference.Seq) for x in state.running + state.waiting
        ):
            raise self.off(
                text,
                "after your step, state.running, state.waiting or state.cache is no longer what "
                "the loop reads.",
                "change the lists in place or put new lists of the same sequences back "
                "(state.running = [...]); keep state.cache the allocator you were given.",
            )
        self._same_state(state, reference, text, plan)
        self.step += 1
        return want_plan  # the same plan as the learner's, in serve()'s form

    def _plan_hint(self, plan, want) -> str:
        found = []
        for mistake, hint in STEP_MISTAKES.items():
            try:
                if all(
                    _as_plan(_variant_step(copy.deepcopy(s), b, m, mistake)) == p
                    for s, b, m, p in self.history
                ):
                    found.append(hint)
            except Exception:  # the mistaken step cannot go on from this state
                continue
        if len(found) == 1:
            return found[0]
        if found:
            return "either of two mistakes gives these plans. " + " Or: ".join(found[:2])
        again = sorted(plan[0] & plan[3])
        if again and again != sorted(want[0] & want[3]):
            who = f"request {again[0]}" if len(again) == 1 else f"requests {again}"
            return (
                f"your step both decoded and preempted {who}: one preempted earlier in the "
                "step does not decode (check seq in state.running before it decodes), and one "
                "that has decoded is never a later victim (victims come from the end of "
                "state.running, after it)."
            )
        empty = [i for i, n in plan[1].items() if n <= 0]
        if empty:
            return (
                f"your step ran a chunk of {plan[1][empty[0]]} tokens for request {empty[0]}: "
                "stop the chunks when no budget is left; nobody is admitted without a chunk."
            )
        if plan[3] != want[3]:
            return RULE_VICTIM
        if plan[0] != want[0]:
            return RULE_DECODE
        return RULE_CHUNK[0].upper() + RULE_CHUNK[1:]

    def _same_state(self, state, reference, text, plan) -> None:
        """After the step: the learner's state must be the reference's."""

        def ids(seqs) -> list | None:
            try:
                return [s.id for s in seqs]
            except Exception:
                return None

        for s in reference.waiting + reference.running:
            mine = next(
                (x for x in list(state.running) + list(state.waiting) if x.id == s.id), None
            )
            if mine is None:
                raise self.off(
                    text,
                    f"after your step, request {s.id} is neither running nor waiting.",
                    "a preempted sequence goes back to state.waiting; a sequence leaves "
                    "state.running only when preempted (the loop retires finished ones).",
                )
            if mine.generated != s.generated:
                raise self.off(
                    text,
                    f"after your step, request {s.id} has generated {_shown(mine.generated)}; "
                    f"expected {s.generated}.",
                    "leave generated as it is: the loop counts the tokens it hands out, and a "
                    "preempted sequence keeps its tokens (they are recomputed, not produced "
                    "again).",
                )
            if mine.to_prefill != s.to_prefill:
                hint = "subtract each chunk from the sequence's to_prefill."
                if s.id in plan[3]:
                    hint = (
                        "a preempted sequence loses its cache: to_prefill = its prompt plus "
                        "the tokens it generated (recomputation)."
                    )
                raise self.off(
                    text,
                    f"after your step, request {s.id} has to_prefill {_shown(mine.to_prefill)}; "
                    f"expected {s.to_prefill}.",
                    hint,
                )
        held = set(getattr(state.cache, "_tokens", {}))
        for s in reference.running:
            want_tokens = reference.cache.tokens(s.id)
            got_tokens = state.cache.tokens(s.id) if s.id in held else 0
            if got_tokens != want_tokens:
                raise self.off(
                    text,
                    f"after your step, request {s.id} holds {got_tokens} tokens of cache; "
                    f"expected {want_tokens}.",
                    "grow the cache for every token the step runs: "
                    "state.cache.grow(id, 1) for a decode, state.cache.grow(id, chunk) for a "
                    "chunk.",
                )
        for s in reference.waiting:
            if s.id in held:
                raise self.off(
                    text,
                    f"after your step, preempted request {s.id} still holds cache blocks.",
                    "free the victim's blocks: state.cache.free(id).",
                )
        if ids(state.waiting) != ids(reference.waiting):
            hint = "admit waiting sequences in order, removing each from state.waiting."
            if plan[3]:
                hint = (
                    "put a preempted sequence at the front of state.waiting "
                    "(state.waiting.insert(0, seq)): it is the first to be prefilled again."
                )
            raise self.off(
                text,
                f"after your step, waiting is {ids(state.waiting)}; expected "
                f"{ids(reference.waiting)}.",
                hint,
            )
        if ids(state.running) != ids(reference.running):
            raise self.off(
                text,
                f"after your step, running is {ids(state.running)}; expected "
                f"{ids(reference.running)}.",
                "an admitted sequence goes to the end of state.running (admission order); "
                "a preempted one leaves it.",
            )


def _metrics(result) -> tuple:
    return (result.steps, result.tokens, result.preemptions, result.first_token, result.per_token)


def _schedule_check(answer) -> CheckResult:
    eid = "serving_schedule_step"
    problem = _cannot_call(eid, answer, 3, SCHEDULE_EXAMPLE)
    if problem is not None:
        return problem
    watch = _Watch(
        {
            "gu.inference.schedule_step": inference.schedule_step,
            "gu.inference.serve": inference.serve,
        }
    )
    history: list = []
    steps = preemptions = 0
    for mix in MIXES:
        name, requests, budget, blocks, size, max_batch = mix
        requests = [inference.Request(*r) for r in requests]
        kwargs = dict(token_budget=budget, num_blocks=blocks, block_size=size, max_batch=max_batch)
        want = inference.serve(requests, **kwargs)
        lockstep = _Lockstep(answer, mix, watch, history)
        try:
            got = inference.serve(
                requests, scheduler=lockstep, max_steps=2 * want.steps + 10, **kwargs
            )
        except NotImplementedError:
            return not_attempted(eid)
        except _Off as off:
            if watch.called:
                return _copied(eid, watch.called)
            return failed(eid, off.what, off.hint)
        if watch.called:
            return _copied(eid, watch.called)
        if _metrics(got) != _metrics(want):  # every plan agreed: only a changed state gets here
            return failed(
                eid,
                f"Mix '{name}': every step planned the same, yet the run took {got.steps} steps "
                f"and {got.preemptions} preemptions; the reference {want.steps} and "
                f"{want.preemptions}.",
                "change only state.running, state.waiting, the sequences' to_prefill and the "
                "cache; the loop hands out the tokens.",
            )
        steps += want.steps
        preemptions += want.preemptions
    return passed(
        eid,
        f"{steps} steps of {len(MIXES)} request mixes (1 to 7 requests, {preemptions} "
        "preemptions) plan\nwhat gu.inference.schedule_step plans; every run's TTFT and TPOT "
        "agree.",
    )


# --- the exercises ------------------------------------------------------------------------------


def _exercise(id: str, title: str, signature: str, run, launch: str = "") -> Exercise:  # noqa: A002
    return Exercise(
        id=id,
        chapter=CHAPTER,
        title=title,
        signature=signature,
        launch=launch or "called on the checker's panel of cases, in the checker's own process",
        run=run,
        kind="function",
    )


register(
    _exercise(
        "serving_decode_step",
        "The lower bound of one decode step",
        DECODE_EXAMPLE.removeprefix("def ").rstrip(":") + " -> seconds",
        lambda answer: judge_panel(DECODE, answer),
    )
)
register(
    _exercise(
        "serving_kv_budget",
        "The largest batch the KV cache allows",
        BUDGET_EXAMPLE.removeprefix("def ").rstrip(":") + " -> whole sequences",
        lambda answer: judge_panel(BUDGET, answer),
    )
)
register(
    _exercise(
        "serving_paged_allocator",
        "A paged KV cache: the block table",
        "class BlockAllocator(num_blocks, block_size) with blocks_for(tokens) -> int, "
        "grow(seq, tokens) -> list of new blocks (raises gu.inference.CacheFull, taking "
        "nothing), free(seq), block_table(seq) -> list, free_blocks -> int",
        _allocator_check,
    )
)
register(
    _exercise(
        "serving_speculative_tokens",
        "Tokens per verification of speculative decoding",
        SPEC_EXAMPLE.removeprefix("def ").rstrip(":") + " -> expected tokens",
        _speculative_check,
    )
)
register(
    _exercise(
        "serving_schedule_step",
        "One step of a continuous-batching scheduler",
        SCHEDULE_EXAMPLE.removeprefix("def ").rstrip(":")
        + " -> gu.inference.StepPlan(decode, prefill, admitted, preempted), changing state",
        _schedule_check,
        launch=f"called at every step of gu.inference.serve's loop on {len(MIXES)} request mixes, "
        "beside gu.inference.schedule_step, in the checker's own process",
    )
)
