"""Warp-level intrinsics for Numba's CUDA simulator (taught in chapter 05, traced in chapter 04).

Usage: nothing to call in a notebook. After ``import gpu_utils`` in simulator mode, kernels use
``cuda.shfl_sync``, ``cuda.shfl_up_sync``, ``cuda.shfl_down_sync``, ``cuda.shfl_xor_sync``,
``cuda.ballot_sync``, ``cuda.all_sync``, ``cuda.any_sync``, ``cuda.eq_sync``,
``cuda.match_any_sync``, ``cuda.match_all_sync``, ``cuda.activemask``, ``cuda.lanemask_lt``,
``cuda.syncwarp`` and ``cuda.laneid`` exactly as on a GPU, where Numba's real ones run::

    @cuda.jit
    def warp_sum(x, out):
        i = cuda.grid(1)
        v = x[i]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if cuda.laneid == 0:
            out[i // 32] = v

``install()`` adds them to the simulator (idempotent; ``gu.trace`` and the checkers call it);
``import gpu_utils`` in simulator mode defers that until numba's simulator is first imported (an
import hook, :class:`gpu_utils.runtime.AfterImport`), so importing gpu_utils stays cheap.

Semantics follow the PTX ISA (``shfl.sync``, ``vote.sync``, ``match.sync``, ``bar.warp.sync``)
and the CUDA C++ Programming Guide ("Warp Shuffle Functions", "Warp Vote Functions"): a warp is 32
consecutive linear thread ids of a block; every lane named in ``mask`` that has not exited must
execute the same intrinsic with the same mask. The simulator runs each CUDA thread as a Python
thread, so each call is a rendezvous of the lanes in ``mask``.

* Lanes that do not exist (a block of fewer than 32 threads, or the last warp of a block whose size
  is not a multiple of 32) take no part in anything: ``0xFFFFFFFF`` names only the lanes that
  exist, for every intrinsic, ``syncwarp()`` included.
* Lanes that have exited the kernel take no part in shuffles, votes, matches and ``activemask``
  ("all non-exited threads in membermask", PTX ISA), so ``if i >= n: return`` before
  ``cuda.ballot_sync(0xFFFFFFFF, p)`` is correct. ``bar.warp.sync`` has no such exception (its
  text reads "all threads corresponding to membermask"), so a ``syncwarp`` whose mask names an
  exited lane is reported.
* ``syncwarp(mask)`` orders memory only among the lanes in its mask (``gu.trace`` follows that).
* Bit intrinsics (``popc``, ``clz``, ``ffs``, ``brev``) use 32 bits for a Python int (as Numba's
  own simulator does; ``cuda.laneid`` is an int32 on a GPU), 64 bits for one that does not fit in
  32, and a NumPy integer's own width, as Numba's compiled intrinsics do (``brev`` at least 32).

Where the GPU would hang or be undefined, the simulator raises a clear :class:`WarpError` instead:
a shuffle that reads the value of a lane that exited or does not exist (undefined), a ``syncwarp``
whose mask names an exited lane, a mask that leaves out the calling lane, a lane waiting at
``syncthreads``, lanes that never meet because they disagree on the mask, or lanes of one mask that
meet in different calls of a shuffle, vote or match (a loop that runs a different number of times
in different lanes; the Programming Guide asks them to execute "the same intrinsic"). Reading a
lane outside ``mask`` is undefined on a GPU; the simulator then returns the caller's own value.
Numba's intrinsics have no ``width`` argument (CUDA C++'s ``__shfl_*_sync`` do):
:func:`shuffle_source_lane` implements the PTX rule with a width, which the intrinsics use with
width 32.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass, field

from ._numba_sim import check_numba_cuda_version, require_simulator_internals

__all__ = [
    "FULL_MASK",
    "WARP_SIZE",
    "WarpError",
    "install",
    "installed",
    "shuffle_source_lane",
]

FULL_MASK = 0xFFFFFFFF
WARP_SIZE = 32
POLL_SECONDS = 0.02  # how often a waiting lane looks for lanes that can never arrive
STALL_POLLS = 15  # polls without progress before lanes that wait on each other count as stuck
# polls a lane must be seen waiting at syncthreads before that counts as a hang: a barrier's
# release clears its threads' flags one by one, so a released lane can look blocked for a moment
SYNCTHREADS_POLLS = 50
SHUFFLE_MODES = ("idx", "up", "down", "bfly")


class WarpError(RuntimeError):
    """A warp intrinsic was used in a way that hangs or is undefined on a GPU."""


class LaunchStopped(SystemExit):
    """Ends a lane quietly when another thread of the launch raised: that thread's error is the
    one to report (Python threads ignore SystemExit, and the simulator records only Exception)."""


def shuffle_source_lane(mode: str, lane: int, operand: int, width: int = WARP_SIZE) -> int:
    """The lane whose value ``lane`` receives, by the PTX ``shfl.sync`` rule (caller's own lane
    when the source falls outside its segment of ``width`` lanes).

    ``mode``: ``"idx"`` (shfl_sync, operand = source lane), ``"up"``/``"down"`` (operand = delta)
    or ``"bfly"`` (shfl_xor_sync, operand = lane mask). CUDA C++ encodes ``width`` in PTX's ``c``
    operand as ``((32 - width) << 8) | clamp``; that is what is computed here.
    """
    if mode not in SHUFFLE_MODES:
        raise ValueError(f"mode {mode!r}: use one of {', '.join(SHUFFLE_MODES)}")
    if width not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"width {width}: use a power of two from 1 to 32")
    clamp = 0 if mode == "up" else 0x1F
    segmask = (WARP_SIZE - width) & 0x1F
    b = int(operand) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask & 0x1F)
    min_lane = lane & segmask
    if mode == "up":
        source, valid = lane - b, lane - b >= max_lane
    elif mode == "down":
        source, valid = lane + b, lane + b <= max_lane
    elif mode == "bfly":
        source, valid = lane ^ b, (lane ^ b) <= max_lane
    else:
        source = min_lane | (b & ~segmask & 0x1F)
        valid = source <= max_lane
    return source if valid else lane


def _numpy():
    """NumPy, imported on first use so that ``import gpu_utils`` stays cheap."""
    import numpy

    return numpy


# --- per-block state --------------------------------------------------------------------------


@dataclass(eq=False)
class _Round:
    """One collective call: the lanes that arrived so far and their values."""

    op: str
    mask: int  # the lanes taking part: the mask as given, less the lanes that do not exist
    given: int = 0  # the mask as the kernel gave it
    values: dict[int, object] = field(default_factory=dict)
    sites: dict[int, tuple] = field(default_factory=dict)  # lane -> (code, line) of its call
    complete: bool = False
    result_mask: int = 0


class _Warp:
    def __init__(self, block: _Block, index: int) -> None:
        self.block = block
        self.index = index
        self.cond = threading.Condition()
        self.rounds: dict[tuple, _Round] = {}
        self.waiting: dict[int, _Round] = {}  # lane -> the round it waits in
        self.progress = 0

    def lanes(self) -> int:
        """Mask of the lanes that exist in this warp (a block's last warp may be partial)."""
        count = min(WARP_SIZE, self.block.size - WARP_SIZE * self.index)
        return (1 << count) - 1

    def thread(self, lane: int):
        return self.block.threads.get(self.index * WARP_SIZE + lane)

    def finish(self, rnd: _Round, result_mask: int | None = None) -> None:
        rnd.complete = True
        rnd.result_mask = _mask_of(rnd.values) if result_mask is None else result_mask
        for key, value in list(self.rounds.items()):
            if value is rnd:
                del self.rounds[key]
        for lane in rnd.values:
            if self.waiting.get(lane) is rnd:
                del self.waiting[lane]
        self.progress += 1
        self.cond.notify_all()

    def abandon(self, rnd: _Round, lane: int) -> None:
        """A lane gives up (the kernel is failing); its value stays, so others blame the same
        missing lane rather than this one."""
        self.waiting.pop(lane, None)

    def where(self, lane: int) -> str:
        """What a lane is doing, in words, or '' while it is still running."""
        thread = self.thread(lane)
        if thread is None:
            return ""
        if getattr(thread, "_gu_done", False):
            # a lane that raised (or was stopped by one that did) is not to blame
            failed = getattr(thread, "exception", None) or getattr(thread, "_gu_stopped", False)
            return "failed" if failed else "exited"
        if getattr(thread, "syncthreads_blocked", False):
            return "syncthreads"
        if lane in self.waiting:
            return "waiting"
        return ""


class _Block:
    def __init__(self, size: int) -> None:
        self.size = size
        self.threads: dict[int, threading.Thread] = {}
        self.warps: dict[int, _Warp] = {}
        self.lock = threading.Lock()

    def warp(self, index: int) -> _Warp:
        with self.lock:
            warp = self.warps.get(index)
            if warp is None:
                warp = self.warps[index] = _Warp(self, index)
            return warp


_blocks_lock = threading.Lock()


def _block_of(thread) -> _Block:
    """The warp state of the thread's block, stored on its block manager."""
    manager = thread._manager
    block = manager.__dict__.get("_gu_block")
    if block is None:
        with _blocks_lock:
            block = manager.__dict__.get("_gu_block")
            if block is None:
                size = math.prod(int(d) for d in manager._block_dim)
                block = manager.__dict__["_gu_block"] = _Block(size)
    return block


def register_thread(thread) -> None:
    """Record a simulator thread in its block (the simulator's and gu.trace's threads call it)."""
    block = _block_of(thread)
    with block.lock:
        block.threads[thread.thread_id] = thread


def thread_exited(thread) -> None:
    """Mark a thread as finished and wake the lanes of its warp that may wait for it."""
    thread._gu_done = True
    block = _block_of(thread)
    warp = block.warps.get(thread.thread_id // WARP_SIZE)
    if warp is not None:
        with warp.cond:
            warp.cond.notify_all()


# --- the rendezvous ---------------------------------------------------------------------------


def _mask_of(lanes) -> int:
    mask = 0
    for lane in lanes:
        mask |= 1 << lane
    return mask


def _bits(mask: int) -> list[int]:
    return [lane for lane in range(WARP_SIZE) if mask >> lane & 1]


def _as_mask(mask) -> int:
    try:
        return int(mask) & FULL_MASK
    except (TypeError, ValueError):
        raise WarpError(f"the mask must be an integer such as 0xFFFFFFFF, not {mask!r}") from None


def _current():
    thread = threading.current_thread()
    if not hasattr(thread, "thread_id") or not hasattr(thread, "_manager"):
        raise WarpError("warp intrinsics can only be called inside a kernel")
    lane = thread.thread_id % WARP_SIZE
    warp = _block_of(thread).warp(thread.thread_id // WARP_SIZE)
    return thread, lane, warp


def _check_mask(name: str, mask: int, lane: int) -> None:
    if not mask >> lane & 1:
        raise WarpError(
            f"lane {lane} called cuda.{name} with mask {mask:#010x}, which does not include "
            "itself; every calling lane must be in the mask (undefined on a GPU)."
        )


def _stuck(name: str, rnd: _Round, warp: _Warp) -> tuple[str | None, int]:
    """Why the lanes missing from ``rnd`` may never arrive, and for how many polls without
    progress that must hold before it counts (0: certain at once).

    A lane that exited can never arrive. A lane seen waiting at ``syncthreads`` may be one the
    barrier is releasing right now, and lanes that all wait in other warp intrinsics may still be
    sorting themselves out: both count only if nothing moves for a while.
    """
    missing = [lane for lane in _bits(rnd.mask) if lane not in rnd.values]
    states = {lane: warp.where(lane) for lane in missing}
    if "failed" in states.values():
        raise LaunchStopped()  # another lane raised: its error is the one to report
    for lane, state in states.items():
        if state == "exited" and name == "syncwarp":
            return (
                f"cuda.syncwarp with mask {rnd.given:#010x}: lane {lane} of warp {warp.index} "
                "finished the kernel without calling it (it skipped the call inside an `if`, or "
                "returned before it). syncwarp (bar.warp.sync) waits for every lane in its mask, "
                "so the others would wait forever (a hang on a GPU). Leave such lanes out of the "
                "mask (cuda.ballot_sync(0xFFFFFFFF, i < n) before they leave), or let every lane "
                "reach the syncwarp."
            ), 0
        if state == "syncthreads":
            return (
                f"cuda.{name} with mask {rnd.given:#010x}: lane {lane} of warp {warp.index} is "
                "waiting at cuda.syncthreads() instead, so neither can go on (a hang on a GPU). "
                "Every lane in the mask must reach the same warp intrinsic."
            ), SYNCTHREADS_POLLS
    if name != "syncwarp":  # exited lanes take no part in shuffles, votes and matches
        missing = [lane for lane in missing if states[lane] != "exited"]
    if missing and all(states[lane] == "waiting" for lane in missing):
        other = warp.waiting[missing[0]]
        return (
            f"cuda.{name} with mask {rnd.given:#010x}: lane {missing[0]} of warp {warp.index} is "
            f"waiting in cuda.{other.op} with mask {other.given:#010x}. The lanes disagree about "
            "which lanes take part, so none can go on (a hang on a GPU)."
        ), STALL_POLLS
    return None, 0


def _arrived(name: str, rnd: _Round, warp: _Warp) -> bool:
    """Whether every lane ``rnd`` waits for is there: all of ``mask`` for syncwarp, the lanes of
    ``mask`` that have not exited for the other intrinsics (PTX ISA, shfl.sync/vote.sync/match.sync)."""
    missing = [lane for lane in _bits(rnd.mask) if lane not in rnd.values]
    if name == "syncwarp":
        return not missing
    return all(warp.where(lane) == "exited" for lane in missing)


def _wait(name: str, rnd: _Round, thread, lane: int, warp: _Warp, ready=None) -> None:
    """Wait (holding ``warp.cond``) until ``rnd`` completes; raise if it never can.

    ``ready()``, when given, may complete the round itself (activemask's rule).
    """
    seen, idle = warp.progress, 0
    while not rnd.complete:
        if ready is not None and ready():
            return
        warp.cond.wait(POLL_SECONDS)
        if rnd.complete:
            return
        if getattr(thread, "abort", False):
            warp.abandon(rnd, lane)
            raise LaunchStopped()
        if ready is not None:
            continue
        if _arrived(name, rnd, warp):
            warp.finish(rnd)
            return
        try:
            problem, polls = _stuck(name, rnd, warp)
        except LaunchStopped:
            warp.abandon(rnd, lane)
            raise
        if problem is None or (polls and warp.progress != seen):
            seen, idle = warp.progress, 0
            continue
        idle += 1
        if idle < polls:
            continue
        warp.abandon(rnd, lane)
        raise WarpError(problem)


def _collective(name: str, mask, value) -> _Round:
    """Every lane in ``mask`` contributes ``value``; returns the completed round."""
    thread, lane, warp = _current()
    mask = _as_mask(mask)
    _check_mask(name, mask, lane)
    with warp.cond:
        key = (name, mask)
        rnd = warp.rounds.get(key)
        if rnd is None:  # lanes that do not exist take no part (partial warps)
            rnd = warp.rounds[key] = _Round(name, mask & warp.lanes(), mask)
        rnd.values[lane] = value
        rnd.sites[lane] = _call_site()
        warp.waiting[lane] = rnd
        if _arrived(name, rnd, warp):
            warp.finish(rnd)
        else:
            _wait(name, rnd, thread, lane, warp)
    if name != "syncwarp" and len(set(rnd.sites.values())) > 1:
        raise WarpError(_different_calls(name, rnd, warp))
    return rnd


def _call_site() -> tuple:
    """(code, line) of the kernel's call into this module."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return (frame.f_code, frame.f_lineno) if frame is not None else (None, 0)


def _lane_ranges(lanes: list[int]) -> str:
    runs: list[list[int]] = []
    for lane in sorted(lanes):
        if runs and lane == runs[-1][1] + 1:
            runs[-1][1] = lane
        else:
            runs.append([lane, lane])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
    return ("lane " if len(lanes) == 1 else "lanes ") + text


def _different_calls(name: str, rnd: _Round, warp: _Warp) -> str:
    """Lanes of one mask met in different calls of the same intrinsic (a GPU on sm_70+ may pair
    them, but the CUDA C++ Programming Guide asks all of them to execute the same intrinsic)."""
    by_line: dict[int, list[int]] = {}
    for lane, (_, line) in rnd.sites.items():
        by_line.setdefault(line, []).append(lane)
    where = "; ".join(
        f"{_lane_ranges(lanes)} at line {line}" for line, lanes in sorted(by_line.items())
    )
    return (
        f"cuda.{name} with mask {rnd.given:#010x}: the lanes of warp {warp.index} reached it from "
        f"different calls ({where}), so values of different steps would be paired (undefined on "
        "a GPU: every lane named in the mask must execute the same call). This happens when a "
        "loop around the call runs a different number of times in different lanes, or the call "
        "sits inside an `if`: give every lane the same number of iterations (lanes without work "
        "use a neutral value such as 0) and call it outside the `if`."
    )


def _shuffle(name: str, mode: str, mask, value, operand):
    rnd = _collective(name, mask, value)
    thread = threading.current_thread()
    lane = thread.thread_id % WARP_SIZE
    source = shuffle_source_lane(mode, lane, operand)
    if source in rnd.values:
        return rnd.values[source]
    if not rnd.given >> source & 1:
        return value  # outside the mask: undefined on a GPU, own value here
    warp = _block_of(thread).warps[thread.thread_id // WARP_SIZE]
    if not rnd.mask >> source & 1:  # named by the mask, but no such lane in this block
        existing = warp.lanes().bit_count()
        raise WarpError(
            f"cuda.{name}: lane {lane} of warp {warp.index} reads the value of lane {source}, "
            f"which does not exist: the block has {warp.block.size} threads, so this warp has "
            f"only lanes 0 to {existing - 1}. The value is undefined on a GPU. Use blocks whose "
            "size is a multiple of 32, or read only lanes that exist (e.g. shuffle a 0 in from "
            "lanes past the end)."
        )
    raise WarpError(
        f"cuda.{name}: lane {lane} of warp {warp.index} reads the value of lane {source}, but "
        f"lane {source} did not take part in this cuda.{name}: it finished the kernel without "
        "reaching the call (the call sits inside an `if` that the lane skipped, or the lane "
        "returned before it). The value is undefined on a GPU. Let every lane whose value is "
        "read reach the shuffle: compute the value under the condition (e.g. "
        "`v = x[i] if i < n else 0`) and call the shuffle outside the `if`."
    )


def _int32(bits: int):
    """``bits`` as a NumPy int32, the type Numba's ballot and match intrinsics return."""
    bits &= FULL_MASK
    return _numpy().int32(bits - (1 << 32) if bits >= 1 << 31 else bits)


# --- the intrinsics, as methods of the simulator's fake `cuda` module -------------------------


def shfl_sync(self, mask, value, src_lane):
    return _shuffle("shfl_sync", "idx", mask, value, src_lane)


def shfl_up_sync(self, mask, value, delta):
    return _shuffle("shfl_up_sync", "up", mask, value, delta)


def shfl_down_sync(self, mask, value, delta):
    return _shuffle("shfl_down_sync", "down", mask, value, delta)


def shfl_xor_sync(self, mask, value, lane_mask):
    return _shuffle("shfl_xor_sync", "bfly", mask, value, lane_mask)


def ballot_sync(self, mask, predicate):
    rnd = _collective("ballot_sync", mask, bool(predicate))
    return _int32(_mask_of(lane for lane, vote in rnd.values.items() if vote))  # i4, as Numba


def all_sync(self, mask, predicate):
    rnd = _collective("all_sync", mask, bool(predicate))
    return all(rnd.values.values())


def any_sync(self, mask, predicate):
    rnd = _collective("any_sync", mask, bool(predicate))
    return any(rnd.values.values())


def eq_sync(self, mask, predicate):
    rnd = _collective("eq_sync", mask, bool(predicate))
    return len(set(rnd.values.values())) == 1


def match_any_sync(self, mask, value):
    rnd = _collective("match_any_sync", mask, value)
    return _int32(_mask_of(lane for lane, other in rnd.values.items() if other == value))


def match_all_sync(self, mask, value):
    rnd = _collective("match_all_sync", mask, value)
    same = all(other == value for other in rnd.values.values())
    return _int32(rnd.result_mask if same else 0), same


def syncwarp(self, mask=FULL_MASK):
    thread = threading.current_thread()
    arrive = getattr(thread, "syncwarp_arrive", None)  # gu.trace: orders accesses by barriers
    rnd = _collective("syncwarp", mask, arrive() if arrive is not None else None)
    if arrive is not None:
        thread.syncwarp_leave(list(rnd.values.values()))


def activemask(self):
    """The lanes of this warp executing this call together (see the module docstring)."""
    thread, lane, warp = _current()
    frame = sys._getframe(1)
    site = (frame.f_code, frame.f_lineno)
    visits = thread.__dict__.setdefault("_gu_activemask_visits", {})
    visits[site] = visits.get(site, 0) + 1
    key = ("activemask", site, visits[site])
    with warp.cond:
        rnd = warp.rounds.get(key)
        if rnd is None:
            rnd = warp.rounds[key] = _Round("activemask", warp.lanes(), warp.lanes())
        rnd.values[lane] = True
        warp.waiting[lane] = rnd
        warp.cond.notify_all()

        def everyone_accounted_for() -> bool:
            # converged lanes arrive here; the others have exited or wait somewhere else
            for other in _bits(warp.lanes()):
                if other not in rnd.values and warp.where(other) == "":
                    return False
            warp.finish(rnd)
            return True

        _wait("activemask", rnd, thread, lane, warp, ready=everyone_accounted_for)
    return _numpy().uint32(rnd.result_mask)


def lanemask_lt(self):
    lane = threading.current_thread().thread_id % WARP_SIZE
    return _numpy().uint32((1 << lane) - 1)


# Bit intrinsics: the width is the operand's type, as in Numba's compiled versions (numba-cuda's
# cudaimpl.py: popc and clz are LLVM ctpop/ctlz on the operand's own type; brev calls __nv_brev or
# __nv_brevll, so narrower types are widened to 32 bits; ffs calls __nv_ffs or __nv_ffsll). A Python
# int counts as 32 bits when it fits (cuda.laneid is an int32 on a GPU; Numba's simulator formats
# every value with at least 32 binary digits), else 64. A NumPy integer keeps its own width
# (ballot_sync returns an int32, whose set sign bit counts in popc).


def _width_and_bits(value) -> tuple[int, int]:
    np = _numpy()
    if isinstance(value, np.integer):
        width = np.dtype(type(value)).itemsize * 8
    else:
        value = int(value)
        width = 32 if -(1 << 31) <= value < 1 << 32 else 64
    return width, int(value) & ((1 << width) - 1)


def popc(self, value):
    return _width_and_bits(value)[1].bit_count()


def clz(self, value):
    width, bits = _width_and_bits(value)
    return width - bits.bit_length()


def ffs(self, value):
    bits = _width_and_bits(value)[1]
    return (bits & -bits).bit_length()  # 1-based position of the lowest set bit, 0 if none


def brev(self, value):
    width, bits = _width_and_bits(value)
    width = max(width, 32)  # __nv_brev (32 bits) or __nv_brevll (64 bits)
    return int(f"{bits:0{width}b}"[::-1], 2)


INTRINSICS = {
    "shfl_sync": shfl_sync,
    "shfl_up_sync": shfl_up_sync,
    "shfl_down_sync": shfl_down_sync,
    "shfl_xor_sync": shfl_xor_sync,
    "ballot_sync": ballot_sync,
    "all_sync": all_sync,
    "any_sync": any_sync,
    "eq_sync": eq_sync,
    "match_any_sync": match_any_sync,
    "match_all_sync": match_all_sync,
    "syncwarp": syncwarp,
    "activemask": activemask,
    "lanemask_lt": lanemask_lt,
    "popc": popc,
    "clz": clz,
    "ffs": ffs,
    "brev": brev,
}

# --- installation ------------------------------------------------------------------------------

_install_lock = threading.Lock()
_installed = False
#: Numba's own simulator versions of the intrinsics replaced here (the tests' oracle).
NUMBA_SIMULATOR_INTRINSICS: dict[str, object] = {}


def installed() -> bool:
    """True once the simulator's fake ``cuda`` module has the intrinsics."""
    return _installed


def install() -> bool:
    """Add the intrinsics to the simulator (idempotent). Returns True when they are installed."""
    global _installed
    with _install_lock:
        if _installed:
            return True
        check_numba_cuda_version()
        from numba.cuda.simulator import kernel, kernelapi

        require_simulator_internals(kernel, "BlockThread")
        require_simulator_internals(kernelapi, "FakeCUDAModule")

        for name, function in INTRINSICS.items():
            original = getattr(kernelapi.FakeCUDAModule, name, None)
            if original is not None:
                NUMBA_SIMULATOR_INTRINSICS[name] = original
            setattr(kernelapi.FakeCUDAModule, name, function)
        thread_class = kernel.BlockThread
        original_init, original_run = thread_class.__init__, thread_class.run

        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            register_thread(self)

        def run(self):
            try:
                original_run(self)
            except LaunchStopped:
                self._gu_stopped = True  # another thread's error ends the launch; stop quietly
            finally:
                thread_exited(self)

        thread_class.__init__ = __init__
        thread_class.run = run
        _installed = True
        return True
