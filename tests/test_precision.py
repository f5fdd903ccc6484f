"""gu.precision: the formats' figures follow from their bit layouts, and rounding matches real
casts (NumPy for fp16, PyTorch for bf16 and both fp8 formats), special values included."""

import numpy as np
import pytest
import torch

from gpu_utils.one_gpu import precision

TORCH_FORMATS = [name for name, f in precision.FORMATS.items() if f.torch_dtype]


def _torch_dtype(name):
    return getattr(torch, precision.get(name).torch_dtype)


def _awkward_values(seed=0):
    """Magnitudes from 1e-45 to 1e38, signs, ties, special values and each format's edges."""
    rng = np.random.default_rng(seed)
    spread = rng.standard_normal(20_000) * 10.0 ** rng.uniform(-45, 37.5, 20_000)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 1 + 2**-11, 1 + 3 * 2**-11, 2**-25]
    for f in precision.FORMATS.values():
        for v in (f.max_finite, f.min_normal, f.min_subnormal, f.min_subnormal / 2):
            edges += [v, -v, v * (1 + 2**-20), v * (1 - 2**-20)]
    with np.errstate(over="ignore"):  # fp32's largest value nudged up becomes inf: fine
        return np.concatenate([spread, edges]).astype(np.float32)


@pytest.mark.parametrize("name", TORCH_FORMATS)
def test_figures_match_torch_finfo(name):
    f, info = precision.get(name), torch.finfo(_torch_dtype(name))
    assert f.max_finite == info.max
    assert f.min_normal == info.smallest_normal
    assert f.epsilon == info.eps
    assert f.bits == info.bits


def test_textbook_figures():
    assert precision.get("fp16").max_finite == 65504
    assert precision.get("fp8_e4m3").max_finite == 448
    assert precision.get("fp8_e5m2").max_finite == 57344
    assert precision.get("fp16").min_subnormal == 2.0**-24
    assert precision.get("tf32").epsilon == precision.get("fp16").epsilon
    assert precision.get("tf32").max_exponent == precision.get("fp32").max_exponent == 127


def _e4m3_cast_gives_nan_past_448():
    """True on a PyTorch whose cast to float8_e4m3fn turns values past 448 into NaN (2.10 does;
    2.13 saturates to 448, as round_to and NVIDIA's satfinite conversion do)."""
    return bool(torch.tensor([1e4]).to(torch.float8_e4m3fn).float().isnan().item())


@pytest.mark.parametrize("name", TORCH_FORMATS)
def test_round_to_matches_a_real_cast(name):
    x = _awkward_values()
    expected = torch.from_numpy(x).to(_torch_dtype(name)).double().numpy()
    got = precision.round_to(x, name)
    if name == "fp8_e4m3" and _e4m3_cast_gives_nan_past_448():
        past = np.isnan(expected) & ~np.isnan(x)  # finite or infinite inputs past the range
        assert (np.abs(x[past]) > 448).all() and (got[past] == np.copysign(448, x[past])).all()
        expected = np.where(past, got, expected)
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), f"{name}: first differences at {x[~same][:3]}: {got[~same][:3]}"
    assert (np.signbit(got) == np.signbit(expected))[~np.isnan(got)].all()


def test_round_to_fp16_agrees_with_numpy():
    x = _awkward_values(seed=1)
    with np.errstate(over="ignore"):  # NumPy warns when a cast overflows to infinity
        expected = x.astype(np.float16)
    np.testing.assert_array_equal(precision.round_to(x, "fp16"), expected)


def test_tf32_keeps_ten_fraction_bits_with_ties_to_even():
    one_ulp = 2.0**-10
    assert precision.round_to(1 + one_ulp / 2, "tf32") == 1.0  # tie: to even (1.0)
    assert precision.round_to(1 + 3 * one_ulp / 2, "tf32") == 1 + 2 * one_ulp  # tie: to even
    assert precision.round_to(1 + 0.51 * one_ulp, "tf32") == 1 + one_ulp
    assert precision.round_to(1e38, "tf32") != np.inf  # fp32's range


def test_overflow_gives_infinity_except_in_e4m3_which_saturates():
    assert precision.round_to(70_000.0, "fp16") == np.inf
    assert precision.round_to(-70_000.0, "fp8_e5m2") == -np.inf
    assert precision.round_to(70_000.0, "bf16") == 70_144.0
    assert precision.round_to(1000.0, "fp8_e4m3") == 448.0
    assert precision.round_to(-np.inf, "fp8_e4m3") == -448.0


def test_scalars_stay_scalars_and_arrays_keep_their_shape():
    assert np.ndim(precision.round_to(0.1, "bf16")) == 0
    assert precision.round_to(np.ones((2, 3)), "fp16").shape == (2, 3)


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2"])
def test_all_values_are_exactly_the_representable_ones(name):
    values = precision.all_values(name)
    assert np.array_equal(precision.round_to(values, name), values)
    dtype = _torch_dtype(name)
    codes = torch.arange(2 ** (8 * torch.finfo(dtype).bits // 8), dtype=torch.int32)
    storage = torch.uint8 if torch.finfo(dtype).bits == 8 else torch.int16
    decoded = codes.to(storage).view(dtype).double().numpy()
    expected = np.unique(decoded[np.isfinite(decoded) & (decoded >= 0)])
    np.testing.assert_array_equal(values, expected)


def test_spacing_is_epsilon_at_one_and_constant_among_subnormals():
    for f in precision.FORMATS.values():
        assert precision.spacing(1.0, f) == f.epsilon
        assert precision.spacing(f.min_subnormal, f) == f.min_subnormal
        assert precision.spacing(f.min_normal, f) == f.min_subnormal


def test_relative_rounding_error_is_at_most_the_unit_roundoff_in_the_normal_range():
    rng = np.random.default_rng(2)
    for f in precision.FORMATS.values():
        x = rng.uniform(1, 2, 10_000) * 2.0 ** rng.integers(f.min_exponent, f.max_exponent, 10_000)
        error = np.abs(precision.round_to(x, f) - x) / x
        assert error.max() <= f.unit_roundoff
        assert error.max() > f.unit_roundoff / 2  # and the bound is nearly reached


def test_table_lists_every_format_and_unknown_names_say_which_exist():
    assert [row["format"] for row in precision.table()] == list(precision.FORMATS)
    assert "65,504" in precision.format_table(["fp16"])
    with pytest.raises(KeyError, match="known formats: fp32"):
        precision.get("fp4")
    with pytest.raises(ValueError, match="too many values"):
        precision.all_values("fp32")
