"""The shared checker machinery: verdicts a learner can trust and hints keyed to the real
cause, whatever the exercise. Uses vector_add, sum_atomic and stencil_1d of lab 03 as carriers;
each wrong answer here asserts the words of the generic hint its mistake must get, and that no
hint for a different mistake is given."""

import linecache
import textwrap

import numpy as np
import pytest
from numba import cuda, float32

import gpu_utils as gu
from gpu_utils.exercises import _worker
from gpu_utils.exercises._errors import KernelError, clean
from gpu_utils.exercises._registry import CheckResult

check = gu.exercises.check
GUARD = "guard the work"
INTERNALS = ("FakeCUDA", "tid=", "ctaid=", "Traceback", "site-packages", "simulator/")


def verdict(exercise_id, kernel, **kwargs):
    result = check(exercise_id, kernel, **kwargs)
    assert not result.passed, result.message
    for word in INTERNALS:
        assert word not in result.message, result.message
    return result.message


# --- answers a GPU cannot run ------------------------------------------------------------------


@cuda.jit(device=True)
def add_device_function(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def add_with_fstring(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]
    if i == 10**9:
        print(f"i = {i}")


@cuda.jit
def add_overwriting_input(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        a[i] = a[i] + b[i]
        out[i] = a[i]


def test_a_device_function_is_refused_saying_why():
    message = verdict("vector_add", add_device_function)
    assert "device function" in message and "cannot launch" in message
    assert GUARD not in message


def test_code_that_does_not_compile_for_a_gpu_fails_after_a_correct_simulation():
    message = verdict("vector_add", add_with_fstring)
    assert "does not compile for a GPU" in message and "f-string" in message
    assert 'print(f"i = {i}")' in message  # the line, quoted from the source


BLOCK = 128


@cuda.jit
def add_with_computed_shared_shape(a, b, out):
    tile = cuda.shared.array(BLOCK + 1, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < out.size:
        tile[t] = a[i]
        out[i] = tile[t] + b[i]


def test_a_shared_shape_computed_in_the_kernel_is_explained():
    message = verdict("vector_add", add_with_computed_shared_shape)
    assert "does not compile for a GPU" in message and "global constant" in message


def test_a_kernel_that_changes_an_input_fails_even_with_the_right_output():
    message = verdict("vector_add", add_overwriting_input)
    assert "changed its input `a`" in message and "only read" in message
    assert "grid-stride" not in message


# --- exceptions, in the learner's terms --------------------------------------------------------


@cuda.jit
def add_typo(a, b, out):
    i = cuda.gird(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def add_undefined_name(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + c[i]  # noqa: F821 - the mistake under test


@cuda.jit
def add_float_index(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i * 2 / 2] + b[i]


@cuda.jit
def add_float_range(a, b, out):
    i = cuda.grid(1)
    for k in range(i, min(i + out.size / out.size, out.size)):
        out[k] = a[k] + b[k]


@cuda.jit
def saxpy_as_vector_add(alpha, a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = alpha * a[i] + b[i]


@cuda.jit
def add_no_guard(a, b, out):
    i = cuda.grid(1)
    out[i] = a[i] + b[i]


@cuda.jit
def add_small_shared_tile(a, b, out):
    tile = cuda.shared.array(64, np.float32)
    i = cuda.grid(1)
    tile[cuda.threadIdx.x] = a[i] if i < a.size else 0.0
    if i < out.size:
        out[i] = tile[cuda.threadIdx.x] + b[i]


@cuda.jit
def add_zero_division(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + i // 0


@cuda.jit
def sum_atomic_indexed_output(x, out):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, i, x[i])


@cuda.jit
def stencil_reads_past_the_end(a, out):
    i = cuda.grid(1)
    if 1 <= i < a.size:
        out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3


@pytest.mark.parametrize(
    "exercise_id, kernel, words, not_words",
    [
        ("vector_add", add_typo, ["`cuda.gird` does not exist", "cuda.grid", "line"], [GUARD]),
        ("vector_add", add_undefined_name, ["`c` is not defined", "typo?", "a[i] + c[i]"], [GUARD]),
        ("vector_add", add_float_index, ["a float where an integer", "`//`"], [GUARD]),
        ("vector_add", add_float_range, ["TypeError", "a float where an integer", "`//`"], [GUARD]),
        (
            "vector_add",
            saxpy_as_vector_add,
            ["takes (alpha, a, b, out)", "vector_add(a, b, out)"],
            [GUARD],
        ),
        ("vector_add", add_no_guard, ["more threads than elements", GUARD], []),
        (
            "vector_add",
            add_small_shared_tile,
            ["`tile`", "size there is 64"],
            ["more threads than"],
        ),
        ("vector_add", add_zero_division, ["ZeroDivisionError", "line"], [GUARD]),
        (
            "sum_atomic",
            sum_atomic_indexed_output,
            ["`out`", "size there is 1"],
            ["more threads than"],
        ),
        ("stencil_1d", stencil_reads_past_the_end, ["`a`"], ["more threads than", "extra thread"]),
    ],
)
def test_exceptions_get_the_hint_of_their_own_cause(exercise_id, kernel, words, not_words):
    message = verdict(exercise_id, kernel)
    for word in words:
        assert word in message, message
    for word in not_words:
        assert word not in message, message


def test_the_simulator_prefix_and_class_names_are_cleaned():
    raw = "tid=[3, 0, 0] ctaid=[1, 0, 0]: 'FakeCUDAModule' object has no attribute 'gird'"
    assert clean(raw) == "`cuda` has no attribute 'gird'"


def test_an_index_error_is_a_string_with_its_facts():
    error = KernelError("out_of_bounds", "text", "hint", array="s", index=64, size=64)
    assert error == "text" and error.array == "s" and error.size == 64 and "tex" in error


# --- writing nothing ---------------------------------------------------------------------------


@cuda.jit
def add_returning(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        return a[i] + b[i]


@cuda.jit
def add_to_a_name(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        result = a[i] + b[i]  # noqa: F841 - the mistake under test


@pytest.mark.parametrize(
    "kernel, words",
    [(add_returning, "cannot return a value"), (add_to_a_name, "assign each result")],
)
def test_writing_nothing_is_recognised_before_any_pattern(kernel, words):
    message = verdict("vector_add", kernel)
    assert "wrote nothing at all" in message and words in message, message
    assert "one short" not in message


# --- the cell's source travels with the kernel ---------------------------------------------------


def test_a_notebook_cell_is_quoted_by_the_checkers_process():
    """A cell's file name exists only in the notebook's linecache, as in Jupyter."""
    filename = "/nonexistent/ipykernel_0/cell_7.py"
    source = textwrap.dedent(
        """
        from numba import cuda, float32

        @cuda.jit
        def add(a, b, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = a[i] + b[i] + cuda.threadIdx.q
        """
    )
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)
    message = verdict("vector_add", namespace["add"])
    assert "line 8" in message and "cuda.threadIdx.q" in message, message


# --- endless kernels ---------------------------------------------------------------------------


@cuda.jit
def add_endless(a, b, out):
    i = cuda.grid(1)
    j = 0
    while j < 4:
        if i < out.size:
            out[i] = a[i] + b[i]


def test_an_endless_kernel_is_stopped_with_the_line_it_was_looping_on():
    message = verdict("vector_add", add_endless, timeout=3)
    assert "still running after 3 s" in message, message
    assert "`while j < 4:`" in message and "`j`" in message, message


def test_the_time_limit_is_scaled_and_capped():
    exercise = gu.exercises.get("vector_add")
    limit = _worker.time_limit(exercise, None)
    assert _worker.FLOOR <= limit <= _worker.CAP == 20.0
    assert _worker.time_limit(exercise, 5) == 5.0


# --- display -----------------------------------------------------------------------------------


def test_rich_display_keeps_plain_text_for_terminals_and_nbval():
    result = CheckResult(False, "x: not yet. Use `i < n` & more.\nHint: try `a // 2`.", "x")
    assert repr(result) == str(result) == result.message
    html = result._repr_html_()
    assert "<code>i &lt; n</code>" in html and "&amp; more" in html
    assert "<strong>Hint:</strong>" in html and "<br>" in html


def test_a_verdict_keeps_what_was_observed_and_the_hint_as_data():
    """CheckResult carries its message's two parts (what the checker observed, the hint), across
    the checker's process, so that no caller parses the message (issue 30, item 6)."""
    from gpu_utils.exercises._registry import failed, passed

    result = failed("some_id", "two of 8 elements are wrong.", "check the last block.")
    assert (result.what, result.hint) == ("two of 8 elements are wrong.", "check the last block.")
    assert (
        result.message
        == "some_id: not yet. two of 8 elements are wrong.\nHint: check the last block."
    )
    assert passed("some_id", "Correct on 3 sizes.").what == "Correct on 3 sizes."

    @cuda.jit
    def vector_add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] - b[i]

    result = gu.exercises.check("vector_add", vector_add)  # through the checker's process
    assert not result.passed and result.what and result.hint
    assert result.message == f"vector_add: not yet. {result.what}\nHint: {result.hint}"
    assert "not yet" not in result.what and "Hint:" not in result.what
