"""Shared machinery for kernel exercises: random inputs, NaN-poisoned outputs, the launch, and
plain-language explanations of what went wrong. Chapter modules describe cases and hints only.

Since chapter 04, a kernel that is correct is also traced (``gu.trace``) on one small case: a race,
or a ``syncthreads`` that only some threads of a block reach (``report.divergent_barriers``),
fails the check by default (``check_races=False`` opts out), and ``requirements`` (from
``_trace_checks``, re-exported here: ``coalesced``, ``no_bank_conflicts``, ``uses_shared_memory``,
``max_loads_per_element``, ``max_stores_per_element``, ``max_divergent_branches``) add efficiency
conditions. ``trace_case`` picks the traced launch (default: the largest case of at most
``TRACE_THREAD_LIMIT`` threads).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import runtime
from ..one_gpu.trace import Race
from ..pickling import python_function
from ._compiles import compile_problem
from ._engine import (
    Mismatch,
    NotAttempted,
    changed_element,
    changed_input_failure,
    correct_on,
    documented_arguments,
    mismatch_of,
    run_cases,
    wrote_nothing_text,
)
from ._errors import KernelError, explain, signature_problem
from ._registry import CheckResult, Exercise, failed, passed
from ._trace_checks import (
    TRACE_THREAD_LIMIT,
    TraceRequirement,
    coalesced,
    max_divergent_branches,
    max_loads_per_element,
    max_stores_per_element,
    no_bank_conflicts,
    race_hint,
    trace_kernel,
    uses_shared_memory,
)

__all__ = [
    "GUARD_HINT_1D",
    "GUARD_HINT_2D",
    "TRACE_THREAD_LIMIT",
    "Case",
    "KernelError",
    "Mismatch",
    "TraceRequirement",
    "blocks_for",
    "coalesced",
    "kernel_exercise",
    "max_divergent_branches",
    "max_loads_per_element",
    "max_stores_per_element",
    "no_bank_conflicts",
    "poisoned",
    "race_hint",
    "random_inputs",
    "uses_shared_memory",
]


@dataclass
class Case:
    """One launch: inputs, output buffers (copied fresh, usually NaN), and the expected outputs."""

    label: str
    griddim: tuple[int, ...] | int
    blockdim: tuple[int, ...] | int
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    expected: tuple[np.ndarray, ...]
    rtol: float = 1e-5
    atol: float = 1e-6
    extra: dict = field(default_factory=dict)
    #: Positions in ``inputs`` the kernel may change (scratch space); any other input that
    #: changes fails the check, as the kernel should only read it.
    writable_inputs: tuple[int, ...] = ()


def random_inputs(rng: np.random.Generator, *shapes, low=-1.0, high=1.0) -> tuple[np.ndarray, ...]:
    """Fresh float32 arrays of random values (never all zeros, so 'did nothing' can't pass)."""
    return tuple(rng.uniform(low, high, size=shape).astype(np.float32) for shape in shapes)


def poisoned(*shapes) -> tuple[np.ndarray, ...]:
    """Output buffers full of NaN: an element the kernel never writes stays visibly unwritten."""
    return tuple(np.full(shape, np.nan, dtype=np.float32) for shape in shapes)


def blocks_for(n: int, per_block: int) -> int:
    """Enough blocks of ``per_block`` threads for ``n`` items: ceil(n / per_block)."""
    return (n + per_block - 1) // per_block


def launch(kernel, case: Case, args: Sequence[np.ndarray]) -> KernelError | None:
    """Launch the kernel on ``args``; None when it ran, else a :class:`KernelError` (a ``str``)
    that says, in the learner's terms, what went wrong and where."""
    try:
        kernel[case.griddim, case.blockdim](*args)
        from numba import cuda

        cuda.synchronize()
    except NotImplementedError as error:
        if not _not_handled(error):
            raise NotAttempted from error
        return explain(error, python_function(kernel), case.blockdim)
    except Exception as error:
        explained = explain(error, python_function(kernel), case.blockdim)
        if _divergent_barrier(error) and isinstance(getattr(error, "line", None), int):
            # the course's simulator stops where numba's runs on (gu.trace then finds it):
            # the same account as a traced divergent barrier
            return KernelError(
                "barrier",
                _divergent_text([error.line]),
                DIVERGENT_BARRIER_HINT,
                exc_type=explained.exc_type,
                line=error.line,
                source=explained.source,
            )
        return explained
    return None


def _divergent_barrier(error: BaseException) -> bool:
    """A cuda.syncthreads() not every thread of the block reaches, as the course's simulator
    reports it (a warp intrinsic's hang is a warp error instead)."""
    from ..sim import BarrierDivergence, WarpError

    return isinstance(error, BarrierDivergence) and not isinstance(error, WarpError)


def _not_handled(error: NotImplementedError) -> bool:
    """True for the course simulator's NotHandledYet (a NotImplementedError too): something
    the kernel uses that the engine does not run, not a stub the learner has yet to fill in."""
    from ..sim import NotHandledYet

    return isinstance(error, NotHandledYet)


GUARD_HINT_1D = "guard the work with `if i < out.size:` so threads past the end do nothing."
GUARD_HINT_2D = (
    "guard the work with `if row < out.shape[0] and col < out.shape[1]:` so threads outside "
    "the matrix do nothing."
)


def out_of_bounds(error: KernelError) -> tuple[int, int, int] | None:
    """(index, axis, size) of an out-of-bounds index, from the explained error's attributes."""
    facts = tuple(getattr(error, name, None) for name in ("index", "axis", "size"))
    return facts if all(isinstance(v, int) for v in facts) else None


def failing_thread(error: KernelError, blockdim) -> tuple[int, ...] | None:
    """The global index, per axis (x, y, z), of the thread an explained error names; None when
    it names none. ``blockdim`` is the launch's block shape."""
    thread, block = getattr(error, "thread", None), getattr(error, "block", None)
    if thread is None or block is None:
        return None
    dims = (tuple(blockdim) if isinstance(blockdim, (tuple, list)) else (blockdim,)) + (1, 1)
    return tuple(block[axis] * int(dims[axis]) + thread[axis] for axis in range(3))


def index_error_target(case: Case, error: str) -> str:
    """For any chapter's kernel hints: what an out-of-bounds index hit, from the checker's account of the error (its ``array``,
    ``is_global``, ``axis``, ``size`` and the line's ``source`` where known): "shared" (an array
    of the kernel's own, such as a shared tile), "write" (a store into a kernel argument), "read"
    (a load from one), or "" when it cannot be told."""
    array = getattr(error, "array", "")
    axis, size = getattr(error, "axis", None), getattr(error, "size", None)
    if axis is None or size is None:
        return ""
    if array and not getattr(error, "is_global", True):
        return "shared"
    if array:
        source = getattr(error, "source", "")
        store = re.match(rf"\s*{re.escape(array)}\s*\[[^\]]*\]\s*[-+*/]?=(?!=)", source)
        return "write" if store else "read"
    arrays = [*case.inputs, *case.outputs]
    if not any(np.ndim(a) > axis and np.shape(a)[axis] == size for a in arrays):
        return "shared"
    return ""


def compare(case: Case, outputs: Sequence[np.ndarray], names: Sequence[str]) -> Mismatch | None:
    """The first output that differs from the expected one, or None when all match."""
    for name, got, expected in zip(names, outputs, case.expected, strict=True):
        got = np.asarray(got)
        found = mismatch_of(name, got, expected, np.isnan(got), case.rtol, case.atol)
        if found is not None:
            return found
    return None


def threads_of(case: Case) -> int:
    """How many CUDA threads a case launches."""
    return int(np.prod(case.griddim)) * int(np.prod(case.blockdim))


def default_trace_case(cases: Sequence[Case]) -> Case:
    """The largest case of at most TRACE_THREAD_LIMIT threads (the smallest if none is)."""
    small = [c for c in cases if threads_of(c) <= TRACE_THREAD_LIMIT]
    if small:
        return max(small, key=threads_of)
    return min(cases, key=threads_of)


def _fresh_args(case: Case) -> tuple[tuple, tuple]:
    outputs = tuple(buffer.copy() for buffer in case.outputs)
    return tuple(a.copy() for a in case.inputs) + outputs, outputs


def _trace_of(kernel, case: Case):
    """The trace report of ``case``, or None (too many threads, or it cannot be traced)."""
    if threads_of(case) > TRACE_THREAD_LIMIT:
        return None
    for _ in range(2):  # a second try, should the first trace fail for a reason of its own
        args, _ = _fresh_args(case)
        try:
            return trace_kernel(kernel, case, args)
        except Exception:
            continue
    return None


def _race_in(kernel, case: Case):
    """The first race the trace of ``case`` shows, or None (also when it cannot be traced)."""
    report = _trace_of(kernel, case)
    return report.races[0] if report is not None and report.races else None


DIVERGENT_BARRIER_HINT = (
    "Move cuda.syncthreads() out of the `if` (or the loop condition) that not all threads take: "
    "every thread of the block must execute the same barriers, the same number of times."
)


def _divergent_text(lines) -> str:
    where = ", ".join(str(line) for line in lines)
    return (
        "every thread of the block must reach each cuda.syncthreads(): yours are reached by only "
        f"some threads (line {where}). On a GPU that can hang or give wrong results."
    )


def kernel_exercise(
    *,
    id: str,  # noqa: A002 - the registry's field name
    chapter: str,
    title: str,
    signature: str,
    launch_text: str,
    output_names: Sequence[str],
    cases: Callable[[np.random.Generator], list[Case]],
    hint: Callable[[Case, Mismatch], str],
    guard_hint: str = GUARD_HINT_1D,
    error_hint: Callable[[Case, str], str] | None = None,
    seed: int | None = None,
    check_races: bool = True,
    requirements: Sequence[TraceRequirement] = (),
    trace_case: Callable[[np.random.Generator], Case] | None = None,
    race_hint: Callable[[Race], str] = race_hint,
    compiles: bool = True,
    reference: Callable | None = None,
    time_limit: float | None = None,
) -> Exercise:
    """Build an Exercise that launches the learner's kernel on each case and explains failures.

    ``hint(case, mismatch)`` names the likely mistake from the wrong output; ``error_hint(case,
    error)`` from an exception (by default ``guard_hint``, as most errors are a missing guard).
    ``seed`` fixes the inputs (for tests); by default every check draws fresh random data.

    Once every case is correct, one launch is traced on the simulator: a race fails the check
    (unless ``check_races=False``), and so does an unmet ``requirement``. ``trace_case(rng)``
    gives that launch (it must be correct too); by default the largest case of at most
    ``TRACE_THREAD_LIMIT`` threads. A wrong result also names a race if the trace shows one.
    ``race_hint(race)`` says what to do about a race (default: by the race's kind).

    Before the results are compared, a kernel that changed an input (other than
    ``Case.writable_inputs``) fails, and one that wrote nothing at all is told so. ``error_hint``
    receives a :class:`KernelError` (a ``str`` with ``kind``, ``array``, ``index``, ``size``...)
    for out-of-bounds indexing and WarpErrors only (``error.kind`` says which); other exceptions get hints keyed to their own cause, and
    ``error_hint`` may return "" to keep the generic one. Once correct on the simulator, the
    kernel must also compile for a GPU (``compiles=False`` opts out).

    The time limit of a check is scaled from this machine's time for the cases launched with
    ``reference`` (a correct kernel's Python function, optional) or else a kernel that does
    nothing; ``time_limit`` (seconds) overrides it for a slow exercise.
    """

    def error_result(case: Case, error: KernelError) -> CheckResult:
        why = error.hint
        if error.kind == "extra_threads":
            why = (error_hint(case, error) if error_hint else "") or guard_hint
        elif error.kind in ("out_of_bounds", "warp") and error_hint:
            why = error_hint(case, error) or why
        return failed(id, f"With {case.label}: {error}", why)

    def run_case(kernel, case: Case) -> CheckResult | None:
        args, outputs = _fresh_args(case)
        function = python_function(kernel)
        wrong_call = signature_problem(function, len(args), documented_arguments(signature))
        if wrong_call:
            return failed(id, wrong_call, f"the expected signature is {signature}.")
        error = launch(kernel, case, args)
        if error:
            return error_result(case, error)
        changed = _changed_input(case, args, documented_arguments(signature) or None)
        if changed:
            return changed_input_failure(
                id, case.label, changed, output_names, "write results only into the output"
            )
        nothing = _wrote_nothing(case, outputs, function, output_names)
        if nothing and nothing[1]:  # no assignment to the output, or a return: that is the cause
            return failed(id, f"With {case.label}: {nothing[0]}", nothing[1])
        mismatch = compare(case, outputs, output_names)
        if mismatch:
            what = f"With {case.label}: {nothing[0] if nothing else mismatch.describe()}"
            advice = hint(case, mismatch)
            # a race can write NaN too (a read of shared memory nothing had written yet)
            report = _trace_of(kernel, case) if check_races and tracing() else None
            if report is not None and report.divergent_barriers:  # the likelier cause: first
                what += "\nAlso, " + _divergent_text(report.divergent_barriers)
                advice = DIVERGENT_BARRIER_HINT
            elif report is not None and report.races:
                race = report.races[0]
                what += f"\nYour kernel has a race: {race.describe()}"
                advice += f"\nTo fix the race: {race_hint(race)}"
            return failed(id, what, advice)
        return None

    def run_trace(kernel, case: Case, ran_before: bool) -> CheckResult | None:
        args, outputs = _fresh_args(case)
        divergence = any(r.needs_divergence for r in requirements)
        try:
            report = trace_kernel(kernel, case, args, divergence=divergence)
        except NotImplementedError as error:
            raise NotAttempted from error
        except Exception:
            if not ran_before:  # explain the learner's error as a plain launch would
                plain = run_case(kernel, case)
                if plain is not None:
                    return plain
            raise  # it runs without error outside the trace: the trace is at fault
        mismatch = compare(case, outputs, output_names)
        if mismatch:
            return failed(id, f"With {case.label}: {mismatch.describe()}", hint(case, mismatch))
        report = keyed_by_documented_names(report, kernel, signature)
        if check_races and report.races:
            race = report.races[0]
            return failed(
                id,
                f"With {case.label} your results came out right, but your kernel has a race: "
                f"{race.describe()} On a GPU the result can change from run to run.",
                race_hint(race),
            )
        if check_races and report.divergent_barriers:
            return failed(
                id,
                f"With {case.label} your results came out right, but "
                + _divergent_text(report.divergent_barriers),
                DIVERGENT_BARRIER_HINT,
            )
        for requirement in requirements:
            problem = requirement.check(report)
            if problem is not None:
                what, why = problem
                return failed(id, f"Correct results, but traced with {case.label}, {what}", why)
        return None

    def run(kernel) -> CheckResult:
        problem = not_launchable(kernel, signature)
        if problem is not None:
            return failed(id, *problem)
        rng = np.random.default_rng(seed)
        all_cases = cases(rng)
        result = run_cases(id, all_cases, lambda case: run_case(kernel, case))
        if result is not None:
            return result
        traced = None
        if tracing() and (check_races or requirements):
            traced = trace_case(rng) if trace_case else default_trace_case(all_cases)
            result = run_cases(
                id, [traced], lambda case: run_trace(kernel, case, trace_case is None)
            )
            if result is not None:
                return result
        if compiles and runtime.mode == "simulator":
            args, _ = _fresh_args(all_cases[0])
            problem = compile_problem(python_function(kernel), args)
            if problem is not None:
                return failed(id, *problem)
        detail = correct_on(all_cases)
        if traced is not None:
            checks = (["no races"] if check_races else []) + [r.label for r in requirements]
            detail += f" The trace of {traced.label} shows {', '.join(checks)}."
        return passed(id, detail)

    def calibrate() -> float:
        from numba import cuda

        kernel = cuda.jit(reference if reference is not None else _do_nothing)
        start = time.perf_counter()
        for case in cases(np.random.default_rng(seed)):
            args, _ = _fresh_args(case)
            try:
                kernel[case.griddim, case.blockdim](*args)
            except Exception:  # the do-nothing kernel on a GPU (no *args there): no figure
                return 0.0
        return time.perf_counter() - start

    return Exercise(
        id=id,
        chapter=chapter,
        title=title,
        signature=signature,
        launch=launch_text,
        run=run,
        time_limit=time_limit,
        calibrate=calibrate,
    )


def _do_nothing(*args) -> None:
    """A kernel whose launches cost only the simulator's own work per thread."""


def not_launchable(kernel, signature: str = "") -> tuple[str, str] | None:
    """(what, hint) when ``kernel`` is not something a GPU can launch as a kernel."""
    options = getattr(kernel, "targetoptions", None) or {}
    if getattr(kernel, "_device", False) or options.get("device"):
        return (
            "This is a device function (`@cuda.jit(device=True)`): it can be called from a "
            "kernel, but a GPU cannot launch it on a grid.",
            "use plain `@cuda.jit` on the line above `def` for a kernel.",
        )
    module = type(kernel).__module__ or ""
    if python_function(kernel) is not None and not module.startswith("numba.cuda"):
        return (
            f"This is a {type(kernel).__name__} (compiled for the CPU), not a CUDA kernel.",
            "use `@cuda.jit` (from `from numba import cuda`) on the line above `def`.",
        )
    return None


def _changed_input(case: Case, args: Sequence, names: Sequence[str] | None) -> str | None:
    """'`a` (a[3] was 0.5, now 1.5)' for the first input the launch changed, or None."""
    for position, (before, after) in enumerate(zip(case.inputs, args, strict=False)):
        if position in case.writable_inputs:
            continue
        name = names[position] if names and position < len(names) else f"number {position + 1}"
        changed = changed_element(name, before, after)
        if changed:
            return changed
    return None


def _returns_value(function) -> bool:
    """True when the function's source has a ``return <value>``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(tree))


def _assigns_to(function, names: Sequence[str]) -> bool:
    """True when the source assigns to an element of one of ``names`` (``out[i] = ...``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return True  # cannot tell: say nothing about it
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AugAssign):
            targets = [node.target]
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
                if isinstance(target, ast.Name) and target.id in names:
                    return True
    return False


def _wrote_nothing(case: Case, outputs, function, output_names) -> tuple[str, str] | None:
    """(what, hint) when every output element is still NaN. The hint names the cause when the
    source shows it (a return, no assignment to the output); otherwise it is "" and the
    exercise's hint stands, as NaN may also have been written (a race on shared memory)."""
    expected_somewhere = [~np.isnan(e) for e in case.expected]
    if not any(m.any() for m in expected_somewhere):
        return None
    for got, mask in zip(outputs, expected_somewhere, strict=False):
        if (~np.isnan(np.asarray(got, dtype=np.float64)[mask])).any():
            return None
    what = wrote_nothing_text(output_names)
    if function is not None and _returns_value(function):
        return what, (
            "a kernel cannot return a value (the GPU throws it away): write each result into "
            "the output array, e.g. `out[i] = a[i] + b[i]`, instead of `return ...`."
        )
    parameters = list(inspect.signature(function).parameters) if function is not None else []
    mine = parameters[len(case.inputs) :] or list(output_names)
    if function is not None and not _assigns_to(function, mine):
        return what, (
            f"assign each result to an element of the output, `{mine[0]}[i] = ...`: assigning "
            "to a plain name, or returning, does not change the array the checker passed."
        )
    names = ", ".join(f"`{n}`" for n in output_names) or "the output"
    return (
        f"every element of {names} is NaN after the launch (the checker fills outputs with NaN "
        "before it): no thread wrote, or every thread wrote a NaN."
    ), ""


def keyed_by_documented_names(report, kernel, signature: str):
    """The report with kernel arguments keyed by the exercise's documented names, so that a
    requirement on ``"src"`` also finds a learner's argument called ``source``."""
    documented = documented_arguments(signature)
    function = python_function(kernel)
    if not documented or function is None:
        return report
    learner = list(inspect.signature(function).parameters)
    pairs = zip(learner, documented, strict=False)  # a learner may add or drop arguments
    alias = {mine: theirs for mine, theirs in pairs if mine != theirs}
    if not alias:
        return report
    arrays = {alias.get(name, name): stats for name, stats in report.arrays.items()}
    return dataclasses.replace(report, arrays=arrays)


def tracing() -> bool:
    """Traces run in the simulator pass only (a GPU pass re-checks results, not the trace)."""
    return runtime.mode == "simulator"
