"""Warp intrinsics on the course's engine (:mod:`gpu_utils.sim`), with the semantics
:mod:`gpu_utils.warp` gives them on numba-cuda's simulator.

A shuffle, vote, match, ``activemask`` or ``syncwarp`` is a rendezvous of the lanes of one warp
(32 consecutive linear thread ids of the block) named in its mask. The rewrite turns each call
into a ``yield``; once every thread of the block waits somewhere or has left, the engine hands
the waiting calls to :func:`release`, which meets the lanes by (warp, intrinsic, mask), as
``gu.warp`` does:

* lanes that do not exist (a partial last warp) take no part; lanes that left the kernel take no
  part in shuffles, votes and matches, but a ``syncwarp`` waits for every lane of its mask
  (PTX ISA, ``shfl.sync``/``vote.sync``/``match.sync`` against ``bar.warp.sync``);
* ``activemask`` answers the lanes of its warp at the same call (the same site, the same visit);
* what ``gu.warp`` reports as a :class:`gpu_utils.warp.WarpError` raises the same text here, with
  the thread and the line: a mask without the calling lane, lanes meeting in different calls, a
  shuffle reading a lane that does not exist or did not take part, and, when no rendezvous can
  complete, the lane that keeps the others waiting forever (:class:`WarpDivergence`).

Because the engine decides only when every thread has stopped, there is no polling: the same
kernel gives the same answer every time.
"""

from __future__ import annotations

import numpy as np

from .. import warp as gwarp
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
            for lane in meeting.values
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


def release(launch, waiting: dict, send: list, gens: list) -> list[int]:
    """Complete every rendezvous that can complete; the threads released, their results in
    ``send``. Raises when none can complete (the lanes would wait forever on a GPU)."""
    n = len(gens)
    meetings: dict[tuple, _Meeting] = {}
    for i, (kind, site, payload) in waiting.items():
        if kind < SYNCWARP:
            continue
        name, args = ("syncwarp", (payload,)) if kind == SYNCWARP else payload
        w, lane = divmod(i, WARP_SIZE)
        existing = (1 << min(WARP_SIZE, n - WARP_SIZE * w)) - 1
        if name == "activemask":
            visit = launch.visits[(i, site)] = launch.visits.get((i, site), 0) + 1
            key, given = (w, name, site, visit), existing
        else:
            try:
                given = gwarp._as_mask(args[0])
                gwarp._check_mask(name, given, lane)
            except gwarp.WarpError as error:
                raise WarpError(f"{launch.where(i)}, line {_line(site)}: {error}") from None
            key = (w, name, given)
        meeting = meetings.get(key)
        if meeting is None:
            meeting = meetings[key] = _Meeting(name, given & existing, given)
        meeting.values[lane] = args[1] if len(args) > 1 else None
        meeting.sites[lane] = (SITES[site][0], _line(site))
        meeting.calls[lane] = (i, args, site)
    released: list[int] = []
    for (w, name, *_), meeting in meetings.items():
        missing = [lane for lane in gwarp._bits(meeting.mask) if lane not in meeting.values]
        if name == "syncwarp":
            complete = not missing
        else:
            complete = name == "activemask" or all(
                gens[w * WARP_SIZE + lane] is None for lane in missing
            )
        if complete:
            meeting.complete = True
            meeting.result_mask = gwarp._mask_of(meeting.values)
            _answer(launch, w, meeting, waiting, send, released, gens, meetings)
    if released:
        return released
    w, name, *_ = key = min(meetings, key=lambda k: min(c[0] for c in meetings[k].calls.values()))
    meeting = meetings[key]
    first = min(meeting.calls)
    i, _, site = meeting.calls[first]
    problem, _ = gwarp._stuck(name, meeting, _WarpView(w, gens, waiting, meetings))
    raise WarpDivergence(
        f"{launch.where(i)}, line {_line(site)}: "
        + (problem or f"cuda.{name} waits for lanes that never reach it (a hang on a GPU)")
    )


def _answer(launch, w, meeting, waiting, send, released, gens, meetings) -> None:
    name = meeting.op
    first = min(meeting.calls)
    where = launch.where(meeting.calls[first][0])
    if name not in ("syncwarp", "activemask") and len(set(meeting.sites.values())) > 1:
        view = _WarpView(w, gens, waiting, meetings)
        raise WarpError(f"{where}: {gwarp._different_calls(name, meeting, view)}")
    values = meeting.values
    for lane, (i, args, site) in meeting.calls.items():
        if name in SHUFFLE_MODES:
            result = _shuffled(launch, w, meeting, lane, args, site, len(gens))
        elif name == "ballot_sync":
            result = gwarp._int32(gwarp._mask_of(o for o, vote in values.items() if vote))
        elif name == "all_sync":
            result = all(bool(v) for v in values.values())
        elif name == "any_sync":
            result = any(bool(v) for v in values.values())
        elif name == "eq_sync":
            result = len({bool(v) for v in values.values()}) == 1
        elif name == "match_any_sync":
            mine = values[lane]
            result = gwarp._int32(gwarp._mask_of(o for o, v in values.items() if v == mine))
        elif name == "match_all_sync":
            mine = values[lane]
            same = all(v == mine for v in values.values())
            result = (gwarp._int32(meeting.result_mask if same else 0), same)
        elif name == "activemask":
            result = np.uint32(meeting.result_mask)
        else:  # syncwarp
            result = None
        send[i] = result
        del waiting[i]
        released.append(i)


def _shuffled(launch, w, meeting, lane, args, site, n):
    """What ``lane`` receives from a shuffle: the PTX rule's source lane's value, its own value
    when the source is outside the mask (undefined on a GPU; ``gu.warp`` does the same)."""
    name = meeting.op
    source = gwarp.shuffle_source_lane(SHUFFLE_MODES[name], lane, args[2])
    if source in meeting.values:
        return meeting.values[source]
    if not meeting.given >> source & 1:
        return args[1]
    where = f"{launch.where(w * WARP_SIZE + lane)}, line {_line(site)}"
    if not meeting.mask >> source & 1:  # named by the mask, but no such lane in this block
        existing = min(WARP_SIZE, n - WARP_SIZE * w)
        raise WarpError(
            f"{where}: cuda.{name}: lane {lane} of warp {w} reads the value of lane {source}, "
            f"which does not exist: the block has {n} threads, so this warp has only lanes 0 to "
            f"{existing - 1}. The value is undefined on a GPU. Use blocks whose size is a "
            "multiple of 32, or read only lanes that exist (e.g. shuffle a 0 in from lanes past "
            "the end)."
        )
    raise WarpError(
        f"{where}: cuda.{name}: lane {lane} of warp {w} reads the value of lane {source}, but "
        f"lane {source} did not take part in this cuda.{name}: it finished the kernel without "
        "reaching the call (the call sits inside an `if` that the lane skipped, or the lane "
        "returned before it). The value is undefined on a GPU. Let every lane whose value is "
        "read reach the shuffle: compute the value under the condition (e.g. "
        "`v = x[i] if i < n else 0`) and call the shuffle outside the `if`."
    )
