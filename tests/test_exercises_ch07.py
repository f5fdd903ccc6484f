"""Checkers of lab 07: correct answers written differently from the solutions pass; common
mistakes fail with their own hint; stubs are 'not attempted yet'."""

import numpy as np
import pytest

import gpu_utils as gu

check = gu.exercises.check

# --- systolic_step ----------------------------------------------------------------------------


def step_with_loops(weights, acts, psums, a_in):  # correct: cell by cell, from old registers
    rows, cols = weights.shape
    new_acts = np.zeros((rows, cols))
    new_psums = np.zeros((rows, cols))
    for i in range(rows):
        for j in range(cols):
            left = a_in[i] if j == 0 else acts[i, j - 1]
            above = 0.0 if i == 0 else psums[i - 1, j]
            new_acts[i, j] = left
            new_psums[i, j] = above + left * weights[i, j]
    return new_acts, new_psums


def step_with_concatenate(weights, acts, psums, a_in):  # correct: whole-array shifts
    left = np.concatenate([a_in[:, None], acts[:, :-1]], axis=1)
    above = np.concatenate([np.zeros((1, psums.shape[1])), psums[:-1]], axis=0)
    return left, above + left * weights


def _left(acts, a_in):
    return np.concatenate([a_in[:, None], acts[:, :-1]], axis=1)


def _above(psums):
    return np.concatenate([np.zeros((1, psums.shape[1])), psums[:-1]], axis=0)


def step_activations_stay(weights, acts, psums, a_in):
    left = _left(acts, a_in)
    return acts.copy(), _above(psums) + left * weights


def step_rolls_activations(weights, acts, psums, a_in):
    left = np.roll(acts, 1, axis=1)
    return left, _above(psums) + left * weights


def step_rolls_partial_sums(weights, acts, psums, a_in):
    left = _left(acts, a_in)
    return left, np.roll(psums, 1, axis=0) + left * weights


def step_partial_sums_stay(weights, acts, psums, a_in):  # an output-stationary cell
    left = _left(acts, a_in)
    return left, psums + left * weights


def step_uses_old_activation(weights, acts, psums, a_in):
    return _left(acts, a_in), _above(psums) + acts * weights


def step_forgets_weight(weights, acts, psums, a_in):
    left = _left(acts, a_in)
    return left, _above(psums) + left


def step_returns_a_list(weights, acts, psums, a_in):
    left = _left(acts, a_in)
    return [left, _above(psums) + left * weights]


def step_wrong_shape(weights, acts, psums, a_in):
    left = _left(acts, a_in)
    return left[:, 1:], _above(psums) + left * weights


def step_raises(weights, acts, psums, a_in):
    return weights @ acts  # shapes do not match


@pytest.mark.parametrize("step", [step_with_loops, step_with_concatenate, gu.systolic.step])
def test_step_accepts_correct_steps(step):
    result = check("systolic_step", step)
    assert result.passed, result.message
    assert "whole products match a @ b" in result.message


@pytest.mark.parametrize(
    "step, hint",
    [
        (step_activations_stay, "the activations did not move"),
        (step_rolls_activations, "column 0 received the last column's activations"),
        (step_rolls_partial_sums, "row 0 received the bottom row's partial sums"),
        (step_partial_sums_stay, "your partial sums stayed in their cells"),
        (step_uses_old_activation, "not the one the cell latched last cycle"),
        (step_forgets_weight, "multiply the activation by the cell's weight"),
        (step_returns_a_list, "not a pair (new_acts, new_psums)"),
        (step_wrong_shape, "it must have the array's shape (3, 4)"),
        (step_raises, "your step raised ValueError"),
    ],
)
def test_step_rejects_mistakes_with_their_hint(step, hint):
    result = check("systolic_step", step)
    assert not result.passed
    assert hint in result.message, result.message


# --- systolic_tiling --------------------------------------------------------------------------


def tiling_by_blocks(a, b, rows, cols, tile_product):  # correct: pad everything up front
    m, k = a.shape
    n = b.shape[1]
    kt, nt = -(-k // rows), -(-n // cols)
    a_pad = np.pad(a, ((0, 0), (0, kt * rows - k)))
    b_pad = np.pad(b, ((0, kt * rows - k), (0, nt * cols - n)))
    out = np.zeros((m, nt * cols))
    for p in range(kt):
        for q in range(nt):
            block = a_pad[:, p * rows : (p + 1) * rows]
            tile = b_pad[p * rows : (p + 1) * rows, q * cols : (q + 1) * cols]
            out[:, q * cols : (q + 1) * cols] += tile_product(block, tile)
    return out[:, :n]


def _padded(x, shape):
    out = np.zeros(shape)
    out[: x.shape[0], : x.shape[1]] = x
    return out


def tiling_without_padding(a, b, rows, cols, tile_product):
    m, n = a.shape[0], b.shape[1]
    out = np.zeros((m, n))
    for k0 in range(0, a.shape[1], rows):
        for n0 in range(0, n, cols):
            out[:, n0 : n0 + cols] += tile_product(
                a[:, k0 : k0 + rows], b[k0 : k0 + rows, n0 : n0 + cols]
            )
    return out


def tiling_assigns(a, b, rows, cols, tile_product):
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n))
    for n0 in range(0, n, cols):
        for k0 in range(0, k, rows):
            w = _padded(b[k0 : k0 + rows, n0 : n0 + cols], (rows, cols))
            x = _padded(a[:, k0 : k0 + rows], (m, rows))
            out[:, n0 : n0 + cols] = tile_product(x, w)[:, : min(cols, n - n0)]
    return out


def tiling_whole_tiles_only(a, b, rows, cols, tile_product):
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n))
    for p in range(k // rows):
        for q in range(n // cols):
            w = b[p * rows : (p + 1) * rows, q * cols : (q + 1) * cols]
            out[:, q * cols : (q + 1) * cols] += tile_product(a[:, p * rows : (p + 1) * rows], w)
    return out


def tiling_swaps_rows_and_cols(a, b, rows, cols, tile_product):
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n))
    for k0 in range(0, k, cols):
        for n0 in range(0, n, rows):
            w = _padded(b[k0 : k0 + cols, n0 : n0 + rows], (cols, rows))
            x = _padded(a[:, k0 : k0 + cols], (m, cols))
            out[:, n0 : n0 + rows] += tile_product(x, w)[:, : min(rows, n - n0)]
    return out


def tiling_not_at_all(a, b, rows, cols, tile_product):
    return tile_product(a, b)


def tiling_keeps_padding(a, b, rows, cols, tile_product):
    m, k = a.shape
    n = b.shape[1]
    kt, nt = -(-k // rows), -(-n // cols)
    out = np.zeros((m, nt * cols))
    for p in range(kt):
        for q in range(nt):
            w = _padded(b[p * rows : (p + 1) * rows, q * cols : (q + 1) * cols], (rows, cols))
            x = _padded(a[:, p * rows : (p + 1) * rows], (m, rows))
            out[:, q * cols : (q + 1) * cols] += tile_product(x, w)
    return out


def tiling_returns_nothing(a, b, rows, cols, tile_product):
    tiling_by_blocks(a, b, rows, cols, tile_product)


@pytest.mark.parametrize("function", [tiling_by_blocks, gu.systolic.tile_matmul])
def test_tiling_accepts_correct_functions(function):
    result = check("systolic_tiling", function)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "function, hint",
    [
        (tiling_without_padding, "pad it with zeros to the full size"),
        (tiling_assigns, "must be added (`out[...] += ...`), not assigned"),
        (tiling_whole_tiles_only, "only whole tiles were multiplied"),
        (tiling_swaps_rows_and_cols, "K is cut into chunks of `rows`"),
        (tiling_not_at_all, "you passed all of b"),
        (tiling_keeps_padding, "cut the zero padding off the output"),
        (tiling_returns_nothing, "return the output"),
    ],
)
def test_tiling_rejects_mistakes_with_their_hint(function, hint):
    result = check("systolic_tiling", function)
    assert not result.passed
    assert hint in result.message, result.message


# --- numbers ----------------------------------------------------------------------------------

NUMERIC = {
    # exercise: (a correct calculation written out, [(a wrong answer, its hint), ...])
    "systolic_cycles_one_tile": (
        lambda: 8 + (8 - 1) + 20 + (8 - 1),
        [
            (20, "that is only the streaming"),
            (20 + 8 + 8 - 2, "loading them takes `rows` cycles"),
            (8 + 20 + 8 + 8, "fill takes rows - 1 cycles and drain cols - 1"),
            (8 + 20, "the skew still has to fill"),
        ],
    ),
    "systolic_utilisation_batch8": (
        lambda: 8 * 256 * 256 / (256 * 256 * max(8, 256)),
        [
            (3.125, "not a percentage"),
            (1.0, "the cells are not busy all the time"),
            (8 / (8 + 2 * 256 + 256 - 2), "that is the sequential schedule"),
            (8 / 65536, "every cell is busy M cycles"),
        ],
    ),
    "ridge_point_tpu_v5e": (
        lambda: (
            gu.processors.get("TPU-v5e").bf16_flops / gu.processors.get("TPU-v5e").hbm_bandwidth
        ),
        [
            (819e9 / 197e12, "peak FLOP/s divided by bytes/s"),
            (197e12 / (8 * 819e9), "no factor of 8"),
            (393e12 / 819e9, "use the bf16 peak"),
            (197e12 / (800 * 2**30), "use 819 GB/s"),
        ],
    ),
    "ridge_point_xeon_fp32": (
        lambda: 56 * 2.0e9 * 2 * 16 * 2 / (8 * 4800e6 * 8),
        [
            (7.168e12 / 56 / 307.2e9, "the peak is for the whole socket"),
            (114.688e12 / 307.2e9, "not the bf16 matrix units (AMX)"),
            (7.168e12 / 2 / 307.2e9, "count both FMA units per core"),
            (7.168e12 / 38.4e9, "all 8 memory channels"),
        ],
    ),
}


@pytest.mark.parametrize("exercise", NUMERIC)
def test_numeric_answers_pass(exercise):
    correct, _ = NUMERIC[exercise]
    result = check(exercise, correct)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "exercise, value, hint",
    [(e, value, hint) for e, (_, wrongs) in NUMERIC.items() for value, hint in wrongs],
)
def test_numeric_mistakes_get_their_hint(exercise, value, hint):
    result = check(exercise, lambda: value)
    assert not result.passed
    assert hint in result.message, result.message


# --- the contract -----------------------------------------------------------------------------


def stub(*args):
    raise NotImplementedError()


@pytest.mark.parametrize("exercise", gu.exercises.ids("07_cpu_gpu_tpu"))
def test_stubs_are_not_attempted_yet(exercise):
    result = check(exercise, stub)
    assert not result.passed and not result.attempted
    assert "not attempted yet" in result.message


def test_chapter_registers_its_exercises():
    assert gu.exercises.ids("07_cpu_gpu_tpu") == [
        "systolic_step",
        "systolic_tiling",
        "systolic_cycles_one_tile",
        "systolic_utilisation_batch8",
        "ridge_point_tpu_v5e",
        "ridge_point_xeon_fp32",
    ]
    for exercise_id in gu.exercises.ids("07_cpu_gpu_tpu"):
        assert "signature:" in gu.exercises.describe(exercise_id)


@pytest.mark.parametrize("exercise", ["systolic_step", "systolic_tiling"])
def test_answers_that_are_not_functions_get_a_hint(exercise):
    result = check(exercise, np.zeros(3))
    assert not result.passed
    assert "pass the function itself" in result.message
