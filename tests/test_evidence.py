"""Unit tests of gpu_utils.exercises._evidence: each finder on arrays whose mistake is known."""

import numpy as np
import pytest

from gpu_utils.exercises import _evidence as ev

RNG = np.random.default_rng(0)
WANT = RNG.standard_normal((6, 10)) + 3.0


def test_correct_answer_has_no_region_and_no_relation():
    region = ev.find_region(WANT.copy(), WANT)
    assert region.correct and region.n_wrong == 0
    assert ev.find_relation(WANT.copy(), WANT) is None


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="reshape"):
        ev.wrong_mask(WANT[:3], WANT)


def test_region_rows_columns_and_last_partial_block():
    got = WANT.copy()
    got[:, 8:] += 1.0  # block 4 along 10 columns: blocks 0-3, 4-7, 8-9
    region = ev.find_region(got, WANT, block=4)
    assert region.columns == (8, 9) and region.all_rows
    assert region.blocks == (2,) and region.only_last_block
    full = WANT.copy()
    full[:, 4:8] += 1.0
    assert not ev.find_region(full, WANT, block=4).only_last_block


def test_unwritten_poison_and_nonfinite():
    got = WANT.copy()
    got[2] = np.nan
    region = ev.find_region(got, WANT)
    assert region.unwritten == 10 and region.rows == (2,)
    assert ev.find_relation(got, WANT).kind == "unwritten"
    poisoned = np.zeros_like(WANT, bool)
    got[2] = np.inf
    assert ev.find_region(got, WANT, poisoned=poisoned).nonfinite == 10
    assert ev.find_relation(got, WANT, poisoned=poisoned).kind == "nonfinite"


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda w: w * 2.5, "constant_factor"),
        (lambda w: w * 1.024**2, "unit_factor"),
        (lambda w: w * np.arange(1, 7)[:, None], "row_factor"),
        (lambda w: w * np.arange(1, 11)[None, :], "column_factor"),
        (lambda w: w + 0.5, "offset"),
        (lambda w: w + np.arange(6)[:, None] * 0.25, "row_offset"),
        (lambda w: np.where(np.arange(6)[:, None] == 3, 0.0, w), "zeros"),
        (lambda w: np.concatenate([w[:, 1:], w[:, :1]], axis=1), "shift"),
    ],
)
def test_relation_kinds(make, kind):
    relation = ev.find_relation(make(WANT), WANT)
    assert relation is not None and relation.kind == kind, relation
    assert relation.describe()


def test_unit_factor_exponent_and_constant_value():
    assert ev.find_relation(WANT / 1.024**3, WANT).value == -3
    assert ev.find_relation(WANT * 2.5, WANT).value == pytest.approx(2.5)


def test_shift_direction_and_axis():
    got = np.roll(WANT, 1, axis=0)
    relation = ev.find_relation(got, WANT)
    assert relation.kind == "shift" and relation.axis == 0 and relation.value == 1


def test_transpose_and_other_row():
    square = RNG.standard_normal((5, 5))
    assert ev.find_relation(square.T.copy(), square).kind == "transpose"
    got = WANT.copy()
    got[4] = WANT[1]
    relation = ev.find_relation(got, WANT)
    assert relation.kind == "other_row" and relation.values == (1.0,) and relation.subset


def test_factor_on_the_wrong_rows_only():
    got = WANT.copy()
    got[3:] *= 0.5
    relation = ev.find_relation(got, WANT)
    assert relation.kind in ("row_factor", "constant_factor")
    if relation.kind == "constant_factor":
        assert relation.subset and relation.value == pytest.approx(0.5)


def test_candidates_partial_sum():
    parts = RNG.standard_normal((3, 8))
    want = parts.sum(axis=0)
    got = parts[:2].sum(axis=0)
    candidates = {"the last block left out": parts[:2].sum(axis=0)}
    relation = ev.find_relation(got, want, candidates=candidates)
    assert relation.kind == "candidate" and relation.name == "the last block left out"
    assert ev.match_candidates(want, candidates) is None


def test_nothing_found_for_noise():
    assert ev.find_relation(RNG.standard_normal(WANT.shape), WANT) is None


def test_nondeterministic_and_gather():
    a = WANT.copy()
    b = WANT.copy()
    b[0, 0] += 1e-3
    assert ev.nondeterministic(a, b).sum() == 1
    evidence = ev.gather(WANT * 2.0, WANT, inputs={"rows": 6}, lines=((3, "x = y"),))
    assert evidence.relation.kind == "constant_factor" and evidence.region.everywhere
    assert evidence.inputs["rows"] == 6 and evidence.lines == ((3, "x = y"),)
    got = WANT.copy()
    got[:, 2] = 0.0
    assert (
        ev.find_region(got, WANT).describe()
        == "6 of 60 elements are wrong in rows 0-5 and columns 2"
    )


def test_nearest_candidate_for_rounding_mistakes():
    x = RNG.uniform(-1, 1, 200).astype(np.float32)
    want = x.astype(np.float64) * 3.0
    got = x.astype(np.float16).astype(np.float64) * 3.0  # rounded like a float16 cast
    candidates = {"float16": got + 1e-9, "bfloat16": want * 1.01}
    assert ev.nearest_candidate(got, want, candidates) == "float16"
    assert ev.nearest_candidate(want + 1e-3, want, candidates) is None  # nothing explains it


def test_describe_indices():
    assert ev.describe_indices([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert ev.describe_indices([]) == "none"
    assert ev.describe_indices(range(0, 20, 2)).endswith(", ...")


def test_power_of_a_per_row_quantity():
    variance = RNG.uniform(0.5, 2.0, 8)
    assert ev.power_of(variance**-1.0, variance) == pytest.approx(-1.0)
    assert ev.power_of(variance**-0.25, variance) == pytest.approx(-0.25)
    assert ev.power_of(np.ones(8), variance) == pytest.approx(0.0)
    assert ev.power_of(2.0 * variance**-0.5, variance) is None  # a constant factor too
    assert ev.power_of(variance**-1.0, np.full(8, 1.3)) is None  # no spread to tell
    assert ev.power_of(-variance, variance) is None


def test_affine_fit_per_column_and_per_row():
    base = RNG.standard_normal((7, 5))
    p, q = RNG.uniform(0.5, 1.5, 5), RNG.uniform(-0.5, 0.5, 5)
    fit = ev.affine_fit(base * q + p, base, axis=0)  # weight and bias swapped: xhat * b + w
    assert fit is not None
    assert np.allclose(fit[0], q) and np.allclose(fit[1], p)
    shift = RNG.uniform(-1, 1, (7, 1))  # per row: the same base plus a constant of its own
    fit = ev.affine_fit(base + shift, base, axis=1)
    assert fit is not None
    assert np.allclose(fit[0], 1.0) and np.allclose(fit[1], shift[:, 0])
    assert ev.affine_fit(base**2, base, axis=0) is None  # not a line
    assert ev.affine_fit(base[:2], base[:2], axis=0) is None  # two points fit any line
    assert ev.affine_fit(np.ones((4, 3)), np.ones((4, 3))) is None  # no spread to fit on


def test_block_factors_of_a_row_in_blocks():
    want = RNG.uniform(0.1, 1.0, (3, 10))
    factors = np.array([[2.0, 1.5, 1.0], [3.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    got = want * np.repeat(factors, [4, 4, 2], axis=1)  # blocks of 4: 0-3, 4-7, 8-9
    assert np.allclose(ev.block_factors(got, want, 4), factors)
    got[0, 1] += 0.5  # one element off its block's factor
    assert ev.block_factors(got, want, 4) is None
