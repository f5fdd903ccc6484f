"""Running a learner's function on several ranks for a checker (chapters 08-10).

A timeout is the learner's deadlock only when the ranks were stuck in a collective (or, for the
ring exercises, had at least started the function). When the machine was at fault, ranks too
slow to start or to finish on a busy machine, :func:`run_ranks` runs once more with more time,
so a correct answer is not failed for the load.
"""

from __future__ import annotations

from collections.abc import Callable


def not_started(error) -> bool:
    """True for a RankTimeout in which no rank had reached the learner's function yet."""
    texts = [w for w in getattr(error, "where", {}).values() if w]
    return bool(texts) and all("had not reached" in w for w in texts)


def not_in_a_collective(error) -> bool:
    """True for a RankTimeout in which no rank was waiting in a collective (no deadlock)."""
    return not any("waiting in dist." in w for w in getattr(error, "where", {}).values())


def run_ranks(
    fn: Callable,
    n: int,
    *args,
    timeout: float,
    slow_timeout: float,
    machine_was_slow: Callable[[object], bool] = not_in_a_collective,
):
    """``gu.dist.run(fn, n, *args)`` on gloo; once more with ``slow_timeout`` when a timeout
    was the machine's fault, as ``machine_was_slow`` judges from where the ranks were."""
    from .. import dist

    try:
        return dist.run(fn, n, *args, backend="gloo", timeout=timeout)
    except dist.RankTimeout as error:
        if not machine_was_slow(error):
            raise
    return dist.run(fn, n, *args, backend="gloo", timeout=slow_timeout)
