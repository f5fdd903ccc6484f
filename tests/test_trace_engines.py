"""gu.trace and its race check on the course's simulator (gpu_utils.sim, issue 29): every launch
that tests/test_trace.py and tests/test_trace_races.py trace runs on numba-cuda's simulator and on
the course's engine (GPU_COURSE_SIM=course), and the two reports must be equal, field by field
(counts per line and per array, races with their threads and lines, divergence, barriers); the
tests' own assertions then check the course engine's report. The counts recorded against Nsight Compute on the H100 hold on both engines."""

import sys
from pathlib import Path

import numpy as np
import pytest

import gpu_utils as gu
from gpu_utils import reference
from gpu_utils.sim import tracing

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
