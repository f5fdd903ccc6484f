"""Floating-point number formats of deep learning: range, precision and rounding (chapter 06).

A binary floating-point number is ``(-1)^sign x 1.fraction x 2^(exponent - bias)``: the exponent
bits set the *range* (largest and smallest magnitudes), the fraction ("mantissa") bits set the
*precision* (the relative gap between neighbours). :data:`FORMATS` holds the six formats the course
compares, each with its source; :func:`round_to` rounds real data to any of them in NumPy
(round to nearest, ties to even, as IEEE 754 prescribes for conversions), so a notebook can see
exactly what a cast does to its numbers, including the formats NumPy lacks (tf32, bf16, fp8).

Sources: IEEE 754-2019 (binary32, binary16, subnormals, rounding); NVIDIA A100 Tensor Core GPU
Architecture whitepaper (2020), "TF32" (8 exponent bits, 10 fraction bits); Kalamkar et al.,
"A Study of BFLOAT16 for Deep Learning Training" (2019) for bfloat16; Micikevicius et al., "FP8
Formats for Deep Learning" (2022), Table 1, for E4M3 and E5M2, which NVIDIA Hopper's tensor cores
implement (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022, "FP8").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

__all__ = [
    "FORMATS",
    "NumberFormat",
    "all_values",
    "format_table",
    "get",
    "round_to",
    "spacing",
    "table",
]

_IEEE = "IEEE 754-2019, Table 3.5 (binary interchange formats)"
_TF32 = (
    "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), 'TF32': the range of fp32 "
    "(8 exponent bits) with the precision of fp16 (10 fraction bits); a tensor-core input "
    "format, stored in 32-bit registers"
)
_BF16 = (
    "Kalamkar et al., 'A Study of BFLOAT16 for Deep Learning Training' (2019): fp32's 8 exponent "
    "bits, 7 fraction bits"
)
_FP8 = "Micikevicius et al., 'FP8 Formats for Deep Learning' (2022), Table 1"


@dataclass(frozen=True)
class NumberFormat:
    """One binary floating-point format: its bit layout and what follows from it.

    ``ieee_specials`` is True when the largest exponent code is reserved for infinities and NaNs
    (IEEE 754). E4M3 instead keeps that exponent for ordinary numbers, except the single all-ones
    pattern, which is NaN; it has no infinity and saturates on overflow (:func:`round_to`).
    """

    name: str
    exponent_bits: int
    fraction_bits: int
    ieee_specials: bool
    source: str
    torch_dtype: str | None  # the torch dtype holding it, None when torch has none (tf32)

    @property
    def bits(self) -> int:
        """Storage bits: sign + exponent + fraction (tf32 is stored in 32-bit registers)."""
        return 1 + self.exponent_bits + self.fraction_bits

    @property
    def bias(self) -> int:
        """Exponent bias: stored exponent - bias = the power of two."""
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def min_exponent(self) -> int:
        """Power of two of the smallest normal number (stored exponent 1)."""
        return 1 - self.bias

    @property
    def max_exponent(self) -> int:
        """Power of two of the largest finite numbers."""
        top = 2**self.exponent_bits - 1  # the all-ones exponent code
        return (top - 1 if self.ieee_specials else top) - self.bias

    @property
    def max_finite(self) -> float:
        """Largest finite value: 1.11...1 x 2^max_exponent (E4M3 loses its all-ones fraction to NaN)."""
        ulps = 2**self.fraction_bits - (1 if self.ieee_specials else 2)
        return (1 + ulps / 2**self.fraction_bits) * 2.0**self.max_exponent

    @property
    def min_normal(self) -> float:
        """Smallest positive normal number, 2^min_exponent."""
        return 2.0**self.min_exponent

    @property
    def min_subnormal(self) -> float:
        """Smallest positive number: one unit of the last fraction bit below the normals."""
        return 2.0 ** (self.min_exponent - self.fraction_bits)

    @property
    def epsilon(self) -> float:
        """Gap between 1 and the next larger number, 2^-fraction_bits (relative precision)."""
        return 2.0**-self.fraction_bits

    @property
    def unit_roundoff(self) -> float:
        """Largest relative error of rounding to nearest in the normal range: epsilon / 2."""
        return self.epsilon / 2

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits: log10(2^(fraction_bits + 1))."""
        return (self.fraction_bits + 1) * math.log10(2)

    @property
    def dynamic_range_decades(self) -> float:
        """Decades (powers of ten) between the smallest normal and the largest finite value."""
        return math.log10(self.max_finite / self.min_normal)


FORMATS: Mapping[str, NumberFormat] = MappingProxyType(
    {
        "fp32": NumberFormat("fp32", 8, 23, True, _IEEE + ", binary32", "float32"),
        "tf32": NumberFormat("tf32", 8, 10, True, _TF32, None),
        "fp16": NumberFormat("fp16", 5, 10, True, _IEEE + ", binary16", "float16"),
        "bf16": NumberFormat("bf16", 8, 7, True, _BF16, "bfloat16"),
        "fp8_e4m3": NumberFormat(
            "fp8_e4m3", 4, 3, False, _FP8 + ": no infinities, one NaN pattern", "float8_e4m3fn"
        ),
        "fp8_e5m2": NumberFormat(
            "fp8_e5m2", 5, 2, True, _FP8 + ": IEEE-style special values", "float8_e5m2"
        ),
    }
)


def get(name: str | NumberFormat) -> NumberFormat:
    """The format called ``name`` (one of :data:`FORMATS`), or ``name`` itself if it is one."""
    if isinstance(name, NumberFormat):
        return name
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"no number format {name!r}; known formats: {', '.join(FORMATS)}") from None


def round_to(x, fmt: str | NumberFormat) -> np.ndarray:
    """Round ``x`` to the nearest value of ``fmt`` (ties to even); returns float64 values.

    Magnitudes below half the smallest subnormal become (signed) zero; values past the largest
    finite one become infinity, except in E4M3, which has no infinity: there they saturate to
    +-448, as NVIDIA's ``__nv_cvt_float_to_fp8(..., __NV_SATFINITE, ...)`` and PyTorch 2.13's cast
    do (PyTorch 2.10's cast gives NaN there instead; both seen in tests/test_precision.py).
    (tf32 is rounded to nearest here; hardware that reads fp32 bits as tf32 may truncate instead.)
    """
    f = get(fmt)
    values = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(values) & (values != 0)
    safe = np.where(finite, values, 1.0)
    _, exponent = np.frexp(np.abs(safe))  # |x| = m * 2^exponent with m in [0.5, 1)
    leading = np.maximum(exponent - 1, f.min_exponent)  # subnormals share the smallest exponent
    quantum = np.ldexp(1.0, leading - f.fraction_bits)  # the gap between neighbours there
    rounded = np.round(safe / quantum) * quantum  # np.round rounds ties to even; scaling is exact
    rounded = np.where(finite, rounded, values)
    too_big = np.abs(rounded) > f.max_finite
    overflow = np.copysign(f.max_finite if not f.ieee_specials else np.inf, values)
    rounded = np.where(too_big, overflow, rounded)
    return rounded if rounded.ndim else rounded[()]


def spacing(x, fmt: str | NumberFormat) -> np.ndarray:
    """The gap between ``|x|`` rounded to ``fmt`` and the next larger value of ``fmt``."""
    f = get(fmt)
    magnitude = np.abs(round_to(x, f))
    _, exponent = np.frexp(np.where(magnitude > 0, magnitude, f.min_normal))
    return np.ldexp(1.0, np.maximum(exponent - 1, f.min_exponent) - f.fraction_bits)


def all_values(fmt: str | NumberFormat) -> np.ndarray:
    """Every finite non-negative value of a format of at most 16 bits, ascending."""
    f = get(fmt)
    if f.bits > 16:
        raise ValueError(f"{f.name} has {f.bits} bits: too many values to list; use fp16 or less")
    exponent_codes = np.arange(2**f.exponent_bits)[:, None]
    fractions = np.arange(2**f.fraction_bits)[None, :] / 2**f.fraction_bits
    normal = (1 + fractions) * np.exp2(exponent_codes - f.bias)
    subnormal = fractions * 2.0**f.min_exponent
    values = np.where(exponent_codes == 0, subnormal, normal).ravel()
    return np.unique(values[values <= f.max_finite])


def table(names: list[str] | None = None) -> list[dict[str, object]]:
    """One row per format: bits, layout, largest and smallest values, epsilon and digits."""
    rows = []
    for name in names or list(FORMATS):
        f = get(name)
        rows.append(
            {
                "format": f.name,
                "bits": f.bits,
                "exponent bits": f.exponent_bits,
                "fraction bits": f.fraction_bits,
                "max finite": f.max_finite,
                "min normal": f.min_normal,
                "min subnormal": f.min_subnormal,
                "epsilon": f.epsilon,
                "decimal digits": round(f.decimal_digits, 1),
            }
        )
    return rows


def format_table(names: list[str] | None = None) -> str:
    """:func:`table` as aligned text, for a notebook cell."""
    rows = table(names)
    headers = list(rows[0])
    cells = [[_cell(row[h]) for h in headers] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float) and value.is_integer() and value < 1e6:
        return f"{value:,.0f}"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)
