"""Warp intrinsics on the course's engine (:mod:`gpu_utils.sim`), with the semantics
:mod:`gpu_utils.sim.warp` gives them on numba-cuda's simulator.

A shuffle, vote, match, ``activemask`` or ``syncwarp`` is a rendezvous of the lanes of one warp
(32 consecutive linear thread ids of the block) named in its mask. The rewrite turns each call
into a ``yield``; once every thread of the block waits somewhere or has left, the engine hands
the waiting calls to :func:`release`, which meets the lanes by (warp, intrinsic, mask), as
``gu.warp`` does:

* lanes that do not exist (a partial last warp) take no part; lanes that left the kernel take no
  part in shuffles, votes and matches, but a ``syncwarp`` waits for every lane of its mask
  (PTX ISA, ``shfl.sync``/``vote.sync``/``match.sync`` against ``bar.warp.sync``);
* ``activemask`` answers the lanes of its warp at the same call (the same site, the same visit);
* what ``gu.warp`` reports as a :class:`gpu_utils.sim.warp.WarpError` raises the same text here, with
  the thread and the line: a mask without the calling lane, lanes meeting in different calls, a
  shuffle reading a lane that does not exist or did not take part, and, when no rendezvous can
  complete, the lane that keeps the others waiting forever (:class:`WarpDivergence`).

Because the engine decides only when every thread has stopped, there is no polling: the same
kernel gives the same answer every time.
"""

from __future__ import annotations

import numpy as np

from . import warp as gwarp
from .device import WARP_SIZE
from .errors import BarrierDivergence, SimulatorError
from .rewrite import SITES, SYNCWARP

SHUFFLE_MODES = {
    "shfl_sync": "idx",
    "shfl_up_sync": "up",
    "shfl_down_sync": "down",
    "shfl_xor_sync": "bfly",
}


class WarpError(SimulatorError, gwarp.WarpError):
    """A warp intrinsic used in a way that is undefined on a GPU (``gu.warp.WarpError`` too)."""


class WarpDivergence(BarrierDivergence, WarpError):
    """Lanes that wait at a warp intrinsic for a lane that never comes: a hang on a GPU."""


class _Meeting(gwarp._Round):
    """One rendezvous: ``gu.warp``'s round, with each lane's thread, arguments and site."""

    def __init__(self, op: str, part: int, given: int) -> None:
        super().__init__(op, part, given)
        self.calls: dict[int, tuple[int, tuple, int]] = {}  # lane -> (thread, args, site)


class _WarpView:
    """What ``gu.warp``'s messages ask of a warp, read from the engine's state."""

    def __init__(self, index: int, gens, waiting, meetings) -> None:
        self.index = index
        self.gens = gens
        self.engine_waiting = waiting
        self.waiting = {
            lane: meeting
            for (w, *_), meeting in meetings.items()
            if w == index
            for lane in meeting.calls
        }

    def where(self, lane: int) -> str:
        i = self.index * WARP_SIZE + lane
        if self.gens[i] is None:
            return "exited"
        waiting = self.engine_waiting.get(i)
        if waiting is None:
            return ""
        return "waiting" if waiting[0] >= SYNCWARP else "syncthreads"


def _line(site: int) -> int:
    return SITES[site][1]


def source_lane(mode: str, lane: int, operand) -> int:
    """:func:`gpu_utils.sim.warp.shuffle_source_lane` for the width of numba's intrinsics (32), in
    the few operations each mode needs (tests/test_sim.py checks it against that function)."""
    b = (operand if type(operand) is int else int(operand)) & 0x1F
    if mode == "down":
        return lane + b if lane + b < WARP_SIZE else lane
    if mode == "bfly":
        return lane ^ b
    if mode == "up":
        return lane - b if lane >= b else lane
    return b  # idx


def _mask(launch, i, name, site, mask) -> int:
    """The mask as an int (gu.warp's rule and error), and the calling lane in it."""
    if type(mask) is not int or not 0 <= mask <= gwarp.FULL_MASK:
        try:
            mask = gwarp._as_mask(mask)
        except gwarp.WarpError as error:
            raise WarpError(
                f"{launch.where(i)}, line {_line(site)}: {error}",
                **launch.located(i, _line(site), str(error)),
            ) from None
    if not mask >> (i & 31) & 1:
        try:
            gwarp._check_mask(name, mask, i & 31)
        except gwarp.WarpError as error:
            raise WarpError(
                f"{launch.where(i)}, line {_line(site)}: {error}",
                **launch.located(i, _line(site), str(error)),
            ) from None
    return mask


def release(launch, waiting: dict, gens: list) -> dict:
    """Complete every rendezvous that can complete: the threads released, each with its
    result. Raises when none can complete (the lanes would wait forever on a GPU)."""
    n = len(gens)
    meetings: dict[tuple, _Meeting] = {}
    for i, (kind, site, payload) in waiting.items():
        if kind < SYNCWARP:
            continue
        if kind == SYNCWARP:
            name, args = "syncwarp", (payload,)
        else:
            name, args = payload
        if name == "activemask":
            visit = launch.visits[(i, site)] = launch.visits.get((i, site), 0) + 1
            key, given = (i >> 5, name, site, visit), None
        else:
            given = _mask(launch, i, name, site, args[0])
            key = (i >> 5, name, given)
        meeting = meetings.get(key)
        if meeting is None:
            existing = (1 << min(WARP_SIZE, n - (i & ~31))) - 1
            if given is None:
                given = existing
            meeting = meetings[key] = _Meeting(name, given & existing, given)
        meeting.calls[i & 31] = (i, args, site)
    released: dict = {}
    for (w, name, *_), meeting in meetings.items():
        calls = meeting.calls
        if len(calls) == meeting.mask.bit_count():
            complete = True  # every lane of the mask is here (the lanes are in the mask)
        elif name == "syncwarp":
            complete = False
        else:
            missing = [lane for lane in gwarp._bits(meeting.mask) if lane not in calls]
            complete = name == "activemask" or all(
                gens[w * WARP_SIZE + lane] is None for lane in missing
            )
        if complete:
            _answer(launch, w, meeting, waiting, released, gens, meetings)
    if released:
        return released
    w, name, *_ = key = min(meetings, key=lambda k: min(c[0] for c in meetings[k].calls.values()))
    meeting = meetings[key]
    _fill(meeting)
    i, _, site = meeting.calls[min(meeting.calls)]
    problem, _ = gwarp._stuck(name, meeting, _WarpView(w, gens, waiting, meetings))
    problem = problem or f"cuda.{name} waits for lanes that never reach it (a hang on a GPU)"
    raise WarpDivergence(
        f"{launch.where(i)}, line {_line(site)}: {problem}",
        **launch.located(i, _line(site), problem),
    )


def _fill(meeting) -> None:
    """gu.warp's round fields (values, sites), for its messages and the votes."""
    calls = meeting.calls
    meeting.values = {lane: (a[1] if len(a) > 1 else None) for lane, (_, a, _) in calls.items()}
    meeting.sites = {lane: (SITES[s][0], SITES[s][1]) for lane, (_, _, s) in calls.items()}


def _answer(launch, w, meeting, waiting, released, gens, meetings) -> None:
    name = meeting.op
    calls = meeting.calls
    meeting.complete = True
    meeting.result_mask = gwarp._mask_of(calls)
    if name not in ("syncwarp", "activemask") and len({c[2] for c in calls.values()}) > 1:
        _fill(meeting)
        for other in meetings.values():
            _fill(other)
        view = _WarpView(w, gens, waiting, meetings)
        i = calls[min(calls)][0]
        problem = gwarp._different_calls(name, meeting, view)
        raise WarpError(f"{launch.where(i)}: {problem}", **launch.located(i, None, problem))
    if name in SHUFFLE_MODES:
        mode = SHUFFLE_MODES[name]
        values = {lane: a[1] for lane, (_, a, _) in calls.items()}
        for lane, (i, args, site) in calls.items():
            source = source_lane(mode, lane, args[2])
            found = values.get(source, _MISSING)
            if found is _MISSING:
                found = _not_there(launch, w, meeting, lane, source, args, site, len(gens))
            released[i] = found
            del waiting[i]
        return
    if name in ("syncwarp", "activemask"):
        result = None if name == "syncwarp" else np.uint32(meeting.result_mask)
        if name == "syncwarp" and launch.observer is not None:
            launch.observer.released(SYNCWARP, {i: site for i, _, site in calls.values()})
        for i, _, _ in calls.values():
            released[i] = result
            del waiting[i]
        return
    _fill(meeting)
    values = meeting.values
    if name == "ballot_sync":
        common = gwarp._int32(gwarp._mask_of(o for o, vote in values.items() if vote))
    elif name == "all_sync":
        common = all(bool(v) for v in values.values())
    elif name == "any_sync":
        common = any(bool(v) for v in values.values())
    elif name == "eq_sync":
        common = len({bool(v) for v in values.values()}) == 1
    for lane, (i, _, _) in calls.items():
        if name == "match_any_sync":
            mine = values[lane]
            result = gwarp._int32(gwarp._mask_of(o for o, v in values.items() if v == mine))
        elif name == "match_all_sync":
            mine = values[lane]
            same = all(v == mine for v in values.values())
            result = (gwarp._int32(meeting.result_mask if same else 0), same)
        else:
            result = common
        released[i] = result
        del waiting[i]


_MISSING = object()


def _not_there(launch, w, meeting, lane, source, args, site, n):
    """A shuffle's source lane that did not take part: the caller's own value when the mask
    leaves it out (undefined on a GPU; ``gu.warp`` does the same), else an error."""
    name = meeting.op
    if not meeting.given >> source & 1:
        return args[1]
    i = w * WARP_SIZE + lane
    if not meeting.mask >> source & 1:  # named by the mask, but no such lane in this block
        existing = min(WARP_SIZE, n - WARP_SIZE * w)
        problem = (
            f"cuda.{name}: lane {lane} of warp {w} reads the value of lane {source}, "
            f"which does not exist: the block has {n} threads, so this warp has only lanes 0 to "
            f"{existing - 1}. The value is undefined on a GPU. Use blocks whose size is a "
            "multiple of 32, or read only lanes that exist (e.g. shuffle a 0 in from lanes past "
            "the end)."
        )
    else:
        problem = (
            f"cuda.{name}: lane {lane} of warp {w} reads the value of lane {source}, but "
            f"lane {source} did not take part in this cuda.{name}: it finished the kernel without "
            "reaching the call (the call sits inside an `if` that the lane skipped, or the lane "
            "returned before it). The value is undefined on a GPU. Let every lane whose value is "
            "read reach the shuffle: compute the value under the condition (e.g. "
            "`v = x[i] if i < n else 0`) and call the shuffle outside the `if`."
        )
    raise WarpError(
        f"{launch.where(i)}, line {_line(site)}: {problem}",
        **launch.located(i, _line(site), problem),
    )
