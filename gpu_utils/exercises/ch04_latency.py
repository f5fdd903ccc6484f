"""Exercises of lab 04, latency and Little's law (chapter 04): how many bytes must be in flight to
keep an H100's memory busy, and how many independent loads per thread that takes. Expected
answers come from ``gu.specs`` and ``gu.latency`` at check time."""

from __future__ import annotations

from ..facts import specs
from ..one_gpu import latency
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import register

CHAPTER = "04_memory"
GPU = "H100-SXM"
LATENCY_NS = 600  # the questions' assumption; the chapter's pointer chase measures the real one
THREADS_PER_SM = 2048  # full occupancy on compute capability 9.0
FLOAT32 = 4


# --- littles_law_in_flight --------------------------------------------------------------------


def _in_flight_answer() -> NumericAnswer:
    spec = specs.get(GPU)
    expected = latency.bytes_in_flight(LATENCY_NS * 1e-9, spec.hbm_bandwidth)
    return NumericAnswer(
        expected=expected,
        unit="bytes",
        rel_tol=0.02,
        mistakes={
            expected * 1e9: (
                "the latency must be in seconds: 600 ns is 600e-9 s (bandwidth is in bytes per "
                "second)."
            ),
            expected / 1e9: (
                "use the bandwidth in bytes per second (gu.specs.get('H100-SXM').hbm_bandwidth, "
                "3.35e12), not in GB/s."
            ),
            expected / spec.sm_count: (
                "that is the share of one SM; the question asks for the whole GPU."
            ),
            spec.hbm_bandwidth / (LATENCY_NS * 1e-9): (
                "Little's law multiplies: bytes in flight = latency x bandwidth."
            ),
            expected * 8: "the answer is in bytes, not bits.",
        },
        hint="bytes in flight = latency (s) x bandwidth (bytes/s), for the whole GPU.",
    )


register(
    numeric_exercise(
        id="littles_law_in_flight",
        chapter=CHAPTER,
        title="Little's law: bytes in flight for an H100's HBM",
        question=(
            f"Suppose a load from HBM takes {LATENCY_NS} ns on an H100 SXM. How many bytes must "
            "the whole GPU have requested and not yet received, at every moment, to sustain its "
            "peak HBM bandwidth (gu.specs)?"
        ),
        answer=_in_flight_answer,
    )
)


# --- littles_law_loads_per_thread -------------------------------------------------------------


def _loads_answer() -> NumericAnswer:
    spec = specs.get(GPU)
    expected = latency.loads_per_thread(
        LATENCY_NS * 1e-9, GPU, threads_per_sm=THREADS_PER_SM, bytes_per_load=FLOAT32
    )
    return NumericAnswer(
        expected=expected,
        unit="loads per thread",
        rel_tol=0.02,
        mistakes={
            expected * FLOAT32: "each float32 load brings 4 bytes: divide the bytes by 4.",
            expected * spec.sm_count: (
                "every SM has 2,048 threads: the bytes in flight are shared by "
                f"{spec.sm_count} x 2,048 threads."
            ),
            expected / 4: (
                "that would be float4 loads (16 bytes); the question's loads are float32, "
                "4 bytes each."
            ),
            expected * 32: (
                "count threads, not warps: each of a warp's 32 threads has its own loads in "
                "flight (2,048 threads = 64 warps per SM)."
            ),
        },
        hint=(
            "bytes in flight (latency x bandwidth) / (SMs x threads per SM x bytes per load) "
            "gives the loads each thread keeps in flight."
        ),
    )


register(
    numeric_exercise(
        id="littles_law_loads_per_thread",
        chapter=CHAPTER,
        title="Little's law: independent loads per thread",
        question=(
            f"With the same {LATENCY_NS} ns latency, every SM of the H100 SXM full (2,048 "
            "resident threads each), and each thread loading float32 values (4 bytes), how "
            "many independent loads must each thread keep in flight to sustain the peak HBM "
            "bandwidth?"
        ),
        answer=_loads_answer,
    )
)
