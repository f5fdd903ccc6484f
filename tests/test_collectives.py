"""The collectives cost model against nccl-tests' definitions (doc/PERFORMANCE.md), the alpha-beta
formulas of Thakur, Rabenseifner and Gropp (2005), and the worked examples of the GPU chapter of
"How to Scale Your Model"; and one real measurement through gu.dist."""

import math

import pytest

import gpu_utils as gu

c = gu.collectives
H100 = gu.specs.get("H100-SXM")
NVLINK = H100.nvlink_bandwidth  # 450e9 B/s per direction
NODE_EGRESS = 8 * H100.network_bandwidth  # 8 x 400 Gb/s ConnectX-7 = 400e9 B/s


# --- nccl-tests -------------------------------------------------------------------------------

# doc/PERFORMANCE.md, "Summary": the factor busbw / algbw for each collective.
NCCL_TESTS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1,
    "reduce": lambda n: 1,
    "all_to_all": lambda n: (n - 1) / n,
}


@pytest.mark.parametrize("op", c.OPS)
@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_bus_bandwidth_factors_are_nccl_tests(op, n):
    assert c.bus_bandwidth_factor(op, n) == pytest.approx(NCCL_TESTS_FACTORS[op](n))


def test_bus_bandwidth_of_an_nccl_tests_line():
    # 8 GPUs, all-reduce, 1 GiB in 5.5 ms: algbw = S / t, busbw = algbw * 2 * 7 / 8
    nbytes, seconds = 2**30, 5.5e-3
    assert c.algorithm_bandwidth(nbytes, seconds) == pytest.approx(195.2e9, rel=1e-3)
    assert c.bus_bandwidth("all_reduce", nbytes, seconds, 8) == pytest.approx(341.6e9, rel=1e-3)


@pytest.mark.parametrize("op", c.OPS)
@pytest.mark.parametrize("n", [2, 5, 8])
def test_a_ring_without_latency_has_bus_bandwidth_equal_to_the_link(op, n):
    """What nccl-tests' factors are for: a perfect ring's busbw is the link speed, for any n."""
    link = 100e9
    seconds = c.ring_time(op, 1e9, n, alpha=0.0, beta=1 / link)
    assert c.bus_bandwidth(op, 1e9, seconds, n) == pytest.approx(link)


# --- alpha-beta formulas (Thakur, Rabenseifner and Gropp 2005) -------------------------------

ALPHA, BETA, S = 5e-6, 1 / 25e9, 64e6


@pytest.mark.parametrize(
    "op, n, expected",
    [
        ("all_gather", 8, 7 * ALPHA + 7 / 8 * S * BETA),  # ring allgather
        ("reduce_scatter", 8, 7 * ALPHA + 7 / 8 * S * BETA),
        ("all_reduce", 8, 14 * ALPHA + 14 / 8 * S * BETA),  # reduce-scatter + all-gather
        ("all_to_all", 4, 3 * ALPHA + 3 / 4 * S * BETA),  # pairwise exchange
        ("all_reduce", 1, 0.0),
    ],
)
def test_ring_times(op, n, expected):
    assert c.ring_time(op, S, n, alpha=ALPHA, beta=BETA) == pytest.approx(expected)


@pytest.mark.parametrize(
    "op, n, expected",
    [
        ("broadcast", 8, 3 * (ALPHA + S * BETA)),  # binomial tree
        ("reduce", 5, 3 * (ALPHA + S * BETA)),  # ceil(log2 5) = 3
        ("all_reduce", 8, 3 * (ALPHA + S * BETA)),  # recursive doubling
        ("all_gather", 8, 3 * ALPHA + 7 / 8 * S * BETA),  # recursive doubling
        ("reduce_scatter", 16, 4 * ALPHA + 15 / 16 * S * BETA),  # recursive halving
        ("all_to_all", 8, 3 * ALPHA + 3 * S / 2 * BETA),  # Bruck
    ],
)
def test_tree_times(op, n, expected):
    assert c.tree_time(op, S, n, alpha=ALPHA, beta=BETA) == pytest.approx(expected)


@pytest.mark.parametrize("n", [2, 3, 8])
def test_pipelined_ring_broadcast_picks_the_best_number_of_pieces(n):
    best = min((n - 2 + k) * (ALPHA + S * BETA / k) for k in range(1, 20000))
    assert c.ring_time("broadcast", S, n, alpha=ALPHA, beta=BETA) == pytest.approx(best, rel=1e-4)


def test_tree_wins_small_arrays_and_ring_wins_large_ones():
    small, large = 1e3, 1e9
    assert c.tree_time("all_reduce", small, 8, alpha=ALPHA, beta=BETA) < c.ring_time(
        "all_reduce", small, 8, alpha=ALPHA, beta=BETA
    )
    assert c.ring_time("all_reduce", large, 8, alpha=ALPHA, beta=BETA) < c.tree_time(
        "all_reduce", large, 8, alpha=ALPHA, beta=BETA
    )


# Rabenseifner's all-reduce as Thakur et al. (2005) state it: 2 lg p alpha + 2 (p-1)/p n beta.
@pytest.mark.parametrize("n", [2, 4, 8, 64, 1024])
@pytest.mark.parametrize("nbytes", [1.0, 1e3, 1e6, 1e9])
def test_rabenseifner_matches_the_published_cost_and_never_loses_to_the_ring(n, nbytes):
    published = 2 * math.log2(n) * ALPHA + 2 * (n - 1) / n * nbytes * BETA
    got = c.rabenseifner_time(nbytes, n, alpha=ALPHA, beta=BETA)
    assert got == pytest.approx(published)
    assert got <= c.ring_time("all_reduce", nbytes, n, alpha=ALPHA, beta=BETA) * (1 + 1e-12)
    # ... and it moves the ring's bytes, not recursive doubling's log2(n) whole arrays.
    assert c.rabenseifner_time(nbytes, n, alpha=0, beta=BETA) == pytest.approx(
        c.ring_time("all_reduce", nbytes, n, alpha=0, beta=BETA)
    )


def test_rabenseifner_equals_the_ring_on_two_ranks_and_refuses_other_counts():
    assert c.rabenseifner_time(S, 2, alpha=ALPHA, beta=BETA) == pytest.approx(
        c.ring_time("all_reduce", S, 2, alpha=ALPHA, beta=BETA)
    )
    assert c.rabenseifner_time(S, 1, alpha=ALPHA, beta=BETA) == 0.0
    with pytest.raises(ValueError, match="power-of-two"):
        c.rabenseifner_time(S, 6, alpha=ALPHA, beta=BETA)


def test_fit_recovers_alpha_and_beta():
    sizes = [2**k for k in range(10, 26, 2)]
    times = [c.ring_time("all_reduce", s, 4, alpha=ALPHA, beta=BETA) for s in sizes]
    alpha, beta = c.fit_alpha_beta("all_reduce", 4, sizes, times)
    assert alpha == pytest.approx(ALPHA, rel=1e-6) and beta == pytest.approx(BETA, rel=1e-6)
    noisy = [t * (1.1 if i % 2 else 0.9) for i, t in enumerate(times)]
    alpha, beta = c.fit_alpha_beta("all_reduce", 4, sizes, noisy)
    assert alpha == pytest.approx(ALPHA, rel=0.3) and beta == pytest.approx(BETA, rel=0.3)


def test_fit_never_returns_a_negative_latency():
    sizes = [1e3, 1e6, 1e9]
    times = [s * BETA * 1.5 - 1e-6 * (s == 1e3) for s in sizes]  # bandwidth only, noisy
    alpha, beta = c.fit_alpha_beta("all_gather", 2, sizes, times)
    assert alpha >= 0 and beta > 0


# --- GPU clusters ("How to Scale Your Model", How to Think About GPUs) -------------------------


def test_pop_quiz_1_all_gather_inside_an_h100_node():
    # AllGather(bf16[1024, 16384]) over 8 H100s: (2 B F (8 - 1)) / (8 x 450e9) = "65us"
    nbytes = 2 * 1024 * 16384
    assert c.estimate_time("all_gather", nbytes, 8) == pytest.approx(65.2e-6, rel=2e-3)


def test_all_reduce_costs_twice_an_all_gather_and_reduce_scatter_the_same():
    nbytes = 1e9
    ag = c.estimate_time("all_gather", nbytes, 8)
    assert c.estimate_time("reduce_scatter", nbytes, 8) == pytest.approx(ag)
    assert c.estimate_time("all_reduce", nbytes, 8) == pytest.approx(2 * ag)
    assert c.estimate_time("all_reduce", nbytes, 64) == pytest.approx(
        2 * c.estimate_time("all_gather", nbytes, 64)
    )


def test_quiz_4_question_5_two_nodes_are_bound_by_nvlink():
    # "At the node level B * 7 / (8 * 450e9) = B / 514e9, beyond B / (2 * 400e9) = B / 800e9."
    nbytes = 1e9
    assert c.estimate_time("all_gather", nbytes, 16) == pytest.approx(nbytes * 7 / 8 / NVLINK)


def test_pop_quiz_3_all_gather_over_a_scalable_unit_is_bound_by_the_network():
    # 256 GPUs = 32 nodes: T = 2 D F (32 - 1) / (32 x 400e9)
    nbytes = 2 * 8192 * 32768
    expected = nbytes * 31 / (32 * 400e9)
    assert c.estimate_time("all_gather", nbytes, 256) == pytest.approx(expected)
    assert c.estimate_time("all_gather", nbytes, 256) > c.estimate_time("all_gather", nbytes, 8)


def test_all_to_all_inside_a_node_and_across_two():
    # The book's B is the whole array over N GPUs; nccl-tests' S is one rank's share, B / N.
    b = 8e9
    inside = c.estimate_time("all_to_all", b / 8, 8)
    assert inside == pytest.approx(b * 7 / (64 * NVLINK))  # B (N - 1) / (W N^2)
    across = c.estimate_time("all_to_all", b / 16, 16)
    assert across == pytest.approx(b / (4 * NODE_EGRESS))  # B (M - 1) / (M^2 W_node), M = 2


def test_broadcast_moves_the_array_once_per_level():
    nbytes = 1e9
    assert c.estimate_time("broadcast", nbytes, 8) == pytest.approx(nbytes / NVLINK)
    assert c.estimate_time("reduce", nbytes, 32) == pytest.approx(nbytes / NODE_EGRESS)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        (dict(op="all_gather", nbytes=1e6, n_gpus=12), "whole number of 8-GPU nodes"),
        (dict(op="all_gather", nbytes=1e6, n_gpus=4, gpu="T4"), "no NVLink"),
        (dict(op="gather", nbytes=1e6, n_gpus=4), "unknown collective"),
        (dict(op="all_gather", nbytes=1e6, n_gpus=0), "positive integer"),
    ],
)
def test_estimates_refuse_what_they_cannot_answer(kwargs, text):
    with pytest.raises(ValueError, match=text):
        c.estimate_time(**kwargs)


def test_one_gpu_needs_no_communication():
    assert c.estimate_time("all_reduce", 1e9, 1) == 0.0
    assert math.isclose(c.ring_time("all_gather", 1e9, 1, alpha=1, beta=1), 0.0)


# --- measuring --------------------------------------------------------------------------------


def test_measure_times_the_real_collective_like_nccl_tests():
    rows = c.measure("all_gather", [1000, 40_000], 2, iters=2, repeats=1)
    assert [r.nbytes for r in rows] == [1000, 40_000]  # whole float32 elements, even count
    for row in rows:
        assert row.backend == "gloo" and row.world_size == 2 and row.seconds > 0
        assert row.busbw == pytest.approx(row.algbw / 2)
        assert "all_gather" in str(row) and "GB/s" in str(row)


def test_measure_rounds_sizes_to_whole_elements_per_rank():
    rows = c.measure("reduce_scatter", [100], 3, iters=1, repeats=1)
    assert rows[0].nbytes == 96  # 24 float32 elements, a multiple of 3


# --- reference measurements recorded on GPUs -------------------------------------------------


def _write_recording(folder, name, results):
    import json

    record = {
        "device": "NVIDIA H100 80GB HBM3",
        "date": "2025-01-01",
        "command": "x",
        "results": results,
    }
    (folder / f"{name}.json").write_text(json.dumps(record))


ALL_REDUCE_ROW = dict(op="all_reduce", nbytes=2**20, world_size=8, backend="nccl", seconds=1e-5)


def test_recorded_reads_the_first_recording_that_holds_the_collective(tmp_path, monkeypatch):
    monkeypatch.setattr(gu.reference, "DATA_DIR", tmp_path)
    _write_recording(tmp_path, c.RECORDINGS[0], [dict(ALL_REDUCE_ROW, op="all_gather")])
    _write_recording(tmp_path, c.RECORDINGS[1], [ALL_REDUCE_ROW])
    rows, caption = c.recorded("all_reduce")
    assert rows == [c.Measurement(**ALL_REDUCE_ROW)]
    assert "NVIDIA H100 80GB HBM3, 2025-01-01" in caption and "Backend: nccl." in caption


def test_recorded_without_the_collective_says_so_instead_of_failing(tmp_path, monkeypatch):
    monkeypatch.setattr(gu.reference, "DATA_DIR", tmp_path)
    assert c.recorded("all_reduce") == ([], gu.reference.missing(c.RECORDINGS[0], c.BENCHMARK))
    _write_recording(tmp_path, c.RECORDINGS[0], [dict(ALL_REDUCE_ROW, op="broadcast")])
    rows, text = c.recorded("all_reduce")
    assert rows == [] and "hold no all_reduce results" in text and c.BENCHMARK in text
    _write_recording(tmp_path, c.RECORDINGS[0], [dict(ALL_REDUCE_ROW, extra=1)])
    rows, text = c.recorded("all_reduce")
    assert rows == [] and "Record it again" in text


# --- the chapter's pictures -------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_the_ring_pictures_follow_the_algorithm(n):
    pictures = gu.collective_pictures
    states = pictures.ring_all_reduce_steps(n)
    assert len(states) == 2 * (n - 1) + 1
    after_reduce_scatter = pictures.complete_blocks(states[n - 1][1])
    for rank in range(n):  # rank r owns the full sum of block r + 1
        assert after_reduce_scatter[rank].tolist() == [b == (rank + 1) % n for b in range(n)]
    assert pictures.complete_blocks(states[-1][1]).all()


@pytest.mark.parametrize("op", gu.collective_pictures.OPS)
def test_the_before_and_after_pictures_match_the_definitions(op):
    _, after, names = gu.collective_pictures.before_after(op, 3)
    complete = gu.collective_pictures.complete_blocks(after)
    expected = {
        "broadcast": [[False] * 3] * 3,
        "reduce": [[True] * 3, [False] * 3, [False] * 3],
        "all_reduce": [[True] * 3] * 3,
        "all_gather": [[False] * 3] * 3,
        "reduce_scatter": [[r == b for b in range(3)] for r in range(3)],
        "all_to_all": [[False] * 3] * 3,
    }[op]
    assert complete.tolist() == expected
    if op == "all_to_all":  # rank r ends with block r of every rank
        assert names == [[0, 0, 0], [1, 1, 1], [2, 2, 2]]
        assert [sorted(next(iter(c)) for c in row) for row in after] == [[0, 1, 2]] * 3


# --- latency at cluster scale (NCCL's own model) ------------------------------------------------


def test_latency_follows_nccl_tuning_ring_and_tree():
    lat = c.NCCL_LATENCY
    assert (lat["base"], lat["NVLink"], lat["network"]) == (8.4e-6, 3.4e-6, 14e-6)
    # an all-gather inside a node: 7 NVLink hops
    assert c.latency("all_gather", 8) == pytest.approx(8.4e-6 + 7 * 3.4e-6)
    # across 4 nodes of 8: 31 steps, 3 of them between nodes
    assert c.latency("reduce_scatter", 32) == pytest.approx(8.4e-6 + 28 * 3.4e-6 + 3 * 14e-6)
    # an all-reduce over 128 nodes, one GPU each: the ring's 254 network hops lose to the
    # tree's 2 log2(128) = 14, at the tree's own figures (no base latency, NCCL's baseLat)
    tree_lat = c.NCCL_TREE_LATENCY
    assert (tree_lat["base"], tree_lat["NVLink"], tree_lat["network"]) == (0.0, 4e-6, 14e-6)
    ring = 8.4e-6 + 254 * 14e-6
    tree = 14 * 14e-6
    assert c.latency("all_reduce", 128, gpus_per_node=1) == pytest.approx(min(ring, tree))
    # 6 nodes of 8: the tree's 2 (7 NVLink + floor(log2 6) = 2 network) hops, NCCL's log2i
    assert c.latency("all_reduce", 48) == pytest.approx(2 * (7 * 4e-6 + 2 * 14e-6))
    assert c.latency("all_reduce", 1) == 0.0


def test_cluster_time_adds_latency_per_message_to_the_bandwidth_time():
    nbytes = 3.6e9
    bandwidth = c.estimate_time("all_gather", nbytes, 1536, gpu="A100-SXM4-80GB")
    one = c.cluster_time("all_gather", nbytes, 1536, gpu="A100-SXM4-80GB")
    many = c.cluster_time("all_gather", nbytes, 1536, gpu="A100-SXM4-80GB", messages=12)
    assert one == pytest.approx(bandwidth + c.latency("all_gather", 1536))
    assert many - one == pytest.approx(11 * c.latency("all_gather", 1536))
    # the existing bandwidth-only estimate is unchanged: latency is only ever added
    assert c.estimate_time("all_gather", nbytes, 8) == pytest.approx(nbytes * 7 / 8 / NVLINK)
    with pytest.raises(ValueError, match="messages"):
        c.cluster_time("all_gather", nbytes, 8, messages=0)
