"""gu.viz.thread_map: who wrote what, for correct and known-wrong kernels (chapter 03)."""

import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from numba import cuda

import gpu_utils as gu

matplotlib.use("Agg")

thread_map = gu.viz.thread_map


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_thread_index_only(a, b, out):
    i = cuda.threadIdx.x
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_no_guard(a, b, out):
    i = cuda.grid(1)
    out[i] = a[i] + b[i]


@cuda.jit
def copy_grid_stride(x, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[i]


@cuda.jit
def copy_2d(x, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = x[row, col]


@cuda.jit
def copy_2d_swapped(x, out):
    row, col = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = x[row, col]


@cuda.jit
def sum_atomic(x, out):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def row_fill(out):
    row = cuda.grid(1)
    if row < out.shape[0]:
        out[row, :] = row  # one store of a whole row


def _vectors(n=10):
    a = np.arange(n, dtype=np.float32)
    return a, a + 1, np.full(n, np.nan, dtype=np.float32)


def test_a_correct_kernel_writes_each_element_once_and_the_ids_are_right():
    a, b, out = _vectors(10)
    result = thread_map(vector_add, 3, 4, a, b, out, plot=False)
    (written,) = result.arrays  # only `out` was written to
    assert written.name == "out" and written.position == 2
    assert (written.writes == 1).all() and (written.writers == 1).all()
    assert written.block[5].tolist() == [1, 0, 0] and written.thread[5].tolist() == [1, 0, 0]
    assert written.block[9].tolist() == [2, 0, 0] and written.thread[9].tolist() == [1, 0, 0]
    assert "each of the 10 elements written by exactly one thread" in str(result)
    assert result.error is None
    assert np.isnan(out).all(), "thread_map must run on copies, not on the learner's arrays"


def test_thread_index_only_shows_unwritten_and_shared_elements():
    result = thread_map(vector_add_thread_index_only, 3, 4, *_vectors(10), plot=False)
    out = result["out"]
    assert out.unwritten.tolist() == [False] * 4 + [True] * 6
    assert out.writers[:4].tolist() == [3, 3, 3, 3]  # thread x of every block wrote out[x]
    assert out.block[0].tolist() == [0, 0, 0]  # the lowest-numbered writer is shown
    text = result.summary()
    assert "6 of 10 elements never written (first: out[4])" in text
    assert "4 written by more than one thread (first: out[0], by 3 threads)" in text


def test_an_off_by_one_guard_leaves_the_last_element_unwritten():
    @cuda.jit
    def off_by_one(a, b, out):
        i = cuda.grid(1)
        if i < out.size - 1:
            out[i] = a[i] + b[i]

    result = thread_map(off_by_one, 3, 4, *_vectors(10), plot=False)
    assert result["out"].unwritten.tolist() == [False] * 9 + [True]
    assert "1 of 10 elements never written (first: out[9])" in str(result)
    assert result.error is None


def test_stores_are_counted_per_store_and_writers_per_thread():
    @cuda.jit
    def zero_then_add(a, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 0
            out[i] += a[i]  # the same thread again: two stores, no race

    x = np.ones(12, np.float32)
    result = thread_map(zero_then_add, 2, 8, x, x.copy(), plot=False)
    out = result["out"]
    assert (out.writes == 2).all() and (out.writers == 1).all() and not out.shared.any()
    assert "each of the 12 elements written by exactly one thread" in str(result)


def test_a_missing_guard_is_reported_deterministically_not_raised():
    result = thread_map(vector_add_no_guard, 3, 4, *_vectors(10), plot=False)
    assert (result["out"].writes == 1).all()  # every other thread still ran, as on a GPU
    assert result.error.startswith("2 threads raised IndexError; the first is thread 2 of block 2")
    assert "index 10 is out of bounds" in result.error
    assert "if i < out.size:" in result.summary()


def test_grid_stride_loop_threads_write_several_elements():
    x = np.arange(70, dtype=np.float32)
    result = thread_map(copy_grid_stride, 2, 8, x, np.zeros_like(x), plot=False)
    out = result["out"]
    assert (out.writers == 1).all()
    assert out.block[16].tolist() == [0, 0, 0] and out.thread[16].tolist() == [0, 0, 0]
    assert out.block[24].tolist() == [1, 0, 0]


def test_two_d_launch_records_x_as_column_and_y_as_row():
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    out = thread_map(copy_2d, (2, 2), (4, 4), x, np.zeros_like(x), plot=False)["out"]
    assert (out.writers == 1).all()
    assert out.block[4, 6].tolist() == [1, 1, 0] and out.thread[4, 6].tolist() == [2, 0, 0]
    swapped = thread_map(copy_2d_swapped, (2, 2), (4, 4), x, np.zeros_like(x), plot=False)
    assert swapped["out"].thread[4, 6].tolist() == [0, 2, 0]  # x now runs down the rows


def test_swapped_indices_on_a_wide_matrix_leave_columns_unwritten():
    x = np.zeros((3, 12), dtype=np.float32)
    result = thread_map(copy_2d_swapped, (3, 1), (4, 4), x, x.copy(), plot=False)
    assert result["out"].unwritten[:, 4:].all() and not result["out"].unwritten[:, :4].any()


def test_atomics_are_recorded_as_writes_by_every_thread():
    x = np.ones(20, dtype=np.float32)
    result = thread_map(sum_atomic, 2, 16, x, np.zeros(1, dtype=np.float32), plot=False)
    assert result["out"].writers.tolist() == [20]


def test_slice_stores_are_attributed_to_every_element_they_touch():
    result = thread_map(row_fill, 1, 4, np.zeros((3, 5), dtype=np.float32), plot=False)
    out = result["out"]
    assert (out.writers == 1).all()
    assert out.thread[:, 0, 0].tolist() == [0, 1, 2]


_GPU_MODE_CHILD = """
import subprocess
import numpy as np
import gpu_utils as gu
from numba import cuda

subprocess.Popen = None  # thread_map must record in this process, starting none

@cuda.jit
def vector_add_no_guard(a, b, out):
    i = cuda.grid(1)
    out[i] = a[i] + b[i]

a = np.arange(10, dtype=np.float32)
out = np.full(10, np.nan, dtype=np.float32)
print(gu.mode, type(vector_add_no_guard).__name__)
print(gu.viz.thread_map(vector_add_no_guard, 3, 4, a, a + 1, out, plot=False))
assert np.isnan(out).all()
"""


def test_gpu_mode_records_in_process_with_the_same_result():
    # GPU mode without a GPU: @cuda.jit makes a real dispatcher, which compiles only when launched
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["GPU_COURSE_MODE"] = "gpu"
    child = subprocess.run(
        [sys.executable, "-c", _GPU_MODE_CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    mode, summary = child.stdout.split("\n", 1)
    assert mode == "gpu CUDADispatcher"
    here = thread_map(vector_add_no_guard, 3, 4, *_vectors(10), plot=False)
    assert summary.strip() == str(here)


def test_other_threads_of_a_failing_block_still_run_past_its_barrier():
    @cuda.jit
    def fail_before_barrier(out):
        i = cuda.threadIdx.x
        if i % 2 == 1:
            raise ValueError(f"odd thread {i}")
        cuda.syncthreads()
        out[cuda.grid(1)] = i

    result = thread_map(fail_before_barrier, 2, 8, np.zeros(16, np.float32), plot=False)
    assert result["out"].unwritten.tolist() == [False, True] * 8
    assert result.error == (
        "8 threads raised ValueError; the first is thread 1 of block 0: odd thread 1."
    )


def test_the_learners_arrays_are_never_modified_whatever_their_kind_or_layout():
    a, b, out = _vectors(10)
    device_out = cuda.to_device(out)
    result = thread_map(vector_add, 3, 4, a, b, device_out, plot=False)
    assert (result["out"].writes == 1).all()
    assert np.isnan(device_out.copy_to_host()).all()
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    fortran = np.asfortranarray(np.zeros_like(x))  # elements are still numbered row by row
    out = thread_map(copy_2d, (2, 2), (4, 4), x, fortran, plot=False)["out"]
    assert out.block[4, 6].tolist() == [1, 1, 0] and out.thread[4, 6].tolist() == [2, 0, 0]
    assert not fortran.any()


def test_plot_draws_each_written_array_and_marks_problems():
    result = thread_map(vector_add_thread_index_only, 3, 4, *_vectors(40), plot=False)
    figure = result.plot()
    (ax,) = figure.axes
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("×3") == 4  # the shared elements are marked
    assert "out, shape (40,)" in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "never written" in legend and "block 2" in legend
    x = np.zeros((5, 7), dtype=np.float32)
    figure = thread_map(copy_2d, (2, 2), (4, 4), x, x.copy(), plot=False).plot()
    assert "3,4" not in [t.get_text() for t in figure.axes[0].texts]  # blocks are 4x4: ids 0..3
    assert "3,3" in [t.get_text() for t in figure.axes[0].texts]


def test_padding_cells_have_their_own_legend_entry():
    # 40 elements drawn 32 per row: the second row has 24 cells past the end of the array
    figure = thread_map(vector_add, 3, 16, *_vectors(40), plot=False).plot()
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert "no element (past the end)" in legend
    x = np.zeros((5, 7), dtype=np.float32)  # a 2-D array fills its grid: no padding entry
    figure = thread_map(copy_2d, (2, 2), (4, 4), x, x.copy(), plot=False).plot()
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert "no element (past the end)" not in legend
    import matplotlib.pyplot as plt

    plt.close("all")


def test_bad_input_gets_a_clear_error():
    with pytest.raises(TypeError, match=r"@cuda\.jit"):
        thread_map(vector_add.py_func, 1, 4, *_vectors(4))
    with pytest.raises(ValueError, match="at most 16,384"):
        thread_map(vector_add, 1000, 1000, *_vectors(4))
    with pytest.raises(ValueError, match="positive int"):
        thread_map(vector_add, 0, 4, *_vectors(4))


def test_a_stub_says_so():
    @cuda.jit
    def stub(a, b, out):
        raise NotImplementedError()

    result = thread_map(stub, 1, 4, *_vectors(4), plot=False)
    assert result.arrays == ()
    assert result.summary().endswith("The kernel raises NotImplementedError: write its body first")


def test_a_kernel_that_writes_nothing_says_so():
    @cuda.jit
    def idle(a, b, out):
        pass

    result = thread_map(idle, 1, 4, *_vectors(4))
    assert result.arrays == () and result.error is None
    assert "wrote to none of its array arguments" in result.summary()


# --- gu.viz.Table: result tables for chapters 09-11 ------------------------------------------------


def test_table_plain_text_is_aligned_and_html_has_every_cell():
    table = gu.viz.Table(
        ["layout", "GiB/GPU", "fits"],
        [["DP 4 x TP 2", 71.25, "yes"], ["DP 128 x TP 8 x PP 16", 1234.5, "no"]],
        caption="Llama 2 7B",
        note="estimates, not measurements",
    )
    lines = str(table).splitlines()
    assert lines[0] == "Llama 2 7B" and lines[-1] == "estimates, not measurements"
    header, rule, first, second = lines[1:5]
    assert set(rule.replace(" ", "")) == {"-"}
    assert header.split() == ["layout", "GiB/GPU", "fits"]
    # numbers right-aligned: the two values end in the same column, under the header's end
    assert first.index("71.2") + 4 == second.index("1,234") + 5 == header.index("GiB/GPU") + 7
    assert repr(table) == str(table)
    html = table._repr_html_()
    assert html.count("<tr>") == 3 and "DP 128 x TP 8 x PP 16" in html and "<caption" in html
    assert "word-break: normal" in html  # JupyterLab's outputs otherwise break inside words


def test_table_escapes_html_and_rejects_a_short_row():
    assert "&lt;b&gt;" in gu.viz.Table(["a"], [["<b>"]])._repr_html_()
    with pytest.raises(ValueError, match="each row needs 2 values"):
        gu.viz.Table(["a", "b"], [[1]])


def test_table_formats_numpy_numbers_as_numbers():
    import numpy as np

    python = str(gu.viz.Table(["x", "n"], [[71.25, 3], [1234.5, 12]]))
    numpy = str(
        gu.viz.Table(["x", "n"], [[np.float32(71.25), np.int64(3)], [np.float64(1234.5), 12]])
    )
    assert numpy == python  # same digits, same right alignment
    assert "True" in str(gu.viz.Table(["flag"], [[np.bool_(True)]]))
