"""benchmarks/ch03_streams.py: the gu.streams measurements it
calls check their results before timing (run at tiny sizes on the simulator, where the times
themselves mean nothing)."""

import ch03_streams  # benchmarks/ch03_streams.py, on the path through pyproject.toml
import pytest

import gpu_utils as gu

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator-side checks")


def test_the_measurements_run_and_check_their_results():
    assert ch03_streams.NAME == "ch03_streams"
    result = gu.streams.measure_overlap(300, [1, 3], streams=2, rounds=2, repeat=1)
    assert [row["chunks"] for row in result["rows"]] == [1, 3]
    assert set(result["stages_s"]) == {"copy in", "kernel", "copy out"}
    assert gu.streams.measure_launches(3, repeat=1)["launches"] == 3
    issue = gu.streams.measure_issue(300, calls=3, streams=2, repeat=1)
    assert set(issue["host_s_per_call"]) == {"copy in", "kernel", "copy out"}
    assert set(issue["copies"]) == {"copy in", "copy out"}
    assert all(isinstance(c["asynchronous"], bool) for c in issue["copies"].values())
