"""Exercises of lab 02, GPU architecture (chapter 02): occupancy by hand, spotting what limits it,
and reading a device query. Expected answers come from ``gu.occupancy`` at check time."""

from __future__ import annotations

from ..facts.specs import A100_DEVICE_QUERY
from ..one_gpu import occupancy as occ
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "02_gpu_architecture"
KB = 1024

_FRACTION_HINT = "return the occupancy as a fraction between 0 and 1, not a percentage."


# --- occupancy_h100_256x64 --------------------------------------------------------------------


def _h100_answer() -> NumericAnswer:
    result = occ.occupancy(256, 64, 0, (9, 0))
    return NumericAnswer(
        expected=result.occupancy,
        rel_tol=0.01,
        mistakes={
            1.0: (
                "registers limit this kernel: 64 x 32 = 2,048 registers per warp, and each of "
                "the SM's 4 sub-partitions has 16,384. How many warps fit, and so how many "
                "8-warp blocks?"
            ),
            100 * result.occupancy: _FRACTION_HINT,
            float(result.blocks_per_sm): (
                "that is blocks per SM; occupancy is active warps / the SM's maximum warps (64)."
            ),
            float(result.active_warps): (
                "that is the number of active warps; divide by the SM's maximum (64 on cc 9.0)."
            ),
        },
        hint="find the blocks per SM each resource allows, take the smallest, then warps / 64.",
    )


register(
    numeric_exercise(
        id="occupancy_h100_256x64",
        chapter=CHAPTER,
        title="Occupancy of a register-hungry kernel on an H100",
        question=(
            "What is the theoretical occupancy (a fraction) of a kernel with 256 threads per "
            "block, 64 registers per thread and no shared memory on an H100 (cc 9.0)?"
        ),
        answer=_h100_answer,
    )
)


# --- occupancy_a100_41kb ----------------------------------------------------------------------

_SMEM = 41 * KB


def _a100_answer() -> NumericAnswer:
    result = occ.occupancy(128, 32, _SMEM, (8, 0))
    a100, h100 = occ.limits((8, 0)), occ.limits((9, 0))
    warps = result.warps_per_block
    no_reserve = min(a100.shared_mem_per_sm // _SMEM, a100.max_blocks_per_sm)
    h100_blocks = h100.shared_mem_per_sm // (_SMEM + KB)
    return NumericAnswer(
        expected=result.occupancy,
        rel_tol=0.01,
        mistakes={
            no_reserve * warps / a100.max_warps_per_sm: (
                "from compute capability 8.0 on, the driver reserves 1 KB of shared memory per "
                "block, so each block takes 42 KB of the SM's 164 KB."
            ),
            1.0: (
                "shared memory limits this kernel: 164 KB per SM shared by blocks of 41 KB (plus "
                "what the driver reserves) leaves room for only a few."
            ),
            h100_blocks * warps / h100.max_warps_per_sm: (
                "228 KB is an H100's shared memory per SM; an A100 SM has 164 KB "
                "(gu.occupancy.limits((8, 0)).shared_mem_per_sm)."
            ),
            float(result.blocks_per_sm): (
                "that is blocks per SM; occupancy is active warps / the SM's maximum warps (64)."
            ),
            100 * result.occupancy: _FRACTION_HINT,
        },
        hint="shared memory per block, plus the 1 KB reserve, decides how many blocks fit in 164 KB.",
    )


register(
    numeric_exercise(
        id="occupancy_a100_41kb",
        chapter=CHAPTER,
        title="Occupancy of a shared-memory-hungry kernel on an A100",
        question=(
            "What is the theoretical occupancy (a fraction) of a kernel with 128 threads per "
            "block, 32 registers per thread and 41 KB (41 x 1024 bytes) of shared memory per "
            "block on an A100 (cc 8.0)?"
        ),
        answer=_a100_answer,
    )
)


# --- limiter_32_threads -----------------------------------------------------------------------

_LIMITER_ID = "limiter_32_threads"
_SYNONYMS = {
    "warp": "warps",
    "warp slots": "warps",
    "register": "registers",
    "shared": "shared memory",
    "smem": "shared memory",
    "block": "blocks",
    "blocks per sm": "blocks",
}
_LIMITER_HINTS = {
    "warps": (
        "count the blocks each limit allows. A 32-thread block is one warp, and 64 warp slots "
        "hold 64 of them. Which limit allows fewer?"
    ),
    "registers": (
        "32 registers x 32 threads = 1,024 registers per warp; 65,536 registers hold 64 such "
        "warps, so 64 one-warp blocks. Which limit allows fewer?"
    ),
    "shared memory": (
        "this kernel uses no shared memory; only the 1 KB reserve per block counts, and 228 KB "
        "holds 228 of those. Which limit allows fewer?"
    ),
}


def _limiter_run(function) -> CheckResult:
    choices = ", ".join(repr(r) for r in occ.RESOURCES)
    if not callable(function):
        return failed(
            _LIMITER_ID,
            f"Expected a function that returns the answer, got {type(function).__name__}.",
            "wrap it as `def answer(): return 'warps'` (or another choice) and pass `answer`.",
        )
    try:
        value = function()
    except NotImplementedError:
        return not_attempted(_LIMITER_ID)
    except Exception as error:
        return failed(
            _LIMITER_ID,
            f"Your function raised {type(error).__name__}: {error}",
            "run it in a cell of its own to see the full error.",
        )
    if not isinstance(value, str):
        return failed(
            _LIMITER_ID, f"Your function returned {value!r}.", f"return one of {choices}."
        )
    answer = " ".join(value.lower().split())
    answer = _SYNONYMS.get(answer, answer)
    expected = occ.occupancy(32, 32, 0, (9, 0))
    if answer == expected.limiter:
        return passed(
            _LIMITER_ID,
            f"An SM holds at most {expected.block_limits['blocks']} blocks, so one-warp blocks "
            f"fill only {expected.active_warps} of its {expected.max_warps} warp slots "
            f"(occupancy {expected.occupancy:.0%}). Bigger blocks fix it.",
        )
    if answer in _LIMITER_HINTS:
        return failed(_LIMITER_ID, f"Not {answer}.", _LIMITER_HINTS[answer])
    return failed(_LIMITER_ID, f"{value!r} is not one of the choices.", f"return one of {choices}.")


register(
    Exercise(
        id=_LIMITER_ID,
        chapter=CHAPTER,
        title="What limits a kernel launched with one-warp blocks",
        signature=(
            "A kernel with 32 threads per block, 32 registers per thread and no shared memory runs "
            "on an H100 (cc 9.0). Which resource limits its occupancy? A function with no arguments "
            "that returns 'warps', 'registers', 'shared memory' or 'blocks'."
        ),
        launch="called once, in the checker's own process",
        run=_limiter_run,
        kind="function",
    )
)


# --- device_query_bandwidth -------------------------------------------------------------------

_Q = A100_DEVICE_QUERY


def _bandwidth_answer() -> NumericAnswer:
    clock_hz = _Q["memory_clock_rate_khz"] * 1e3
    bus_bytes = _Q["global_memory_bus_width_bits"] / 8
    peak = 2 * clock_hz * bus_bytes
    return NumericAnswer(
        expected=peak / 1e9,
        unit="GB/s",
        rel_tol=0.01,
        mistakes={
            peak / 2 / 1e9: (
                "HBM is double data rate: it transfers on both edges of the clock, so multiply "
                "by 2."
            ),
            peak * 8 / 1e9: "the bus width is in bits; divide by 8 for bytes.",
            peak / 1e12: (
                "that is 1000x too small: either it is in TB/s (the question asks for GB/s), or "
                "you used the clock in kHz as if it were Hz (multiply kHz by 1e3)."
            ),
            peak: "that is in bytes/s; divide by 1e9 for GB/s.",
        },
        hint="peak bandwidth = 2 (double data rate) x clock in Hz x bus width in bytes.",
    )


register(
    numeric_exercise(
        id="device_query_bandwidth",
        chapter=CHAPTER,
        title="Peak memory bandwidth from a device query",
        question=(
            "From A100_DEVICE_QUERY's memory clock and bus width, what is the theoretical peak "
            "memory bandwidth in GB/s?"
        ),
        answer=_bandwidth_answer,
    )
)


# --- device_query_resident_threads ------------------------------------------------------------


def _threads_answer() -> NumericAnswer:
    sms = _Q["multiprocessor_count"]
    per_sm = _Q["max_threads_per_multiprocessor"]
    return NumericAnswer(
        expected=sms * per_sm,
        unit="threads",
        rel_tol=0.01,
        mistakes={
            sms * _Q["max_threads_per_block"]: (
                "1,024 is the limit per block; an SM holds up to 2,048 threads from several "
                "blocks at once."
            ),
            float(per_sm): "that is one SM; multiply by the number of SMs.",
            sms * per_sm / _Q["warp_size"]: "that counts warps; each warp is 32 threads.",
            sms * occ.limits((8, 0)).max_blocks_per_sm: (
                "that is the most resident blocks; the question asks for threads."
            ),
        },
        hint="SMs x the most threads one SM can hold at once.",
    )


register(
    numeric_exercise(
        id="device_query_resident_threads",
        chapter=CHAPTER,
        title="How many threads a whole GPU holds at once",
        question=(
            "From A100_DEVICE_QUERY, how many threads can be resident on the whole GPU at once?"
        ),
        answer=_threads_answer,
    )
)
