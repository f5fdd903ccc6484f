"""gu.transfers: PCIe figures from the PCI-SIG formula, bandwidth estimates, and the GPU
measurement's code path (exercised on the simulator; its timings there mean nothing)."""

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


def test_bad_links_get_clear_errors():
    with pytest.raises(ValueError, match=r"use one of 3\.0, 4\.0, 5\.0"):
        transfers.pcie_bandwidth("6")
    with pytest.raises(ValueError, match="lanes"):
        transfers.pcie_bandwidth("4.0", lanes=3)
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
