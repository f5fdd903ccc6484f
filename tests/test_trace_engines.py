"""gu.trace and its race check on the course's simulator (gpu_utils.sim, issue 29): every launch
that tests/test_trace.py and tests/test_trace_races.py trace runs on numba-cuda's simulator and on
the course's engine (GPU_COURSE_SIM=course), and the two reports must be equal, field by field
(counts per line and per array, races with their threads and lines, divergence, barriers); the
tests' own assertions then check the course engine's report. The counts recorded against Nsight Compute on the H100 hold on both engines."""

import sys
from pathlib import Path

import numpy as np
import pytest

import gpu_utils as gu  # before numba: it makes numba load its simulator
from gpu_utils.facts import recorded as reference
from gpu_utils.sim import tracing

# isort: split
from numba import cuda

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator engines only")

import test_trace  # noqa: E402
from test_trace import *  # noqa: E402, F403  (each test runs again here, on both engines)
from test_trace_races import *  # noqa: E402, F403

_ANALYZE = gu.trace.analyze


def _copies(args):
    """Copies of the array arguments; one array passed twice stays one array."""
    made: dict[int, np.ndarray] = {}
    return [made.setdefault(id(a), a.copy()) if isinstance(a, np.ndarray) else a for a in args]


@pytest.fixture(autouse=True)
def _both_engines(monkeypatch):
    """gu.trace.analyze runs the launch on both engines, asserts equal reports, and returns the
    course engine's report (its launch's outputs in the caller's arrays). Outputs are not
    compared here: several of these kernels race or read uninitialised shared memory on purpose
    (tests/test_sim.py compares outputs of well-defined kernels)."""
    ran = []
    course_run = tracing.run

    def counted(*args, **kwargs):
        done = course_run(*args, **kwargs)
        ran.append(done is not None)
        return done

    monkeypatch.setattr(tracing, "run", counted)

    def analyze(kernel, griddim, blockdim, *args, **kwargs):
        monkeypatch.setenv("GPU_COURSE_SIM", "numba")
        oracle = _copies(args)
        failure = None
        try:
            expected = _ANALYZE(kernel, griddim, blockdim, *oracle, **kwargs)
        except Exception as error:
            failure = error
        monkeypatch.setenv("GPU_COURSE_SIM", "course")
        try:
            if failure is not None:
                with pytest.raises(type(failure)):
                    _ANALYZE(kernel, griddim, blockdim, *_copies(args), **kwargs)
                raise failure
            report = _ANALYZE(kernel, griddim, blockdim, *args, **kwargs)
        finally:
            monkeypatch.setenv("GPU_COURSE_SIM", "numba")
        assert report == expected, f"course:\n{report}\nnumba:\n{expected}"
        return report

    monkeypatch.setattr(gu.trace, "analyze", analyze)
    monkeypatch.setattr(test_trace, "analyze", analyze)
    yield
    _RAN.extend(ran)


_RAN: list[bool] = []


def test_zz_the_course_engine_ran_the_traces():
    """The launches above ran on the course's engine (not a fallback to numba's), except those
    whose kernel has no source (test_trace_races' kernels made from a cell)."""
    if not _RAN:
        pytest.skip("runs after the tests above (not selected)")
    print("course engine ran", sum(_RAN), "of", len(_RAN))
    assert sum(_RAN) >= len(_RAN) - 3, (sum(_RAN), len(_RAN))


sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def test_the_h100_reference_counts_hold():
    """benchmarks/trace_vs_ncu.py's kernels give the counts recorded with Nsight Compute (36
    counts on the H100), on both engines (the fixture compares them)."""
    recording = reference.load("trace_vs_ncu")
    if recording is None:
        pytest.skip("no trace_vs_ncu recording")
    import trace_vs_ncu

    expected: dict = {}
    for row in recording.results:
        expected.setdefault(row["kernel"], {})[row["metric"]] = row["trace"]
    assert len(recording.results) == 36
    for name, metrics in expected.items():
        counts = trace_vs_ncu.trace_counts(name)
        assert {m: counts[m] for m in metrics} == metrics, name


def test_a_lane_that_raises_in_a_traced_warp_kernel_is_named():
    """tests/test_warp.py's traced case, on both engines (the fixture runs each): the error of
    lane 5 reaches the caller with the thread's coordinates."""
    from test_warp import index_error_before_shuffle

    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\]"):
        gu.trace.analyze(index_error_before_shuffle, 1, 32, *args)


def test_the_course_engine_names_the_thread_and_line_of_a_traced_error(monkeypatch):
    from test_warp import index_error_before_shuffle

    monkeypatch.setenv("GPU_COURSE_SIM", "course")
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    line = index_error_before_shuffle.py_func.__code__.co_firstlineno + 3
    with pytest.raises(IndexError, match=rf"thread \(5, 0, 0\) of block \(0, 0, 0\), line {line}"):
        _ANALYZE(index_error_before_shuffle, 1, 32, *args)


def test_without_an_observer_nothing_is_wrapped():
    """The engine's default: the kernel gets the caller's numpy arrays themselves."""
    from gpu_utils import sim

    seen = []

    def keep(a, out):
        seen.append(type(a))
        out[0] = a[0]

    x, out = np.ones(4, np.float32), np.zeros(1, np.float32)
    sim.launch(keep, 1, 1, x, out)
    assert seen == [np.ndarray] and out[0] == 1.0


def test_an_observer_sees_every_access_with_its_thread_and_phase():
    from numba import cuda

    from gpu_utils import sim
    from gpu_utils.sim.observe import LOAD, STORE, Observer

    @cuda.jit
    def shift(x, out):
        s = cuda.shared.array(4, np.float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        cuda.syncthreads()
        out[t] = s[(t + 1) % 4]

    class Log(Observer):
        def start(self, launch):
            self.launch, self.phase, self.log = launch, {}, []
            launch.args = tuple(self.wrap(a, f"arg{k}") for k, a in enumerate(launch.args))

        def shared(self, site, array, dynamic, frame):
            return self.wrap(array, "s")

        def access(self, array, index, kind):
            t = self.launch.module.threadIdx.x
            self.log.append((array.token, int(index), kind, t, self.phase.get(t, 0)))

        def released(self, kind, sites):
            for i in sites:
                self.phase[i] = self.phase.get(i, 0) + 1

    log = Log()
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    sim.launch(shift, 1, 4, x, out, observer=log)
    np.testing.assert_array_equal(out, [1, 2, 3, 0])
    assert ("arg0", 2, LOAD, 2, 0) in log.log and ("s", 2, STORE, 2, 0) in log.log
    assert ("s", 0, LOAD, 3, 1) in log.log and ("arg1", 3, STORE, 3, 1) in log.log
    assert len(log.log) == 16


def _viz_cases():
    import test_viz as v

    x = np.arange(35, dtype=np.float32).reshape(5, 7)

    @cuda.jit
    def fail_before_barrier(out):
        i = cuda.threadIdx.x
        if i % 2 == 1:
            raise ValueError(f"odd thread {i}")
        cuda.syncthreads()
        out[cuda.grid(1)] = i

    return {
        "vector add": (v.vector_add, 3, 4, v._vectors(10)),
        "no guard (errors kept)": (v.vector_add_no_guard, 3, 4, v._vectors(10)),
        "grid-stride": (v.copy_grid_stride, 2, 8, (np.arange(40, dtype=np.float32),) * 2),
        "2-D swapped": (v.copy_2d_swapped, (3, 1), (4, 4), (x, x.copy())),
        "atomics": (v.sum_atomic, 2, 16, (np.ones(20, np.float32), np.zeros(1, np.float32))),
        "slice stores": (v.row_fill, 1, 4, (np.zeros((3, 5), dtype=np.float32),)),
        "error before a barrier": (fail_before_barrier, 2, 8, (np.zeros(16, np.float32),)),
    }


@pytest.mark.parametrize("case", list(_viz_cases()))
def test_thread_map_gives_the_same_map_on_both_engines(case, monkeypatch):
    """gu.viz.thread_map (chapter 03) records through the same executor: its keep_going (a
    thread's error ends that thread only) runs on the course engine too."""
    kernel, grid, block, args = _viz_cases()[case]
    course_runs = []
    course_run = tracing.run
    monkeypatch.setattr(
        tracing, "run", lambda *a, **k: course_runs.append(1) or course_run(*a, **k)
    )
    maps = {}
    for engine in ("numba", "course"):
        monkeypatch.setenv("GPU_COURSE_SIM", engine)
        maps[engine] = gu.viz.thread_map(kernel, grid, block, *_copies(args), plot=False)
    numba, course = maps["numba"], maps["course"]
    assert course_runs == [1]
    assert str(course) == str(numba) and course.error == numba.error
    assert [a.name for a in course.arrays] == [a.name for a in numba.arrays]
    for mine, theirs in zip(course.arrays, numba.arrays, strict=True):
        for field in ("writes", "block", "thread", "unwritten"):
            np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field))


def _notebook_traces(path: str) -> dict:
    """Run ``path``'s code cells (magics left out) with every ``gu.trace.analyze`` and
    ``gu.viz.thread_map`` on both engines; the counts of traces, of equal reports, of those run
    on the course engine, and the same for thread maps."""
    import json
    import linecache
    import os

    counts = {"traces": 0, "equal": 0, "course engine": 0, "same error": 0}
    counts.update({"thread maps": 0, "equal maps": 0})
    thread_map = gu.viz.thread_map

    def both_maps(kernel, griddim, blockdim, *args, plot=True):
        counts["thread maps"] += 1
        os.environ["GPU_COURSE_SIM"] = "numba"
        try:
            numba = thread_map(kernel, griddim, blockdim, *args, plot=False)
        finally:
            os.environ["GPU_COURSE_SIM"] = "course"
        try:
            course = thread_map(kernel, griddim, blockdim, *args, plot=plot)
        finally:
            os.environ.pop("GPU_COURSE_SIM")
        same = str(course) == str(numba) and all(
            np.array_equal(getattr(m, f), getattr(t, f))
            for m, t in zip(course.arrays, numba.arrays, strict=True)
            for f in ("writes", "block", "thread", "unwritten")
        )
        counts["equal maps"] += same
        if not same:
            print(f"different map: {kernel}\n{numba}\n--- course\n{course}")
        return course

    course_run = tracing.run

    def counted(*args, **kwargs):
        done = course_run(*args, **kwargs)
        counts["course engine"] += done is not None
        return done

    def analyze(kernel, griddim, blockdim, *args, **kwargs):
        counts["traces"] += 1
        results = {}
        for engine, arguments in (("numba", _copies(args)), ("course", args)):
            os.environ["GPU_COURSE_SIM"] = engine
            try:
                results[engine] = _ANALYZE(kernel, griddim, blockdim, *arguments, **kwargs)
            except Exception as error:
                results[engine] = error
            finally:
                os.environ.pop("GPU_COURSE_SIM")
        numba, course = results["numba"], results["course"]
        if isinstance(numba, Exception) or isinstance(course, Exception):
            counts["same error"] += type(numba) is type(course)
            raise course if isinstance(course, Exception) else numba
        counts["equal"] += numba == course
        if numba != course:
            print(f"different: {kernel}\n{numba}\n--- course\n{course}")
        return course

    tracing.run, gu.trace.analyze, gu.viz.thread_map = counted, analyze, both_maps
    notebook = Path(path).resolve()
    os.chdir(notebook.parent)
    namespace: dict = {"__name__": "__main__"}
    try:
        for k, cell in enumerate(json.loads(notebook.read_text())["cells"]):
            if cell["cell_type"] != "code":
                continue
            lines = "".join(cell["source"]).splitlines()
            code = "\n".join(s for s in lines if not s.lstrip().startswith(("%", "!"))) + "\n"
            name = f"/tmp/ipykernel_0/{notebook.stem}_cell_{k}.py"  # as ipykernel: in linecache
            linecache.cache[name] = (len(code), None, code.splitlines(True), name)
            try:
                exec(compile(code, name, "exec"), namespace)
            except Exception as error:
                print(f"cell {k}: {type(error).__name__}: {str(error)[:120]}")
    finally:
        tracing.run, gu.trace.analyze, gu.viz.thread_map = course_run, _ANALYZE, thread_map
    return counts


import os  # noqa: E402

if __name__ == "__main__":
    # the chapters: GPU_COURSE_MODE=simulator python tests/test_trace_engines.py notebooks/0[3-6]_*
    here = Path.cwd()
    for path in sys.argv[1:]:
        print(path, _notebook_traces(str(here / path)))
        os.chdir(here)


@cuda.jit
def add_everywhere(out):
    x, y, z = cuda.grid(3)
    out[0] += x + y + z  # every thread of every block: a race across blocks


@pytest.mark.parametrize("grid", [(2, 2), (2, 2, 2), (3, 1, 2)])
def test_races_across_blocks_of_a_multidimensional_grid_name_the_same_blocks(grid):
    """numba's simulator runs blocks with x slowest (np.ndindex), the course engine x fastest:
    the trace hands blocks to the race check in numba's order, so the same pair is named (the
    fixture compares the reports)."""
    report = gu.trace.analyze(add_everywhere, grid, (2, 1, 1), np.zeros(1, np.float32))
    assert {race.across_blocks for race in report.races} == {False, True}
