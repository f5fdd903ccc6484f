"""The lockstep path of the course's simulator (gpu_utils.sim.lockstep, issue 29): a launch run
with every thread of a chunk of blocks at once must end exactly as the thread-by-thread engine
ends it (same arrays, bit for bit, same error), or hand the launch back to that engine.

The oracle is the thread-by-thread engine itself (``GPU_COURSE_SIM_LOCKSTEP=never``), which
test_sim.py and test_sim_differential.py hold against numba-cuda's simulator; the corpus of
kernels (tests/sim_kernel_corpus.py) was written blind, by a helper who had not read the engine.
"""

import operator
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import sim_kernel_corpus as corpus
from numba import cuda, float32

import gpu_utils as gu
from gpu_utils import sim
from gpu_utils.sim import lockstep

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator engines only")

HERE = os.path.dirname(os.path.abspath(__file__))


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def run(mode, kernel, griddim, blockdim, args, monkeypatch):
    """(arrays after the launch, (error type, message) or None, what the lockstep path did)."""
    monkeypatch.setenv(lockstep.ENV, mode)
    lockstep.LAST["outcome"] = None
    args = _copies(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            kernel[griddim, blockdim](*args)
            error = None
        except Exception as raised:
            error = (type(raised).__name__, str(raised))
    return args, error, lockstep.LAST["outcome"]


def assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("case", corpus.CASES, ids=[c[0] for c in corpus.CASES])
def test_a_blind_kernel_ends_as_on_the_thread_by_thread_engine(case, monkeypatch):
    name, kernel, griddim, blockdim, make = case
    args = make()
    expected, expected_error, _ = run("never", kernel, griddim, blockdim, args, monkeypatch)
    got, error, outcome = run("always", kernel, griddim, blockdim, args, monkeypatch)
    assert error == expected_error
    if name in corpus.BUGGY and outcome.startswith("fell back"):
        return  # the engine ran it; some of these read memory nobody wrote (numpy.empty's bytes)
    assert_same(expected, got)
    if name in corpus.BUGGY:  # these two are deterministic and race-free
        assert name in ("bug_endless_looking_loop", "bug_shared_negative_index"), outcome


def test_most_of_the_blind_corpus_runs_in_lockstep(monkeypatch):
    outcomes = {}
    for name, kernel, griddim, blockdim, make in corpus.CASES:
        if name not in corpus.BUGGY:
            outcomes[name] = run("always", kernel, griddim, blockdim, make(), monkeypatch)[2]
    in_lockstep = [n for n, o in outcomes.items() if o == "lockstep"]
    assert len(in_lockstep) >= 0.95 * len(outcomes), {
        n: o for n, o in outcomes.items() if o != "lockstep"
    }


# --- the lab kernels of the speed benchmark -------------------------------------------------

sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))
import sim_speed  # noqa: E402  (the benchmark's kernels and inputs)


@pytest.mark.parametrize("case", sim_speed.CASES, ids=[c.name for c in sim_speed.CASES])
def test_each_benchmark_kernel_ends_alike_and_the_shuffle_free_ones_in_lockstep(case, monkeypatch):
    grid, block, args = case.make(case.small)
    expected, expected_error, _ = run("never", case.kernel, grid, block, args, monkeypatch)
    got, error, outcome = run("always", case.kernel, grid, block, args, monkeypatch)
    assert error is None and expected_error is None
    assert_same(expected, got)
    uses_shuffles = "shfl" in case.kernel.py_func.__code__.co_names or "shuffle" in case.name
    assert (outcome == "lockstep") != uses_shuffles, outcome


# --- values keep the thread-by-thread engine's scalar types ----------------------------------

PROBE_VALUES = {
    lockstep.INT: [0, 1, -1, 5, -7, 2**20 + 1, 2**24 + 3, 2**31 - 1, -(2**31)],
    lockstep.FLOAT: [0.0, -0.0, 0.1, 1.5, -3.25, 2.0**24 + 2, 1e10, 3e38, 1e-40],
    lockstep.BOOL: [False, True],
    np.dtype(np.float32): [np.float32(v) for v in (0.1, -2.5, 3e38, 1e-40, 7.0, -0.0, 2.0**24 + 4)],
    np.dtype(np.float64): [np.float64(v) for v in (0.1, -2.5, 1e300, 7.0)],
    np.dtype(np.int32): [np.int32(v) for v in (0, 3, -7, 2**31 - 1, -(2**31))],
    np.dtype(np.uint32): [np.uint32(v) for v in (0, 3, 2**32 - 1)],
    np.dtype(np.int64): [np.int64(v) for v in (0, 3, -7, 2**40)],
}
OPERATIONS = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.lt,
    operator.eq,
    operator.and_,
    operator.xor,
]


@pytest.mark.parametrize("op", OPERATIONS, ids=[o.__name__ for o in OPERATIONS])
def test_each_operation_gives_each_thread_its_scalar_result(op, monkeypatch):
    """Every pair of scalar types: the lockstep block's result for a thread is, bit for bit and
    type for type, what the scalar operation gives (or the launch falls back)."""
    block = lockstep.Block.__new__(lockstep.Block)
    for left_tag, left_values in PROBE_VALUES.items():
        for right_tag, right_values in PROBE_VALUES.items():
            pairs = [(a, b) for a in left_values for b in right_values]
            block.lanes = len(pairs)
            left = lockstep.V(
                [(left_tag, np.array([a for a, _ in pairs], lockstep.storage(left_tag)), None)]
            )
            right = lockstep.V(
                [(right_tag, np.array([b for _, b in pairs], lockstep.storage(right_tag)), None)]
            )
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    got = block._binop(op, left, right, None)
            except lockstep.Fallback:
                continue  # the thread-by-thread engine runs such a launch
            for lane, (a, b) in enumerate(pairs):
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    expected = op(a, b)
                (tag, values, _) = next(g for g in got.groups if g[2] is None or g[2][lane])
                value = lockstep.scalar(tag, values[lane])
                assert type(value) is type(expected), (op, a, b, value, expected)
                assert np.array_equal(
                    np.array(value), np.array(expected), equal_nan=True
                ) and np.signbit(value) == np.signbit(expected), (op, a, b, value, expected)


# --- what falls back --------------------------------------------------------------------------

BLOCK = 64


@cuda.jit
def racy_reduction(x, out):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]  # no barrier between the rounds: a race
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def neighbours_sum_in_place(x):
    i = cuda.grid(1)
    if 0 < i < x.size:
        x[i] += x[i - 1]  # reads what another thread writes, no barrier: order decides


@cuda.jit
def loops_forever(out):
    i = cuda.grid(1)
    k = 0
    while k >= 0:
        k = (k + 1) % 7
    out[i] = k


@cuda.jit
def past_the_end(x, out):
    i = cuda.grid(1)
    out[i] = x[i + 1]


def test_a_race_between_the_rounds_ends_as_thread_by_thread(monkeypatch):
    x = np.arange(64 * 64, dtype=np.float32)
    args = (x, np.zeros(64, np.float32))
    expected, _, _ = run("never", racy_reduction, 64, BLOCK, args, monkeypatch)
    got, _, outcome = run("always", racy_reduction, 64, BLOCK, args, monkeypatch)
    assert outcome.startswith("fell back") and "share an element" in outcome
    assert_same(expected, got)


def test_threads_reading_what_others_write_fall_back_with_the_arrays_restored(monkeypatch):
    x = np.arange(5000, dtype=np.float64)
    expected, _, _ = run("never", neighbours_sum_in_place, 40, 128, (x,), monkeypatch)
    got, _, outcome = run("always", neighbours_sum_in_place, 40, 128, (x,), monkeypatch)
    assert outcome.startswith("fell back")
    assert_same(expected, got)  # the partial lockstep writes were undone before the engine ran


def test_an_index_out_of_bounds_is_the_engines_message(monkeypatch):
    x, out = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    _, expected, _ = run("never", past_the_end, 32, 128, (x, out), monkeypatch)
    _, error, outcome = run("always", past_the_end, 32, 128, (x, out), monkeypatch)
    assert outcome == "fell back: Fallback: an index out of bounds"
    assert error == expected and error[0] == "IndexOutOfBounds"
    assert "thread (127, 0, 0) of block (31, 0, 0)" in error[1]


def test_an_endless_loop_is_still_stopped_within_the_launch_limit():
    """In a child process, as test_sim.py's endless loop: a stopped launch leaves this process
    slower (see test_sim.test_an_endless_loop_is_stopped_with_its_line)."""
    code = "import test_sim_lockstep as t; t.endless_loop_is_stopped_within_the_limit()"
    env = {**os.environ, "GPU_COURSE_MODE": "simulator", lockstep.ENV: "always"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=HERE, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def endless_loop_is_stopped_within_the_limit():
    start = time.monotonic()
    with pytest.raises(sim.KernelLoops):
        sim.launch(loops_forever, 16, 256, np.zeros(4096, np.int64), loop_limit=2.0)
    assert time.monotonic() - start < 2.0 + 1.5  # a quarter in lockstep, the rest thread by thread
    assert lockstep.LAST["outcome"].startswith("fell back")


def test_small_launches_run_thread_by_thread_by_default(monkeypatch):
    monkeypatch.delenv(lockstep.ENV, raising=False)
    x = np.ones(1000, np.float32)
    lockstep.LAST["outcome"] = None
    past_the_end[1, 64](x, np.zeros(1000, np.float32))
    assert lockstep.LAST["outcome"] is None  # under MIN_THREADS: not tried
    big = np.ones(lockstep.MIN_THREADS * 2 + 1, np.float32)
    past_the_end[lockstep.MIN_THREADS * 2 // 128, 128](big, np.zeros_like(big))
    assert lockstep.LAST["outcome"] == "lockstep"


def test_never_turns_it_off(monkeypatch):
    monkeypatch.setenv(lockstep.ENV, "never")
    big = np.ones(lockstep.MIN_THREADS * 4 + 1, np.float32)
    lockstep.LAST["outcome"] = None
    past_the_end[lockstep.MIN_THREADS * 4 // 128, 128](big, np.zeros_like(big))
    assert lockstep.LAST["outcome"] is None
