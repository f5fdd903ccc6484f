"""gu.triton_ir (chapter 12): Triton's compiler runs without a GPU, in a child process that does
not interpret, and says what it made (layouts, vector loads, tensor-core instructions) or where it
refused; and the interpreter's guard of the lab checkers (``_triton.guarded``) stops an access
outside the launch's tensors before it happens."""

import linecache
import math
import textwrap

import numpy as np
import pytest

pytest.importorskip("triton")

import torch
import triton
import triton.language as tl

import gpu_utils as gu
from gpu_utils.exercises import _triton


def cell(text: str, name: str):
    """A kernel defined as a notebook cell would define it (source in linecache only)."""
    text = textwrap.dedent(text).strip("\n") + "\n"
    filename = f"/tmp/ipykernel_triton_ir/{name}.py"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__name__": "__main__", "triton": triton, "tl": tl, "math": math}
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


ADD = """
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
"""
POINTERS = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}


def test_alignment_from_the_launch_gives_vector_loads():
    add = cell(ADD, "add")
    aligned = gu.triton_ir.compile_like_launch(add, {**POINTERS, "n": 4096}, {"BLOCK": 1024})
    assert aligned.count("ptx", r"ld\.global(\.\w+)*\.v4") >= 2  # x and y, 16 bytes per thread
    assert "sizePerThread = [4]" in aligned.lines("ttgir", r"^#blocked")[0]
    unknown = gu.triton_ir.compile(add, {**POINTERS, "n": "i32"}, {"BLOCK": 1024}, "sm_80")
    assert unknown.count("ptx", r"ld\.global(\.\w+)*\.v4") == 0  # nothing proves alignment
    assert unknown.target == "sm_80" and unknown.num_warps == 4


def test_a_rejected_kernel_raises_with_its_line():
    broken = cell(
        """
        @triton.jit
        def broken(x_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            try:
                tl.store(x_ptr + offsets, 1.0)
            except ValueError:
                pass
        """,
        "broken",
    )
    with pytest.raises(gu.triton_ir.CompileError) as error:
        gu.triton_ir.compile(broken, {"x_ptr": "*fp32"}, {"BLOCK": 16})
    assert error.value.line == 3 and "Try" in error.value.message  # counted from the `def`
    with pytest.raises(ValueError, match="unknown target"):
        gu.triton_ir.compile(broken, {"x_ptr": "*fp32"}, {"BLOCK": 16}, "sm_00")


def test_the_guard_stops_an_access_past_a_tensor_before_it_happens():
    unmasked = cell(
        """
        @triton.jit
        def unmasked(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            values = tl.load(x_ptr + offsets)
            tl.store(out_ptr + offsets, values)
        """,
        "unmasked",
    )
    args = {"x_ptr": torch.arange(10.0), "out_ptr": torch.zeros(16)}
    with pytest.raises(Exception) as stopped, _triton.guarded(args, list(args), unmasked.fn):
        unmasked[(1,)](*args.values(), 16)
    cause = _triton.explain(stopped.value, unmasked.fn.__code__.co_filename)
    assert cause.kind == "out_of_bounds" and cause.tensor == "x_ptr" and cause.line == 4
    assert "offsets 10 to 15 (6 of them)" in cause.text and not cause.masked
    assert args["out_ptr"].eq(0).all()  # stopped at the load: nothing was stored
    unmasked[(1,)](torch.arange(16.0), torch.zeros(16), 16)  # the guard is gone afterwards


def test_written_nan_is_told_apart_from_never_written():
    out = torch.empty(4)
    _triton.poison(out)
    out[1] = float("nan")  # a NaN the kernel computed
    assert _triton.unwritten(out).tolist() == [True, False, True, True]
    assert np.isnan(out.numpy()).all()


def test_an_endless_kernel_is_stopped_with_its_line():
    loop = cell(
        """
        @triton.jit
        def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
            i = 0
            while i < n_elements:
                x = tl.load(x_ptr + i)
            tl.store(out_ptr + i, x)
        """,
        "add_kernel",
    )
    result = gu.exercises.check("triton_vector_add", loop, timeout=3)
    assert not result.passed and "stopped it" in result.message
    # where the watchdog found it: the loop's body or its condition
    assert "at line 5" in result.message or "at line 4" in result.message, result.message
    assert "`while` loop on line 4" in result.message


def test_a_compiled_kernel_travels_to_the_checker_as_an_interpreted_one(monkeypatch):
    """On a GPU the notebook's kernel is a JITFunction (it holds locks, so it cannot be pickled
    as it is); it travels by its Python function and the checker's process, which interprets,
    rebuilds it as an interpreted kernel."""
    import pickle

    from gpu_utils.pickling import dumps

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    compiled = cell(ADD, "add")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert type(compiled).__name__ == "JITFunction"
    _triton.register_reducer()
    rebuilt = pickle.loads(dumps(compiled))
    assert type(rebuilt).__name__ == "InterpretedFunction"
    x, y, out = torch.rand(40), torch.rand(40), torch.zeros(40)
    rebuilt[(3,)](x, y, out, 40, 16)
    assert torch.equal(out, x + y)


def test_notebook_cells_compile_with_helpers_and_autotune_in_a_real_ipython_shell():
    """As a notebook runs them (issues 30.2 and 32.1): the kernels' source is only in IPython's
    cell cache, a @triton.jit helper sits in a cell of its own, the kernel is autotuned; the
    compiler's process reads all of it (a helper failed there with "Unsupported function
    referenced", an autotuned kernel could not be compiled at all). The checker's side of the
    same path is in the corpus (tests/triton_answers/ch12.py: helper_and_leftover_print,
    autotuned_with_break)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("IPython")
    script = textwrap.dedent(
        '''
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        cells = [
            "import gpu_utils as gu, triton, triton.language as tl",
            "@triton.jit\\ndef twice(x):\\n    return x * 2.0\\n",
            """
        @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
        @triton.jit
        def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(out_ptr + offsets, twice(tl.load(x_ptr + offsets, mask=mask)), mask=mask)
        """,
            """
        made = gu.triton_ir.compile_like_launch(
            scale, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": 4096}, {"BLOCK": 1024}, "sm_80"
        )
        print("compiled", made.count("ptx", "ld.global"), made.count("ptx", "st.global"))
        """,
        ]
        for text in cells:
            result = shell.run_cell(text)
            assert result.success, result.error_in_exec or result.error_before_exec
        '''
    )
    env = {**os.environ, "GPU_COURSE_MODE": "simulator"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    loads, stores = map(int, done.stdout.split("compiled ")[-1].split())
    assert loads >= 1 and stores >= 1, done.stdout
