"""Running a learner's function on several ranks for a checker (chapters 08-10).

A timeout is the learner's deadlock only when the ranks were stuck in a collective (or, for the
ring exercises, had at least started the function). When the machine was at fault, ranks too
slow to start or to finish on a busy machine, :func:`run_ranks` runs once more with more time,
so a correct answer is not failed for the load.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from collections.abc import Callable

#: Seconds of processor time one rank of a check may use. A correct answer's rank needs
#: 0.04-0.1 s on a 2-core laptop for a whole chapter 09 or 10 run (the checker's own training
#: included; measured with resource.getrusage in each rank), so 1.5 s is more than ten times
#: that; a rank that waits (a deadlock) or that a busy machine slows down uses little of it, so
#: only a rank that computes without end reaches it (in about 2 s on an idle machine).
CPU_LIMIT = 1.5


def not_started(error) -> bool:
    """True for a RankTimeout in which no rank had reached the learner's function yet."""
    texts = [w for w in getattr(error, "where", {}).values() if w]
    return bool(texts) and all("had not reached" in w for w in texts)


def not_in_a_collective(error) -> bool:
    """True for a RankTimeout in which no rank was waiting in a collective (no deadlock) and
    none was stopped for looping (busy past its processor-time limit): a slow machine."""
    if getattr(error, "looping", None):
        return False
    where = getattr(error, "where", {}).values()
    if any("had not reached" in w for w in where):
        return True  # a rank still starting: the others may be waiting for it
    return not any("waiting in dist." in w for w in where)


def run_ranks(
    fn: Callable,
    n: int,
    *args,
    timeout: float,
    slow_timeout: float,
    machine_was_slow: Callable[[object], bool] = not_in_a_collective,
    cpu_limit: float | None = CPU_LIMIT,
):
    """``gu.dist.run(fn, n, *args)`` on gloo; once more with ``slow_timeout`` when a timeout
    was the machine's fault, as ``machine_was_slow`` judges from where the ranks were. A rank
    that uses more than ``cpu_limit`` seconds of processor time is stopped at once (a loop)."""
    from .. import dist

    try:
        return dist.run(fn, n, *args, backend="gloo", timeout=timeout, cpu_limit=cpu_limit)
    except dist.RankTimeout as error:
        if not machine_was_slow(error):
            raise
    return dist.run(fn, n, *args, backend="gloo", timeout=slow_timeout, cpu_limit=cpu_limit)


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


def timeout_result(exercise_id: str, n: int, error, answer, deadlock_hint: str):
    """The verdict on a RankTimeout, from where each rank was: ranks still starting (a busy
    machine), a rank busy in a loop (its rank, line and the loop), or ranks waiting in a
    collective that others never reached (a deadlock, with who waited where)."""
    from ._registry import failed

    where = {r: w for r, w in sorted(error.where.items()) if w}
    if not_started(error):
        return failed(
            exercise_id,
            f"With {n} ranks, the ranks had not even started your code after {error.timeout:g} "
            "s: the machine is busy, or slow to start processes.",
            "run the check again in a moment.",
        )
    waiting = [r for r, w in where.items() if "waiting in dist." in w]
    found = {
        r: m
        for r, w in where.items()
        if r not in waiting and (m := _AT_LINE.search(w)) and w.startswith("at ")
    }
    running = {r: int(m.group("line")) for r, m in found.items()}
    looping = [r for r in getattr(error, "looping", []) if r in running] or (
        list(running) if not waiting else []
    )
    if looping:
        rank = looping[0]
        line = running[rank]
        source = source_line(answer, line)
        busy = error.cpu.get(rank) if getattr(error, "cpu", None) else None
        # Processor time only for a rank stopped for using too much of it: a rank stopped at the
        # timeout may have used almost none (it slept, or waited for input).
        stopped_busy = busy and rank in (getattr(error, "looping", None) or [])
        spent = f"{busy:.1f} s of processor time" if stopped_busy else f"{error.timeout:g} s"
        what = (
            f"With {n} ranks, rank {rank} was still running your code after {spent}, at line "
            f"{line} of `{found[rank].group('name')}`"
            + (f": `{source}`" if source else "")
            + ", so the checker stopped it."
        )
        if waiting:
            what += (
                f" {_ranks_phrase(waiting)} waited in a collective meanwhile: no deadlock, they "
                f"were waiting for rank {rank}."
            )
        loop = _while_around(answer, line)
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
    text = "; ".join(f"rank {r}: {w}" for r, w in where.items())
    what = (
        f"With {n} ranks your code had not finished after {error.timeout:g} s, so the checker "
        "stopped it: "
    )
    outside = [r for r, w in where.items() if "outside your function" in w and r not in waiting]
    if waiting and outside:
        what += (
            f"{_ranks_phrase(waiting)} waited in a collective that "
            f"{_ranks_phrase(outside).lower()} never called (a deadlock)."
        )
    elif waiting:
        what += "ranks were waiting for each other in collectives (a deadlock)."
    else:
        what += "no rank was waiting for another, yet the code did not finish."
    return failed(exercise_id, what + (f" Where: {text}." if text else ""), deadlock_hint)


def _ranks_phrase(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"Rank {ranks[0]}"
    return "Ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"
