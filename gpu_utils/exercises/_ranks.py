"""One harness for the checkers whose answers run on several ranks (chapters 08-10).

:func:`run_world_sizes` starts ``gu.dist``'s launcher once (the start-up probe), runs the
checker's rank function for each world size and turns what happened into a verdict: a rank's
exception goes to the chapter's own explanation, a stopped run to :func:`timeout_result`, the
results to the chapter's judge. What stops a run is evidence, not the clock alone:

- a loop: one rank has used more than :data:`CPU_LIMIT` seconds of processor time (a correct
  answer's rank uses well under a tenth of that), whatever it is looping around;
- a deadlock: every rank still running has slept :data:`IDLE_LIMIT` seconds without using the
  processor (nothing can wake ranks that all wait, and a busy machine makes ranks runnable,
  not asleep);
- the clock, :data:`RUN_TIMEOUT`, for what neither catches. Only when the ranks were then
  still starting, or had used little processor time while waiting for one (a busy machine), is
  the run made once more, with :data:`SLOW_TIMEOUT`: the two together stay within 20 s.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from collections.abc import Callable

from ..many_gpus._dist_launcher import QUIET_CPU

#: Seconds within which a looping or deadlocked answer gets its verdict (COURSE_DESIGN: "a
#: looping answer (any kind, any rank) is stopped within 20 s").
VERDICT_WITHIN = 20.0
#: Seconds of processor time one rank of a check may use. A correct answer's rank needs
#: 0.04-0.1 s on a 2-core laptop for a whole chapter 09 or 10 run (the checker's own training
#: included; measured with resource.getrusage in each rank), so 1.5 s is more than ten times
#: that; a rank that waits (a deadlock) or that a busy machine slows down uses little of it, so
#: only a rank that computes without end reaches it (in about 2 s on an idle machine; a loop
#: around a collective uses about half a core: 3 s, measured with gloo on this 2-core machine).
CPU_LIMIT = 1.5
#: Seconds every running rank may sleep without using the processor before the run is stopped
#: as a deadlock (ranks blocked in gloo's recv used 0.01-0.02 s of processor time in 6 s).
IDLE_LIMIT = 2.0
#: Seconds on the clock for one run (one world size), when neither detector above has fired: a
#: correct answer's run takes 0.1-0.5 s here (a whole warm check of chapter 08: 0.4 s).
RUN_TIMEOUT = 5.0
#: Seconds for the one retry, made only when the machine was at fault (see machine_was_slow).
#: With a stack dump's wait after each (DUMP_WAIT), the two stay under 20 s.
SLOW_TIMEOUT = 10.0
#: Seconds for gu.dist's launcher to start (it imports PyTorch), once per checker process.
START_TIMEOUT = 30.0
#: A run stopped by the clock was slowed by the machine when one of its ranks spent at least
#: this share of the run waiting for a processor (Linux's schedstat) ...
BUSY_SHARE = 0.25
#: ... while no rank had used more than this many seconds of processor time (a correct
#: answer's rank needs under 0.1 s: more is work without end, however slow the machine).
CORRECT_CPU = 0.5


def check_time_limit(world_sizes) -> float:
    """Seconds a whole check may take in the checker's process (its backstop): the launcher's
    start, each world size's run and retry, and judging."""
    return START_TIMEOUT + len(world_sizes) * (RUN_TIMEOUT + SLOW_TIMEOUT) + 30.0


def not_started(error) -> bool:
    """True for a RankTimeout in which no rank had reached the learner's function yet."""
    texts = [w for w in getattr(error, "where", {}).values() if w]
    return bool(texts) and all("had not reached" in w for w in texts)


def _busy(error) -> list[int]:
    """Ranks that were using the processor when the run was stopped, those over the limit
    first, then those that used some in their last seconds: looping, not waiting."""
    recent = getattr(error, "recent_cpu", {}) or {}
    over = list(getattr(error, "looping", []) or [])
    return over + [r for r in error.stuck if (recent.get(r) or 0.0) > QUIET_CPU and r not in over]


def machine_was_slow(error) -> bool:
    """True for a RankTimeout that the machine explains: ranks still starting, or stopped by
    the clock having used little processor time while waiting long for one."""
    if getattr(error, "looping", None):
        return False
    where = getattr(error, "where", {}).values()
    if any("had not reached" in w for w in where):
        return True  # a rank still starting: the others may be waiting for it
    if getattr(error, "reason", "clock") == "idle":
        return False  # every rank asleep in the learner's code: a deadlock
    cpu = [c for c in (getattr(error, "cpu", {}) or {}).values() if c is not None]
    if cpu and max(cpu) > CORRECT_CPU:
        return False
    queued = [q for q in (getattr(error, "queued", {}) or {}).values() if q is not None]
    elapsed = getattr(error, "elapsed", None) or error.timeout
    return bool(queued) and max(queued) >= BUSY_SHARE * elapsed


def run_ranks(fn: Callable, n: int, *args, timeout: float | None = None):
    """``gu.dist.run(fn, n, *args)`` on gloo with the loop and deadlock detectors; once more
    with SLOW_TIMEOUT when a run stopped by the clock was the machine's fault."""
    from ..many_gpus import dist

    limits = {"backend": "gloo", "cpu_limit": CPU_LIMIT, "idle_limit": IDLE_LIMIT}
    try:
        return dist.run(fn, n, *args, timeout=timeout or RUN_TIMEOUT, **limits)
    except dist.RankTimeout as error:
        if not machine_was_slow(error):
            raise
    return dist.run(fn, n, *args, timeout=SLOW_TIMEOUT, **limits)


def _nothing(rank, world_size):
    return None


def start_launcher() -> str | None:
    """Start gu.dist's launcher if it is not running (the start-up probe: PyTorch's imports
    are then not on a run's clock); a sentence saying why it could not start, or None."""
    from ..many_gpus import dist

    launcher = dist._launcher
    if launcher is not None and launcher.process.poll() is None:
        return None
    try:
        dist.run(_nothing, 1, backend="gloo", timeout=START_TIMEOUT)
    except dist.DistError as error:
        return str(error)
    return None


def run_world_sizes(
    exercise_id: str,
    answer,
    rank_fn: Callable,
    args: Callable[[int], tuple] | tuple,
    judge: Callable,
    *,
    world_sizes,
    error_result: Callable,
    deadlock_hint: str | Callable,
    timeout: float | None = None,
):
    """Run ``rank_fn(rank, n, *args)`` for each ``n`` of ``world_sizes`` (``args`` may be a
    function of ``n``) and judge each outcome as it comes (``judge(n, outcome)``); the first
    problem as a CheckResult, or None. A rank's exception is explained by
    ``error_result(exercise_id, n, error, answer)`` (a NotImplementedError is "not attempted"),
    a stopped run by :func:`timeout_result` with ``deadlock_hint``."""
    from ..many_gpus import dist
    from ._registry import failed, not_attempted

    problem = start_launcher()
    if problem is not None:
        return failed(
            exercise_id,
            f"The checker could not start processes: {problem}",
            "run the check again; if it fails the same way, restart the kernel.",
        )
    for n in world_sizes:
        try:
            outcome = run_ranks(rank_fn, n, *(args(n) if callable(args) else args), timeout=timeout)
        except dist.RankTimeout as error:
            return timeout_result(exercise_id, n, error, answer, deadlock_hint)
        except dist.RankError as error:
            if error.exc_type == "NotImplementedError":
                return not_attempted(exercise_id)
            return error_result(exercise_id, n, error, answer)
        except dist.DistError as error:
            return failed(
                exercise_id,
                f"The checker could not run your code in {n} processes: {error}",
                "run the check again; if it fails the same way, restart the kernel.",
            )
        problem = judge(n, outcome)
        if problem is not None:
            return problem
    return None


# --- what an exception in a rank says ------------------------------------------------------------

#: The hint for an exception no chapter explains: the rank's own traceback tells more.
RUN_IT_YOURSELF = (
    "run your code yourself in a cell with gu.dist.run(...) to see the rank's full traceback."
)


def answer_line(error, answer) -> str:
    """' (line N of f)': the last line of the learner's code in a RankError's traceback, or ''."""
    names = {function.__name__ for function in _functions(answer)}
    lines = [frame for frame in error.frames if frame[2] in names]
    return f" (line {lines[-1][1]} of {lines[-1][2]})" if lines else ""


def crash_text(n: int, error, answer) -> str:
    """'With n ranks, rank r raised T: message (line N of f).'"""
    return f"With {n} ranks, {str(error).rstrip('.')}{answer_line(error, answer)}."


# --- what a timeout says ---------------------------------------------------------------------------

_AT_LINE = re.compile(r"(?:at|called from) (?P<name>[\w<>]+) \(line (?P<line>\d+)\)")


def _functions(answer) -> list:
    """The learner's functions: the answer itself, or a class's methods."""
    if inspect.isclass(answer):
        return [v for v in vars(answer).values() if inspect.isfunction(v)]
    return [answer] if hasattr(answer, "__code__") else []


def source_line(answer, line: int) -> str:
    """The learner's source line ``line`` (a file line), from the cell's text, or ''."""
    for function in _functions(answer):
        text = linecache.getline(function.__code__.co_filename, line).strip()
        if text:
            return text
    return ""


def _while_around(answer, line: int) -> tuple[int, str, list[str]] | None:
    """(line, text, names in its condition) of the innermost ``while`` around ``line``."""
    for function in _functions(answer):
        try:
            lines, first = inspect.getsourcelines(function)
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (OSError, TypeError, SyntaxError, ValueError):
            continue
        around = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.While)
            and node.lineno + first - 1 <= line <= (node.end_lineno or 0) + first - 1
        ]
        if around:
            loop = max(around, key=lambda node: node.lineno)
            names = [n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)]
            names += [n.attr for n in ast.walk(loop.test) if isinstance(n, ast.Attribute)]
            return (
                loop.lineno + first - 1,
                lines[loop.lineno - 1].strip(),
                list(dict.fromkeys(names)),
            )
    return None


_WAITING_IN = re.compile(r"waiting in dist\.(?P<call>\w+)")


def timeout_result(exercise_id: str, n: int, error, answer, deadlock_hint):
    """The verdict on a RankTimeout, from where each rank was and what it was doing: ranks
    still starting (a busy machine), a rank busy in a loop, around a collective or not (its
    rank, line and loop), or ranks waiting in collectives that others never reached (a
    deadlock, with who waited where; ``deadlock_hint`` is a sentence or a function of
    ``(error, answer)`` that returns one)."""
    from ._registry import failed

    where = {r: w for r, w in sorted(error.where.items()) if w}
    if not_started(error) or (machine_was_slow(error) and not _busy(error)):
        return failed(
            exercise_id,
            f"With {n} ranks, the ranks had not "
            + ("even started your code" if not_started(error) else "finished")
            + f" after {error.timeout:g} s: the machine is busy, or slow to start processes.",
            "run the check again in a moment.",
        )
    looping = _busy(error)
    waiting = [r for r, w in where.items() if "waiting in dist." in w and r not in looping]
    found = {r: m for r, w in where.items() if (m := _AT_LINE.search(w))}
    running = [r for r in found if where[r].startswith("at ") and r not in waiting]
    if error.reason == "clock" and not waiting and not looping:
        looping = running  # stopped by the clock, running the learner's own lines
    looping = [r for r in looping if r in found]
    if looping:
        return _loop_result(exercise_id, n, error, answer, looping, waiting, found)
    text = "; ".join(f"rank {r}: {w}" for r, w in where.items())
    if error.reason == "idle":
        what = (
            f"With {n} ranks your code had not finished after {error.elapsed:.1f} s, and no "
            "rank was using the processor any more, so the checker stopped it: "
        )
    else:
        what = (
            f"With {n} ranks your code had not finished after {error.timeout:g} s, so the "
            "checker stopped it: "
        )
    outside = [r for r, w in where.items() if "outside your function" in w]
    waiting = [r for r in waiting if r not in outside]
    if waiting and outside:
        what += (
            f"{_ranks_phrase(waiting)} waited in a collective that "
            f"{_ranks_phrase(outside).lower()} never called: "
            f"{_ranks_phrase(outside).lower()} had already returned from your function "
            "(a deadlock)."
        )
    elif waiting or error.reason == "idle":
        what += "ranks were waiting for each other (a deadlock)."
    else:
        what += "no rank was waiting for another, yet the code did not finish."
    hint = deadlock_hint(error, answer) if callable(deadlock_hint) else deadlock_hint
    return failed(exercise_id, what + (f" Where: {text}." if text else ""), hint)


def _loop_result(exercise_id, n, error, answer, looping, waiting, found):
    """The verdict on ranks busy without end: where, for how long, and the loop to fix."""
    from ._registry import failed

    rank = looping[0]
    line = int(found[rank].group("line"))
    name = found[rank].group("name")
    source = source_line(answer, line)
    cpu = (getattr(error, "cpu", None) or {}).get(rank)
    # Processor time only for a rank stopped for using too much of it: a rank stopped at the
    # timeout may have used almost none (it slept, or waited for input).
    if cpu and rank in (getattr(error, "looping", None) or []):
        spent = f"{cpu:.1f} s of processor time"
    elif error.reason == "clock":
        spent = f"{error.timeout:g} s"
    else:
        spent = f"{error.elapsed:.1f} s"
    call = _WAITING_IN.search(error.where[rank])
    loop = _while_around(answer, line)
    stopped = "them" if len(looping) > 1 else "it"
    if call:  # busy around a collective: it returns, and is called again
        what = (
            f"With {n} ranks, {_ranks_phrase(looping).lower()} kept calling "
            f"dist.{call.group('call')} at line {line} of `{name}`"
            + (f": `{source}`" if source else "")
            + (f", inside the loop on line {loop[0]}" if loop else "")
            + f", busy for {spent}, so the checker stopped {stopped}: not a deadlock (a "
            "rank waiting for a partner that never comes uses no processor time), a loop."
        )
    else:
        what = (
            f"With {n} ranks, rank {rank} was still running your code after {spent}, at line "
            f"{line} of `{name}`"
            + (f": `{source}`" if source else "")
            + ", so the checker stopped it."
        )
    others = [r for r in waiting if r not in looping]
    if others:
        what += (
            f" {_ranks_phrase(others)} waited in a collective meanwhile: no deadlock, they "
            f"were waiting for rank {rank}."
        )
    if loop is not None:
        start, text, names = loop
        changes = " or ".join(f"`{v}`" for v in names) or "its condition"
        hint = (
            f"the `while` loop on line {start} (`{text}`) never ends on rank {rank}: make "
            f"sure {changes} changes on every pass, so that the condition becomes false."
        )
    else:
        hint = (
            f"line {line} runs for ever on rank {rank}: look for a loop that never ends "
            "there (a correct answer takes well under a second)."
        )
    return failed(exercise_id, what, hint)


def _ranks_phrase(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"Rank {ranks[0]}"
    return "Ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"
