"""gu.streams (chapter 03): the timeline model against schedules worked by hand."""

import itertools
import math

import pytest

import gpu_utils as gu

S = gu.streams


def test_one_stream_is_the_sum_of_all_operations():
    for chunks in (1, 4, 8):
        result = S.schedule(8, 6, 4, chunks=chunks, streams=1)
        assert result.total == pytest.approx(18)
        ops = sorted(result.ops, key=lambda op: op.start)
        for before, after in itertools.pairwise(ops):  # nothing overlaps
            assert after.start >= before.end - 1e-12


def test_two_chunks_by_hand():
    # t_in, t_c, t_out = 8, 6, 4 in 2 chunks: 4, 3, 2 each. Copy-in engine: 0-4, 4-8.
    # Kernels: 4-7, 8-11. Copy-out: 7-9, 11-13. Total 13 = 9/1 ... = 18/2 + 1 x 8/2.
    result = S.schedule(8, 6, 4, chunks=2, streams=2)
    spans = {(op.kind, op.chunk): (op.start, op.end) for op in result.ops}
    assert spans == {
        ("copy in", 0): (0, 4),
        ("kernel", 0): (4, 7),
        ("copy out", 0): (7, 9),
        ("copy in", 1): (4, 8),
        ("kernel", 1): (8, 11),
        ("copy out", 1): (11, 13),
    }
    assert result.total == 13


def test_one_copy_engine_serialises_the_two_directions():
    # 2 chunks of (2, 1, 2) each on 2 streams. Shared copy engine: in0 0-2, in1 2-4 (issued
    # before out0, and ready), kernel0 2-3, kernel1 4-5, out0 4-6, out1 6-8. Two engines: 7.
    one = S.schedule(4, 2, 4, chunks=2, streams=2, copy_engines=1)
    two = S.schedule(4, 2, 4, chunks=2, streams=2, copy_engines=2)
    copies = sorted((op.start, op.end) for op in one.ops if op.kind != "kernel")
    assert copies == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert one.total == 8 and two.total == 7


@pytest.mark.parametrize("stages", [(8, 6, 4), (2, 10, 3), (1, 2, 9), (5, 5, 5)])
@pytest.mark.parametrize("chunks", [1, 2, 3, 8, 32])
def test_enough_streams_and_two_engines_follow_the_pipeline_formula(stages, chunks):
    got = S.schedule(*stages, chunks=chunks, streams=max(3, chunks)).total
    fill, slowest = sum(stages) / chunks, max(stages)
    assert got == pytest.approx(fill + (chunks - 1) * slowest / chunks)
    assert got == pytest.approx(S.pipeline_time(*stages, chunks))


def test_many_chunks_approach_the_slowest_stage():
    totals = [S.schedule(8, 6, 4, chunks=k, streams=4).total for k in (4, 16, 64, 256)]
    assert totals == sorted(totals, reverse=True)
    assert totals[-1] == pytest.approx(8, rel=0.01) and totals[-1] > 8


def test_two_streams_are_between_the_bound_and_the_sum():
    for k in (2, 4, 8, 16):
        got = S.schedule(8, 6, 4, chunks=k, streams=2).total
        assert S.pipeline_time(8, 6, 4, k) - 1e-9 <= got <= 18


def test_pageable_memory_does_not_overlap():
    assert S.schedule(8, 6, 4, chunks=8, streams=4, pinned=False).total == pytest.approx(18)


def test_launch_overhead_and_one_graph_launch():
    # 1 chunk, one stream, 3 calls of overhead 0.5 each: copy in issued at 0.5 runs 0.5-1.5,
    # kernel issued at 1.0 runs 1.5-2.5, copy out issued at 1.5 runs 2.5-3.5.
    assert S.schedule(1, 1, 1, launch_overhead=0.5).total == pytest.approx(3.5)
    # tiny work, many chunks: the host's calls set the pace (24 calls x 1.0)
    calls = S.schedule(0.8, 0.8, 0.8, chunks=8, streams=4, launch_overhead=1.0)
    assert calls.total == pytest.approx(24 + 0.1)
    graph = S.schedule(0.8, 0.8, 0.8, chunks=8, streams=4, launch_overhead=1.0, graph=True)
    assert graph.total == pytest.approx(1.0 + S.pipeline_time(0.8, 0.8, 0.8, 8))


def test_bad_arguments_are_refused():
    for kwargs in ({"chunks": 0}, {"streams": 1.5}, {"copy_engines": 3}, {"launch_overhead": -1}):
        with pytest.raises(ValueError):
            S.schedule(1, 1, 1, **kwargs)
    with pytest.raises(ValueError):
        S.schedule(math.nan, 1, 1)


def test_plots_draw(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    ax = S.timeline(S.schedule(8, 6, 4, chunks=4, streams=3), unit="ms")
    assert len(ax.patches) >= 12
    ax = S.total_vs_chunks(8, 6, 4, [1, 2, 4], four_streams={"streams": 4})
    assert len(ax.lines) == 3


@pytest.mark.parametrize("chunks", [3, 4, 8, 16, 32])
def test_three_streams_are_enough_for_the_formula(chunks):
    for stages in ((8, 6, 4), (2, 10, 3), (1, 2, 9)):
        got = S.schedule(*stages, chunks=chunks, streams=3).total
        assert got == pytest.approx(S.pipeline_time(*stages, chunks))


def test_one_overhead_per_kind_of_call():
    per_kind = {"copy in": 0.5, "kernel": 0.25, "copy out": 0.5}
    # 1 chunk: copy in issued 0.5 runs 0.5-1.5, kernel issued 0.75 runs 1.5-2.5, copy out 2.5-3.5
    assert S.schedule(1, 1, 1, launch_overhead=per_kind).total == pytest.approx(3.5)
    # tiny work: the host sets the pace, 8 x (0.5 + 0.25 + 0.5) = 10, then the last copy
    calls = S.schedule(0.8, 0.8, 0.8, chunks=8, streams=4, launch_overhead=per_kind)
    assert calls.total == pytest.approx(10 + 0.1)
    assert S.schedule(1, 1, 1, launch_overhead=dict.fromkeys(S.KINDS, 0.5)).total == 3.5
    with pytest.raises(ValueError, match="one figure per kind"):
        S.schedule(1, 1, 1, launch_overhead={"kernel": 0.1})


H100_MEDIANS_MS = {1: 2.978, 2: 2.216, 4: 1.939, 8: 2.612, 16: 5.074, 32: 9.729}
H100_STREAMS = {  # benchmarks/ch03_streams.py on an H100 (reference_data/ch03_streams.json)
    "stages_s": {"copy in": 1.4723e-3, "kernel": 0.5084e-3, "copy out": 1.2789e-3},
    "rows": [
        {"chunks": k, "streams": 1 if k == 1 else 3, "median_s": t / 1e3}
        for k, t in H100_MEDIANS_MS.items()
    ],
}


def test_without_a_host_cost_the_model_misses_the_h100_run():
    """The model of the first H100 run had no host cost: 1.58 ms for 16 chunks, 5.07 measured."""
    model = S.predict(H100_STREAMS, 0.0)
    worst = max(
        abs(m / r["median_s"] - 1) for m, r in zip(model, H100_STREAMS["rows"], strict=True)
    )
    assert worst > 0.5


def test_the_fitted_issue_cost_reproduces_every_h100_row():
    cost = S.fit_issue_cost(H100_STREAMS)
    assert 50e-6 < cost < 150e-6  # about 0.1 ms per call: three calls per chunk
    for model, row in zip(S.predict(H100_STREAMS, cost), H100_STREAMS["rows"], strict=True):
        assert model == pytest.approx(row["median_s"], rel=0.2)
    stages = list(H100_STREAMS["stages_s"].values())  # also with the stage times as measured
    for row in H100_STREAMS["rows"]:
        got = S.schedule(
            *stages, chunks=row["chunks"], streams=row["streams"], launch_overhead=cost
        )
        assert got.total == pytest.approx(row["median_s"], rel=0.2)
    # the fit is a fit: it recovers a cost that generated the rows
    made = {"stages_s": H100_STREAMS["stages_s"], "rows": []}
    for row, total in zip(H100_STREAMS["rows"], S.predict(H100_STREAMS, 40e-6), strict=True):
        made["rows"].append({**row, "median_s": total})
    assert S.fit_issue_cost(made) == pytest.approx(40e-6, rel=0.02)
    with pytest.raises(ValueError, match="needs a measure_overlap result"):
        S.fit_issue_cost({"rows": []})


def test_the_stored_h100_file_is_reproduced_with_its_fitted_cost():
    recording = gu.reference.load("ch03_streams")
    if recording is None:
        pytest.skip("no ch03_streams reference recorded")
    overlap = recording.results["overlap"]
    cost = S.fit_issue_cost(overlap)
    for model, row in zip(S.predict(overlap, cost), overlap["rows"], strict=True):
        assert model == pytest.approx(row["median_s"], rel=0.2)
