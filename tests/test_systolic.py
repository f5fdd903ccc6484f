"""gu.systolic: products equal numpy.matmul, cycle counts equal the closed form and hand counts,
the per-cycle update does what its docstring says, and bad input gets a clear error."""

import math

import numpy as np
import pytest

from gpu_utils.one_gpu import systolic

RNG = np.random.default_rng(7)


def random_ints(shape):
    return RNG.integers(-9, 10, size=shape)


# --- products -----------------------------------------------------------------------------------

SHAPES = [
    # (M, K, N, rows, cols): smaller than, equal to, and larger than the array; K and N not
    # multiples of the array's sides; rows != cols; one-cell arrays and one-element matrices.
    (1, 1, 1, 1, 1),
    (1, 1, 1, 4, 4),
    (3, 3, 3, 3, 3),
    (5, 2, 3, 4, 4),
    (4, 7, 5, 3, 2),
    (9, 10, 11, 4, 3),
    (2, 13, 1, 5, 1),
    (6, 1, 17, 1, 5),
    (17, 8, 8, 4, 4),
    (1, 12, 12, 4, 4),
]


@pytest.mark.parametrize("schedule", systolic.SCHEDULES)
@pytest.mark.parametrize("m, k, n, rows, cols", SHAPES)
def test_integer_products_are_exact(m, k, n, rows, cols, schedule):
    a, b = random_ints((m, k)), random_ints((k, n))
    result = systolic.run(a, b, rows=rows, cols=cols, schedule=schedule)
    assert result.product.dtype == np.int64
    np.testing.assert_array_equal(result.product, np.matmul(a, b))


@pytest.mark.parametrize("m, k, n, rows, cols", [(8, 40, 24, 8, 8), (33, 20, 7, 6, 5)])
def test_float_products_match_numpy(m, k, n, rows, cols):
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    result = systolic.run(a, b, rows=rows, cols=cols)
    np.testing.assert_allclose(result.product, np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_many_random_shapes_match_numpy_and_the_formula():
    for _ in range(60):
        m, k, n = (int(x) for x in RNG.integers(1, 10, size=3))
        rows, cols = (int(x) for x in RNG.integers(1, 6, size=2))
        schedule = systolic.SCHEDULES[int(RNG.integers(2))]
        a, b = random_ints((m, k)), random_ints((k, n))
        result = systolic.run(a, b, rows=rows, cols=cols, schedule=schedule)
        np.testing.assert_array_equal(result.product, a @ b)
        assert result.cycles == systolic.cycles(m, k, n, rows, cols, schedule)


def test_inputs_are_not_modified_and_lists_work():
    a, b = [[1, 2], [3, 4]], [[5, 6], [7, 8]]
    result = systolic.run(a, b, rows=2, cols=2)
    np.testing.assert_array_equal(result.product, np.array(a) @ np.array(b))
    assert a == [[1, 2], [3, 4]]


# --- cycle counts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "m, k, n, rows, cols, schedule, by_hand",
    [
        # 1 cycle to load the single weight, 1 to multiply.
        (1, 1, 1, 1, 1, "pipelined", 2),
        # 2x2 array, 3 rows of a: load 2 (cycles 0-1); a[0,0] reaches cell (0,0) at cycle 2;
        # c[2,1] leaves the bottom of column 1 at cycle 2 + 2 + 1 + 1 = 6: 7 cycles.
        (3, 2, 2, 2, 2, "pipelined", 7),
        # 3x3 array, one tile: load 3 + fill 2 + stream 3 + drain 2 = 10.
        (3, 3, 3, 3, 3, "pipelined", 10),
        # Two tiles of K on a 2x2 array, M = 4 >= rows: tile 2 starts 4 cycles after tile 1.
        (4, 4, 2, 2, 2, "pipelined", 2 + 4 + (4 + 2 + 2 - 2)),
        # Same with M = 1 < rows: the next weights need 2 cycles to load, so tiles start 2 apart.
        (1, 4, 2, 2, 2, "pipelined", 2 + 2 + (1 + 2 + 2 - 2)),
        # Sequential: every tile pays load + fill + stream + drain = 2 + 1 + 4 + 1 = 8.
        (4, 4, 2, 2, 2, "sequential", 2 * 8),
        # 4 tiles (2 of K x 2 of N) of a 3x2 array, sequential: 4 x (3 + 2 + 5 + 1) = 44.
        (5, 6, 4, 3, 2, "sequential", 44),
    ],
)
def test_cycle_counts_match_hand_counts(m, k, n, rows, cols, schedule, by_hand):
    assert systolic.cycles(m, k, n, rows, cols, schedule) == by_hand
    result = systolic.run(
        random_ints((m, k)), random_ints((k, n)), rows=rows, cols=cols, schedule=schedule
    )
    assert result.cycles == by_hand


def test_outputs_leave_the_array_when_the_skew_says():
    rows, cols, m = 3, 4, 5
    a, b = random_ints((m, rows)), random_ints((rows, cols))
    result = systolic.run(a, b, rows=rows, cols=cols, record=True)
    assert len(result.frames) == result.cycles
    for frame in result.frames:
        for row, col, value in frame.emitted:
            # loaded in `rows` cycles, row m enters at rows + m, reaches the bottom of column j
            # after rows - 1 more rows and j more columns.
            assert frame.cycle == rows + row + (rows - 1) + col
            assert value == (a @ b)[row, col]
    emitted = [(r, c) for f in result.frames for r, c, _ in f.emitted]
    assert sorted(emitted) == [(r, c) for r in range(m) for c in range(cols)]


@pytest.mark.parametrize("schedule", systolic.SCHEDULES)
def test_busy_cells_add_up_to_the_useful_work(schedule):
    m, k, n, rows, cols = 6, 7, 5, 3, 2
    result = systolic.run(
        random_ints((m, k)),
        random_ints((k, n)),
        rows=rows,
        cols=cols,
        schedule=schedule,
        record=True,
    )
    busy = sum(int(frame.active.sum()) for frame in result.frames)
    assert busy == result.macs == m * k * n
    assert result.utilisation == pytest.approx(busy / (rows * cols * result.cycles))


def test_utilisation_and_traffic_of_a_large_pipelined_run():
    m, k, n, rows, cols = 64, 64, 64, 16, 16
    result = systolic.run(
        RNG.standard_normal((m, k)), RNG.standard_normal((k, n)), rows=rows, cols=cols
    )
    tiles = (k // rows) * (n // cols)
    assert result.tiles == tiles == 16
    assert result.cycles == rows + (tiles - 1) * m + m + rows + cols - 2
    assert result.utilisation == pytest.approx(m * k * n / (rows * cols * result.cycles))
    assert result.utilisation > 0.9  # fill and drain are paid once, not once per tile
    assert result.weight_words == k * n  # every weight loaded exactly once
    assert result.activation_words == m * k * (n // cols)  # a re-read once per column of tiles
    assert "16 weight tiles" in str(result)


def test_pipelining_beats_sequential_and_small_batches_waste_the_array():
    seq = systolic.cycles(8, 512, 512, 128, 128, "sequential")
    pipe = systolic.cycles(8, 512, 512, 128, 128, "pipelined")
    assert pipe < seq
    # Batch 8 on a 128-row array: a new tile only every max(8, 128) = 128 cycles.
    assert pipe == 128 + 15 * 128 + 8 + 254


# --- the per-cycle update ---------------------------------------------------------------------


def test_step_moves_activations_right_and_partial_sums_down():
    weights = np.arange(6.0).reshape(2, 3) + 1
    acts = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    psums = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    a_in = np.array([7.0, 8.0])
    before = (weights.copy(), acts.copy(), psums.copy(), a_in.copy())
    new_acts, new_psums = systolic.step(weights, acts, psums, a_in)
    np.testing.assert_array_equal(new_acts, [[7, 10, 20], [8, 40, 50]])
    left = new_acts
    above = np.array([[0, 0, 0], [1, 2, 3]])
    np.testing.assert_array_equal(new_psums, above + left * weights)
    for original, now in zip(before, (weights, acts, psums, a_in), strict=True):
        np.testing.assert_array_equal(original, now)


def test_run_uses_the_step_it_is_given():
    calls = []

    def counting_step(weights, acts, psums, a_in):
        calls.append(1)
        return systolic.step(weights, acts, psums, a_in)

    result = systolic.run(
        random_ints((3, 2)), random_ints((2, 2)), rows=2, cols=2, step=counting_step
    )
    assert len(calls) == result.cycles


def test_a_step_that_returns_the_wrong_thing_gets_a_clear_error():
    with pytest.raises(TypeError, match="return new_acts, new_psums"):
        systolic.run(np.ones((2, 2)), np.ones((2, 2)), rows=2, cols=2, step=lambda *args: None)
    with pytest.raises(ValueError, match="must have the array's shape"):
        systolic.run(
            np.ones((2, 2)),
            np.ones((2, 2)),
            rows=2,
            cols=2,
            step=lambda w, a, p, x: (a[:1], p),
        )


# --- tiling -------------------------------------------------------------------------------------


@pytest.mark.parametrize("m, k, n, rows, cols", [(5, 7, 6, 3, 4), (4, 8, 8, 4, 4), (3, 2, 3, 4, 4)])
def test_tile_matmul_with_the_simulated_array(m, k, n, rows, cols):
    a, b = random_ints((m, k)), random_ints((k, n))
    shapes = []

    def tile_product(a_block, w_tile):
        shapes.append((a_block.shape, w_tile.shape))
        return systolic.matmul_tile(a_block, w_tile)

    np.testing.assert_array_equal(systolic.tile_matmul(a, b, rows, cols, tile_product), a @ b)
    assert len(shapes) == math.ceil(k / rows) * math.ceil(n / cols)
    assert set(shapes) == {((m, rows), (rows, cols))}


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, kwargs, message",
    [
        (np.ones((2, 3)), np.ones((2, 3)), {}, "inner sizes must match"),
        (np.ones(3), np.ones((3, 2)), {}, "must be a 2-D matrix"),
        (np.ones((2, 0)), np.ones((0, 2)), {}, "every dimension must be at least 1"),
        (np.array([["x"]]), np.ones((1, 1)), {}, "must hold real numbers"),
        (np.ones((2, 2), dtype=complex), np.ones((2, 2)), {}, "must hold real numbers"),
        (np.ones((2, 2)), np.ones((2, 2)), {"rows": 0}, "rows must be a positive whole number"),
        (np.ones((2, 2)), np.ones((2, 2)), {"cols": 2.5}, "cols must be a positive whole number"),
        (np.ones((2, 2)), np.ones((2, 2)), {"rows": True}, "rows must be a positive whole"),
        (np.ones((2, 2)), np.ones((2, 2)), {"rows": 1024}, "larger than this simulator allows"),
        (np.ones((2, 2)), np.ones((2, 2)), {"schedule": "overlapped"}, "use one of 'pipelined'"),
        (np.ones((4096, 512)), np.ones((512, 512)), {"rows": 64, "cols": 64}, "too slow"),
    ],
)
def test_bad_input_gets_a_clear_error(a, b, kwargs, message):
    arguments = {"rows": 2, "cols": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        systolic.run(a, b, **arguments)


def test_cycles_validates_its_arguments():
    with pytest.raises(ValueError, match="m must be a positive whole number"):
        systolic.cycles(0, 1, 1, 1, 1)


# --- animation ----------------------------------------------------------------------------------


def test_animation_of_a_small_case_is_small():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    anim = systolic.animate(random_ints((2, 2)), random_ints((2, 2)), rows=2, cols=2)
    html = anim.to_jshtml()
    assert "<img" in html or "frames" in html
    assert len(html) < 400_000
    with pytest.raises(ValueError, match="one weight tile on a small array"):
        systolic.animate(random_ints((2, 5)), random_ints((5, 2)), rows=2, cols=2)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 3, 3), (4, 7, 2), (2, 5, 6)])
def test_output_stationary_array_multiplies_in_k_plus_m_plus_n_minus_2_cycles(m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.integers(-9, 10, (m, k))
    b = rng.integers(-9, 10, (k, n))
    product, clocks = systolic.output_stationary(a, b)
    assert np.array_equal(product, a @ b)
    assert clocks == k + m + n - 2


def test_output_stationary_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="inner sizes must agree"):
        systolic.output_stationary(np.ones((2, 3)), np.ones((4, 2)))
