"""``gu.triton_accesses``: which Triton program loaded and stored which elements (issue 27, 8).

Every expected element set below is computed from the kernel's definition with plain Python
ranges (the oracle), never from the recorder; the recorder sees only the addresses the
interpreter's loads and stores receive. Runs on Triton 3.7 (.venv) and 3.6 (.venv-cu12).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

os.environ.setdefault("GPU_COURSE_MODE", "simulator")
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import gpu_utils as gu
from gpu_utils import runtime

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover - GPU sessions
    pytest.skip("these launch kernels in Triton's interpreter", allow_module_level=True)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def add_unmasked(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets)  # no mask
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, x + y)


@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BM: tl.constexpr, BN: tl.constexpr
):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def overlapping_copy(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # the bug: programs start BLOCK_SIZE // 2 apart, so neighbours store the same half-block
    offsets = tl.program_id(0) * (BLOCK_SIZE // 2) + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def copy_but_last(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements - 1  # the bug: the last element is masked off
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def count_atomic(out_ptr, BLOCK_SIZE: tl.constexpr):
    tl.atomic_add(out_ptr + tl.arange(0, BLOCK_SIZE), 1)


def _block(start: int, stop: int) -> set[int]:
    return set(range(start, stop))


def _vector_add(n=100, block=32, grid=None, **options):
    x, y = torch.rand(n), torch.rand(n)
    out = torch.full((n,), float("nan"))
    grid = grid or (triton.cdiv(n, block),)
    rec = gu.triton_accesses(add_kernel, grid, x, y, out, n, BLOCK_SIZE=block, **options)
    return rec, x, y, out


def test_vector_add_each_program_touches_its_block_and_the_tail_is_masked():
    rec, x, y, out = _vector_add()
    assert rec.grid == (4, 1, 1) and rec.kernel == "add_kernel"
    for p in range(4):
        expected = _block(32 * p, min(32 * (p + 1), 100))
        for tensor, kind in [("x_ptr", "load"), ("y", "load"), ("out", "store")]:
            assert rec.elements(tensor, kind, program=p) == expected, (tensor, p)
        assert rec.masked(p) == (3 * 28 if p == 3 else 0)
    (tail,) = rec._selected("out", ("store",), program=3)
    assert tail.masked == 28 and sorted(tail.masked_offsets) == list(range(100, 128))
    assert sorted(tail.lanes) == list(range(4)) and tail.block == (32,)
    assert tail.source == "tl.store(out_ptr + offsets, x + y, mask=mask)"
    assert rec.elements("out") == _block(0, 100) and rec.elements("x", "store") == set()
    assert not rec.unwritten("out").any() and not rec.double_writes("out").any()
    assert (rec.programs_at("x", "load") == 1).all()
    # on copies: the learner's out keeps its NaNs, the copy holds the sum
    assert out.isnan().all() and torch.equal(rec.args["out_ptr"], x + y)


def test_a_grid_as_an_int_or_a_function_of_the_meta_parameters():
    x, y, out = torch.rand(70), torch.rand(70), torch.empty(70)
    for grid in (3, lambda meta: (triton.cdiv(70, meta["BLOCK_SIZE"]),)):
        rec = gu.triton_accesses(add_kernel, grid, x, y, out, n_elements=70, BLOCK_SIZE=32)
        assert rec.grid == (3, 1, 1) and rec.elements("out", program=2) == _block(64, 70)


def test_on_the_given_tensors_the_launch_writes_them():
    rec, x, y, out = _vector_add(on_copies=False)
    assert torch.equal(out, x + y) and rec.args["out_ptr"] is out
    assert "on the tensors given" in str(rec) and "<table" in rec._repr_html_()


def test_a_program_with_every_lane_masked_is_traced_to_its_tensor_by_the_source():
    rec, *_ = _vector_add(grid=(5,))  # one program too many: program 4 is masked throughout
    accesses = rec._selected("out", ("store",), program=4)
    assert [a.masked for a in accesses] == [32] and accesses[0].lanes.size == 0
    assert {a.tensor for a in rec.accesses if a.program == (4, 0, 0)} == {
        "x_ptr",
        "y_ptr",
        "out_ptr",
    }
    assert rec.elements("out", program=4) == set() and rec.elements("out") == _block(0, 100)


def test_outer_add_on_a_2d_grid_into_a_strided_output():
    M, N, BM, BN = 5, 7, 4, 4
    x, y = torch.rand(M), torch.rand(N)
    wide = torch.full((M, 10), float("nan"))
    out = wide[:, :N]  # rows 10 elements apart: the index comes from the strides
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    rec = gu.triton_accesses(
        outer_add_kernel, grid, x, y, out, M, N, out.stride(0), BM=BM, BN=BN, on_copies=False
    )
    torch.testing.assert_close(out, x[:, None] + y[None, :])
    assert rec.grid == (2, 2, 1) and rec.shape("out") == (M, N)
    for pm in range(2):
        for pn in range(2):
            rows = range(pm * BM, min((pm + 1) * BM, M))
            cols = range(pn * BN, min((pn + 1) * BN, N))
            assert rec.elements("out", program=(pm, pn)) == {(i, j) for i in rows for j in cols}
            assert rec.elements("x", "load", program=(pm, pn)) == set(rows)
            assert rec.elements("y", "load", program=(pm, pn)) == set(cols)
    assert (rec.programs_at("x", "load") == 2).all()  # every row block is read by 2 programs
    assert not rec.unwritten("out").any() and not rec.double_writes("out").any()
    # program (1, 1) owns rows 4 and columns 4-6: 3 of its 16 lanes store
    assert rec.masked((1, 1)) == 3 + 1 + (16 - 3)


def test_row_softmax_with_a_row_stride_one_program_per_row():
    rows, n_cols, block = 6, 10, 16
    x = torch.randn(rows, 12)[:, :n_cols]  # a strided view: rows 12 apart
    out = torch.empty(rows, n_cols)
    rec = gu.triton_accesses(
        softmax_kernel, (rows,), x, out, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block
    )
    torch.testing.assert_close(rec.args["out_ptr"], torch.softmax(x, dim=1))
    for r in range(rows):
        row = {(r, c) for c in range(n_cols)}
        assert rec.elements("x", "load", program=r) == row
        assert rec.elements("out", program=r) == row
        assert rec.masked(r) == 2 * (block - n_cols)
    table = str(rec.summary())
    assert "10 [3, 0:10]" in table  # program 3: row 3, columns 0 to 9
    assert all(len(line) <= 100 for line in table.splitlines())
    assert table.splitlines()[-3].endswith(" 12")  # program 5: 6 masked in its load, 6 in store


def test_two_programs_storing_one_element_are_reported_as_a_race():
    n, block = 20, 8
    x = torch.rand(n)
    rec = gu.triton_accesses(overlapping_copy, (4,), x, torch.empty(n), n, BLOCK_SIZE=block)
    starts = [p * (block // 2) for p in range(4)]
    stored = [_block(s, min(s + block, n)) for s in starts]
    twice = {i for i in range(n) if sum(i in s for s in stored) > 1}
    assert twice == _block(4, 16)  # the oracle itself: programs 4 apart, 8 wide
    assert set(rec.double_writes("out").nonzero()[0].tolist()) == twice
    assert set(rec.unwritten("out").nonzero()[0].tolist()) == _block(0, n) - set().union(*stored)
    text = rec.describe("out")
    assert "12 stored by more than one program" in text and "programs 0, 1" in text
    assert "race" in text


def test_a_mask_that_leaves_elements_unwritten():
    n, block = 10, 4
    x, out = torch.rand(n), torch.full((n,), float("nan"))
    rec = gu.triton_accesses(copy_but_last, (3,), x, out, n, BLOCK_SIZE=block)
    assert rec.unwritten("out").nonzero()[0].tolist() == [n - 1]
    assert rec.elements("out") == _block(0, n - 1)
    assert "1 of 10 elements never written (first: out_ptr[9])" in rec.describe("out")
    assert rec.args["out_ptr"][: n - 1].equal(x[: n - 1]) and rec.args["out_ptr"][-1].isnan()


def test_atomics_are_recorded_and_are_not_a_race():
    count = torch.zeros(16)
    rec = gu.triton_accesses(count_atomic, (3,), count, BLOCK_SIZE=16)
    assert rec.elements("out", "atomic") == _block(0, 16) and rec.elements("out") == set()
    assert (rec.programs_at("out", "atomic") == 3).all()
    assert not rec.double_writes("out").any() and not rec.unwritten("out").any()
    assert torch.equal(rec.args["out_ptr"], torch.full((16,), 3.0))


def test_an_access_outside_the_tensors_raises_as_the_launch_guard_does():
    x, y, out = torch.rand(1000), torch.rand(1000), torch.empty(1000)
    with pytest.raises(runtime.LaunchOutOfBounds) as raised:
        gu.triton_accesses(add_unmasked, (4,), x, y, out, 1000, BLOCK_SIZE=256)
    assert "Program (3, 0, 0) read outside `x_ptr`" in str(raised.value)
    partial = raised.value.accesses  # programs 0-2 ran in full before program 3 was stopped
    assert {a.program[0] for a in partial.accesses} == {0, 1, 2}
    assert partial.elements("out") == _block(0, 768)


def test_the_picture_has_one_panel_per_tensor_with_masked_lanes_and_races_marked():
    rec, *_ = _vector_add()
    fig = rec.draw()
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3 and "out_ptr" in panels[2].get_title()
    hatched = [p for p in panels[2].patches if p.get_hatch()]
    assert len(hatched) == 28  # the masked lanes 100-127 of program 3's store
    plt.close(fig)
    fig = rec.draw(tensor="out")
    assert len([ax for ax in fig.axes if ax.images]) == 1
    plt.close(fig)

    n = 20
    race = gu.triton_accesses(
        overlapping_copy, (4,), torch.rand(n), torch.empty(n), n, BLOCK_SIZE=8
    )
    fig = race.draw(tensor="out")
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels.count("×2") == 12 and labels.count("0") == 4
    plt.close(fig)


def test_the_2d_picture_labels_each_cell_with_its_program():
    rows, n_cols = 3, 5
    x = torch.randn(rows, n_cols)
    rec = gu.triton_accesses(
        softmax_kernel, (rows,), x, torch.empty(rows, n_cols), n_cols, n_cols, n_cols, BLOCK_SIZE=8
    )
    fig = rec.draw(tensor="out")
    (ax,) = [ax for ax in fig.axes if ax.images]
    assert ax.images[0].get_array().shape[:2] == (rows, n_cols)
    assert sorted(t.get_text() for t in ax.texts) == sorted(
        str(r) for r in range(rows) for _ in range(n_cols)
    )
    plt.close(fig)


def test_one_program_s_picture_numbers_each_element_with_its_lane():
    rec, *_ = _vector_add()
    fig = rec.draw(tensor="out", program=3)
    (ax,) = [ax for ax in fig.axes if ax.images]
    assert sorted(t.get_text() for t in ax.texts) == ["0", "1", "2", "3"]  # out[96:100]
    assert (
        len([p for p in ax.patches if p.get_hatch()]) == 28
        and "program 3" in fig.texts[0].get_text()
    )
    plt.close(fig)

    M, N = 5, 7
    args = (torch.rand(M), torch.rand(N), torch.empty(M, N), M, N, N)
    rec = gu.triton_accesses(outer_add_kernel, (2, 2), *args, BM=4, BN=4)
    fig = rec.draw(tensor="out", program=(0, 1))
    (ax,) = [ax for ax in fig.axes if ax.images]
    # lane (i, j) of program (0, 1)'s 4 x 4 block stores out[i, 4 + j]: cell (column, row)
    placed = {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts
    }
    assert placed == {(4 + j, i): f"({i}, {j})" for i in range(4) for j in range(3)}
    plt.close(fig)


def test_the_legend_gives_each_program_the_colour_of_its_cells():
    M, N = 5, 7
    args = (torch.rand(M), torch.rand(N), torch.empty(M, N), M, N, N)
    rec = gu.triton_accesses(outer_add_kernel, (2, 2), *args, BM=4, BN=4)
    fig = rec.draw(tensor="out")
    (ax,) = [ax for ax in fig.axes if ax.images]
    image = ax.images[0].get_array()
    shown = ax.get_legend()
    legend = dict(zip([t.get_text() for t in shown.get_texts()], shown.legend_handles, strict=True))
    for (pm, pn), (row, col) in {(1, 0): (4, 0), (0, 1): (0, 6), (0, 0): (0, 0)}.items():
        colour = legend[f"program ({pm}, {pn})"].get_facecolor()[:3]
        assert tuple(round(float(v), 6) for v in image[row, col][:3]) == tuple(
            round(float(v), 6) for v in colour
        ), (pm, pn)
    plt.close(fig)


def test_clear_errors_for_what_is_not_an_interpreted_kernel(monkeypatch):
    x = torch.rand(4)
    with pytest.raises(TypeError, match=r"not kernel\[grid\]"):
        gu.triton_accesses(add_kernel[(1,)], (1,), x, x, x, 4, BLOCK_SIZE=4)
    with pytest.raises(TypeError, match=r"kernel\.fn"):
        gu.triton_accesses(triton.autotune([triton.Config({})], key=[])(add_kernel), (1,))
    with pytest.raises(KeyError, match="'x_ptr', 'y_ptr', 'out_ptr'"):
        _vector_add()[0].elements("z")
    monkeypatch.setattr(runtime, "mode", "gpu")
    with pytest.raises(RuntimeError, match="GPU_COURSE_MODE=simulator") as raised:
        gu.triton_accesses(add_kernel, (1,), x, x, x, 4, BLOCK_SIZE=4)
    assert "gpu mode" in str(raised.value)


def test_importing_gpu_utils_stays_light_and_the_name_is_callable():
    code = "import gpu_utils, sys; print('triton' in sys.modules, 'torch' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.stdout.split() == ["False", "False"], shown.stderr
    assert callable(gu.triton_accesses) and gu.triton_accesses.TritonAccesses
