"""Exercises of lab 01, why GPUs (chapter 01): model memory, fitting on a GPU, streaming weights
from HBM, and counting the bytes and FLOPs of the two operations the chapter measures.

Units follow ``gu.specs``: memory capacities are binary (1 GiB = 2**30 bytes; a datasheet's
"80 GB" of HBM is 80 GiB), rates are decimal (1 TB/s = 1e12 bytes/s)."""

from __future__ import annotations

import math

from ..facts import specs
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import register

CHAPTER = "01_why_gpus"
GIB = 2**30  # memory capacities, as gu.specs and the driver count them
GB = 1e9  # decimal: what a learner gets by dividing by 1e9 instead


# --- weights_70b_bf16 -------------------------------------------------------------------------

_PARAMS_70B = 70e9

register(
    numeric_exercise(
        id="weights_70b_bf16",
        chapter=CHAPTER,
        title="Memory for the weights of a 70B-parameter model in bf16",
        question=(
            "How many GiB (1 GiB = 2**30 bytes) do the weights of a 70e9-parameter model take "
            "in bf16?"
        ),
        answer=NumericAnswer(
            expected=_PARAMS_70B * 2 / GIB,
            unit="GiB",
            mistakes={
                _PARAMS_70B
                * 16
                / GIB: "bf16 is 16 bits, which is 2 bytes per parameter: you counted bits.",
                _PARAMS_70B * 4 / GIB: "that is fp32 (4 bytes per parameter); bf16 takes 2 bytes.",
                _PARAMS_70B * 1 / GIB: "that is int8 (1 byte per parameter); bf16 takes 2 bytes.",
                _PARAMS_70B * 2 / GB: (
                    "that is in decimal GB (1e9 bytes). Memory is counted in GiB (2**30 bytes, "
                    "7% more): a GPU's '80 GB' is 80 GiB. Divide the bytes by 2**30."
                ),
                _PARAMS_70B * 2 / 2**20: "that is in MiB (2**20 bytes); divide the bytes by 2**30.",
                _PARAMS_70B * 2: "that is in bytes; divide by 2**30 to get GiB.",
            },
            hint="multiply parameters by bytes per parameter (bf16: 2), then divide by 2**30.",
        ),
    )
)


# --- h100s_for_70b_bf16 -----------------------------------------------------------------------


def _h100s_answer() -> NumericAnswer:
    memory = specs.get("H100-SXM").hbm_bytes
    weights = _PARAMS_70B * 2
    return NumericAnswer(
        expected=math.ceil(weights / memory),
        unit="GPUs",
        rel_tol=0.01,
        mistakes={
            weights / memory: (
                "a GPU comes whole: round the ratio up (math.ceil), since the last GPU holds "
                "only part of the weights."
            ),
            weights / (memory / GIB * GB): (
                "a GPU comes whole: round the ratio up (math.ceil). Also, an H100 holds "
                f"{memory / GIB:.0f} GiB = {memory / GIB:.0f} x 2**30 bytes, not "
                f"{memory / GIB:.0f}e9: take gu.specs.get('H100-SXM').hbm_bytes."
            ),
            math.floor(weights / memory): (
                f"rounding down leaves weights without a GPU: {weights / GIB:.0f} GiB do not fit "
                f"in {math.floor(weights / memory) * memory / GIB:.0f} GiB. Round up with "
                "math.ceil."
            ),
            math.ceil(_PARAMS_70B * 4 / memory): (
                "that is for fp32 weights (4 bytes per parameter); bf16 takes 2."
            ),
            _PARAMS_70B * 4 / memory: "that is for fp32 weights, and a GPU comes whole: round up.",
        },
        hint=(
            "divide the weights' bytes (70e9 x 2) by one H100's memory in bytes, "
            "gu.specs.get('H100-SXM').hbm_bytes (80 GiB = 80 x 2**30), and round up."
        ),
    )


register(
    numeric_exercise(
        id="h100s_for_70b_bf16",
        chapter=CHAPTER,
        title="How many H100s hold a 70B model's bf16 weights",
        question=(
            "How many H100-SXM GPUs (memory from gu.specs) are needed just to hold the bf16 "
            "weights of a 70e9-parameter model? (Weights only, no activations or KV cache.)"
        ),
        answer=_h100s_answer,
    )
)


# --- stream_7b_bf16_h100_ms -------------------------------------------------------------------

_PARAMS_7B = 7e9


def _stream_answer() -> NumericAnswer:
    bandwidth = specs.get("H100-SXM").hbm_bandwidth
    weights = _PARAMS_7B * 2
    return NumericAnswer(
        expected=weights / bandwidth * 1e3,
        unit="ms",
        rel_tol=0.02,
        mistakes={
            _PARAMS_7B * 16 / bandwidth * 1e3: "bf16 is 2 bytes per parameter; you counted bits.",
            _PARAMS_7B * 4 / bandwidth * 1e3: "that is for fp32 weights; bf16 takes 2 bytes each.",
            weights / bandwidth: "that is in seconds; the question asks for milliseconds (x 1e3).",
            weights / (bandwidth / 1e3) * 1e3: (
                "3.35 TB/s is 3.35e12 bytes per second; you used a bandwidth 1000x too small."
            ),
        },
        hint=(
            "time = bytes / (bytes per second): 7e9 x 2 bytes divided by "
            "gu.specs.get('H100-SXM').hbm_bandwidth, times 1e3 for ms."
        ),
    )


register(
    numeric_exercise(
        id="stream_7b_bf16_h100_ms",
        chapter=CHAPTER,
        title="Time to read a 7B model's weights once from HBM",
        question=(
            "At the H100-SXM's peak memory bandwidth (gu.specs), how many milliseconds does it "
            "take to read every bf16 weight of a 7e9-parameter model once?"
        ),
        answer=_stream_answer,
    )
)


# --- matmul_flops_4096 ------------------------------------------------------------------------

_N = 4096

register(
    numeric_exercise(
        id="matmul_flops_4096",
        chapter=CHAPTER,
        title="FLOPs of a 4096 x 4096 matrix product",
        question=(
            "How many floating-point operations does C = A @ B take for 4096 x 4096 matrices, "
            "counting each multiply and each add as one?"
        ),
        answer=NumericAnswer(
            expected=2 * _N**3,
            unit="FLOP",
            mistakes={
                float(_N**3): (
                    "each of the n x n x n multiply-adds is two operations, a multiply and an "
                    "add: 2 n^3."
                ),
                2.0 * _N**2: (
                    "each of the n^2 outputs is a dot product of length n, which takes n "
                    "multiplies and n adds: 2 n^3 in all."
                ),
                float(_N**2): "that counts outputs; each is a dot product of length n (2n FLOPs).",
            },
            hint="n^2 outputs, each a dot product of length n: n multiplies and n adds.",
        ),
    )
)


# --- add_bytes_1e8 ----------------------------------------------------------------------------

_ELEMENTS = 1e8

register(
    numeric_exercise(
        id="add_bytes_1e8",
        chapter=CHAPTER,
        title="Bytes moved by an elementwise add",
        question=(
            "How many bytes does out = x + y move between memory and the processor for float32 "
            "vectors of 1e8 elements (each array read or written once)?"
        ),
        answer=NumericAnswer(
            expected=3 * _ELEMENTS * 4,
            unit="bytes",
            mistakes={
                2 * _ELEMENTS * 4: "you counted the two inputs; writing `out` moves bytes too.",
                _ELEMENTS * 4: "three arrays move: x and y are read and out is written.",
                3 * _ELEMENTS: "that counts elements; a float32 element is 4 bytes.",
                3 * _ELEMENTS * 8: "float32 is 4 bytes per element (8 is float64).",
            },
            hint="three arrays (two read, one written) of 1e8 elements, 4 bytes each.",
        ),
    )
)
