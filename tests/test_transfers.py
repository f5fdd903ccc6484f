"""gu.transfers: PCIe figures from the PCI-SIG formula, bandwidth estimates, and the GPU
measurement's code path (exercised on the simulator; its timings there mean nothing)."""

import re

import numpy as np
import pytest

import gpu_utils as gu

transfers = gu.transfers


def test_pcie_bandwidth_follows_the_specification_formula():
    assert transfers.pcie_bandwidth("4.0") == pytest.approx(16 * 16e9 * 128 / 130 / 8)
    assert transfers.pcie_bandwidth("4.0") / 1e9 == pytest.approx(31.5, abs=0.05)
    assert transfers.pcie_bandwidth("5.0") / 1e9 == pytest.approx(63.0, abs=0.05)
    assert transfers.pcie_bandwidth("3.0", lanes=8) / 1e9 == pytest.approx(7.88, abs=0.01)
    for generation, (_, source) in transfers.PCIE.items():
        assert "PCI-SIG" in source and generation in source


def test_every_gpu_is_paired_with_the_link_its_datasheet_gives():
    assert set(transfers.HOST_LINKS) == set(gu.specs.names())  # a new GPU needs its link here
    generations = {name: link.generation for name, link in transfers.HOST_LINKS.items()}
    assert generations == {
        "T4": "3.0",
        "L4": "4.0",
        "A100-SXM4-80GB": "4.0",
        "H100-SXM": "5.0",
        "H200": "5.0",
        "B200": "5.0",
    }
    for link in transfers.HOST_LINKS.values():
        assert link.lanes == 16 and f"Gen{link.generation[0]}" in link.source
    assert transfers.host_link("T4").label == "PCIe 3.0 x16"


def test_datasheet_figures_are_both_directions_before_encoding():
    h100 = transfers.host_link("H100-SXM")
    assert h100.datasheet_figure / 1e9 == pytest.approx(128)  # "PCIe Gen5: 128GB/s"
    assert "128GB/s" in h100.source
    assert h100.bandwidth / 1e9 == pytest.approx(63.0, abs=0.05)  # one direction, after encoding
    assert h100.bandwidth == pytest.approx(h100.datasheet_figure / 2 * 128 / 130)
    assert transfers.host_link("A100-SXM4-80GB").datasheet_figure / 1e9 == pytest.approx(64)


def test_the_module_docstring_states_the_computed_ratios():
    ratios = transfers.memory_to_link_ratios()
    assert ratios["T4"] == pytest.approx(320e9 / transfers.pcie_bandwidth("3.0"))
    claim = re.search(r"(\d+) to (\d+) times faster", " ".join(transfers.__doc__.split()))
    assert claim, "the docstring no longer states the range"
    stated = (int(claim.group(1)), int(claim.group(2)))
    assert stated == (round(min(ratios.values()), -1), round(max(ratios.values()), -1))


def test_bad_links_get_clear_errors():
    with pytest.raises(ValueError, match=r"use one of 3\.0, 4\.0, 5\.0"):
        transfers.pcie_bandwidth("6")
    with pytest.raises(ValueError, match="lanes"):
        transfers.pcie_bandwidth("4.0", lanes=3)
    with pytest.raises(ValueError, match="lanes"):
        transfers.HostLink("4.0", 32, "nowhere")
    with pytest.raises(ValueError, match="use one of T4, L4"):
        transfers.host_link("V100")
    with pytest.raises(ValueError, match="positive"):
        transfers.estimate(1, 1, 1, link_bandwidth=0, memory_bandwidth=1)


def test_estimate_for_vector_add_is_dominated_by_the_copies():
    n = 2**24
    h100 = gu.specs.get("H100-SXM")
    est = transfers.estimate(
        8 * n,
        12 * n,
        4 * n,
        link_bandwidth=transfers.pcie_bandwidth("5.0"),
        memory_bandwidth=h100.hbm_bandwidth,
    )
    assert est.to_device == pytest.approx(8 * n / transfers.pcie_bandwidth("5.0"))
    assert est.kernel == pytest.approx(12 * n / 3350e9)
    # copies and kernel move the same 12n bytes, so their ratio is the bandwidths' ratio
    ratio = (est.to_device + est.to_host) / est.kernel
    assert ratio == pytest.approx(h100.hbm_bandwidth / transfers.pcie_bandwidth("5.0"))
    assert est.transfer_share > 0.98


def test_measure_refuses_on_the_simulator():
    if gu.mode == "gpu":
        pytest.skip("on a GPU, measure runs")
    with pytest.raises(RuntimeError, match="needs a GPU"):
        transfers.measure([1024])


def test_the_measurement_code_runs_end_to_end_on_the_simulator():
    rows = transfers._measure([300], repeat=1, target="simulator")
    steps = [row["step"] for row in rows]
    assert steps == [
        "to device, pinned",
        "to device, pageable",
        "kernel",
        "to host, pinned",
        "to host, pageable",
        "kernel with NumPy arguments",
    ]
    assert all(row["n"] == 300 and row["median_s"] > 0 for row in rows)
    assert rows[2]["bytes"] == 3 * 4 * 300


@pytest.mark.gpu
def test_measure_on_a_gpu_gives_plausible_rates():
    rows = transfers.measure([2**22], repeat=5)
    by_step = {row["step"]: row for row in rows}
    copy = by_step["to device, pinned"]["gb_per_s"]
    assert copy > 0 and np.isfinite(by_step["kernel"]["median_s"])
    assert by_step["kernel"]["gb_per_s"] > copy  # on-device memory beats the host link


# --- transfer charts --------------------------------------------------------------------------


def test_time_breakdown_draws_one_stacked_bar_per_estimate():
    link = gu.transfers.pcie_bandwidth("4.0")
    estimates = {
        gpu: gu.transfers.estimate(8e6, 12e6, 4e6, link_bandwidth=link, memory_bandwidth=bw)
        for gpu, bw in (("A", 2e12), ("B", 3e12))
    }
    figure = transfers.time_breakdown(estimates, title="t")
    (ax,) = figure.axes
    assert len(ax.patches) == 6  # copy in, kernel, copy out for each
    expected = [f"{e.transfer_share:.0%} copying" for e in estimates.values()]
    assert [t.get_text().strip() for t in ax.texts] == expected == ["98% copying", "99% copying"]


STEPS = (
    "to device, pinned",
    "to device, pageable",
    "kernel",
    "to host, pinned",
    "to host, pageable",
    "kernel with NumPy arguments",
)


def test_transfer_times_draws_measurement_rows():
    rows = [  # the shape of gu.transfers.measure's rows (tests/test_transfers.py runs it)
        {"n": n, "step": step, "bytes": 4 * n, "median_s": t, "q1_s": 0.9 * t, "q3_s": 1.2 * t}
        | {"gb_per_s": 4 * n / t / 1e9}
        for n in (2**16, 2**20)
        for step, t in zip(
            STEPS, np.array([1.0, 2.0, 0.05, 1.0, 2.0, 6.0]) * n * 4 / 25e9, strict=True
        )
    ]
    references = {"PCIe 4.0 x16": 3.15e10, "GPU memory": 3e12}
    figure = transfers.transfer_times(rows, references=references, title="x")
    times, rates = figure.axes
    assert len(times.containers) == 6  # one errorbar series per step
    assert len(rates.get_lines()) == 5 + 2  # the NumPy-argument launch has no rate; two references
    assert "PCIe 4.0 x16: 32 GB/s" in [t.get_text() for t in rates.texts]
    with pytest.raises(ValueError, match="no measurements"):
        transfers.transfer_times([])
