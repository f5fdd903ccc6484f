"""The roofline model (gu.roofline): ridge points from gu.specs, attainable FLOP/s, the plot."""

import itertools

import matplotlib
import pytest

import gpu_utils as gu

matplotlib.use("Agg")
roofline = gu.roofline


def test_ridge_point_is_peak_flops_over_peak_bandwidth():
    spec = gu.specs.get("H100-SXM")
    assert roofline.ridge_point("H100-SXM") == pytest.approx(67e12 / 3350e9)  # 20 FLOP/byte
    assert roofline.ridge_point("H100-SXM", "bf16") == pytest.approx(
        spec.bf16_dense_flops / spec.hbm_bandwidth
    )
    assert roofline.ridge_point("T4") == pytest.approx(8.1e12 / 320e9)


def test_attainable_is_the_lower_roof():
    h100 = roofline.roof("H100-SXM")
    assert roofline.attainable(1.0, "H100-SXM") == pytest.approx(3350e9)  # bandwidth roof
    assert roofline.attainable(1000.0, "H100-SXM") == pytest.approx(67e12)  # compute roof
    assert h100.attainable(h100.ridge_point) == pytest.approx(h100.peak_flops)
    assert roofline.bound(1.0, "H100-SXM") == "memory-bound"
    assert roofline.bound(50.0, "H100-SXM") == "compute-bound"


def test_devices_can_be_given_by_their_numbers():
    cpu = roofline.roof(("laptop CPU", 1e12, 100e9))
    assert cpu.name == "laptop CPU" and cpu.ridge_point == pytest.approx(10.0)
    assert roofline.roof(cpu) is cpu
    with pytest.raises(ValueError, match="name, peak FLOP/s, peak bytes/s"):
        roofline.roof(("two", 1.0))
    with pytest.raises(ValueError, match="must be positive"):
        roofline.roof(("broken", 0, 1e9))


def test_missing_precision_is_explained():
    with pytest.raises(ValueError, match="T4 has no bf16 peak"):
        roofline.roof("T4", "bf16")
    with pytest.raises(KeyError, match="known GPUs"):
        roofline.roof("Voodoo2")


def test_roofs_from_specs_carry_their_sources():
    assert "datasheet" in roofline.roof("H100-SXM").source


def test_arithmetic_intensity_of_common_kernels():
    n = 1 << 20
    assert roofline.arithmetic_intensity(flops=n, bytes=12 * n) == pytest.approx(1 / 12)  # a+b
    assert roofline.KernelPoint("copy", 0, 8 * n).intensity == 0
    with pytest.raises(ValueError, match="bytes moved must be positive"):
        roofline.arithmetic_intensity(1.0, 0)


def test_plot_draws_each_roof_and_places_kernels():
    kernels = [
        roofline.KernelPoint("vector add", flops=1e6, bytes=12e6),
        roofline.KernelPoint("matmul", flops=2e9, bytes=12e6, seconds=1e-3),
    ]
    ax = roofline.plot(["T4", "H100-SXM", ("CPU", 1e12, 1e11)], kernels=kernels)
    labels = [line.get_label() for line in ax.get_legend().get_lines()]
    assert labels == ["T4 fp32", "H100-SXM fp32", "CPU"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    points = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(points) == 2
    unmeasured, measured = points
    x, y = unmeasured.get_data()
    assert y[0] == pytest.approx(gu.roofline.attainable(x[0], "T4"))  # on the first roof
    assert measured.get_data()[1][0] == pytest.approx(2e12)  # achieved: 2e9 FLOP in 1 ms
    assert "Williams" in ax.get_title()
    import matplotlib.pyplot as plt

    plt.close("all")


def test_ridge_points_are_labelled_with_their_value():
    import matplotlib.pyplot as plt

    bf16 = roofline.roof("H100-SXM", "bf16")
    ax = roofline.plot([roofline.roof("H100-SXM"), bf16])
    texts = [t.get_text() for t in ax.texts]
    assert f"{roofline.ridge_point('H100-SXM'):.3g}" in texts  # "20"
    assert f"{bf16.ridge_point:.3g}" in texts  # "295"
    diamonds = [line for line in ax.get_lines() if line.get_marker() == "D"]
    assert [d.get_data()[0][0] for d in diamonds] == pytest.approx(
        [roofline.ridge_point("H100-SXM"), bf16.ridge_point]
    )
    assert "(fp32)" not in ax.get_title()  # mixed precisions: the names say which
    plt.close("all")


def test_direct_labels_replace_the_legend_and_do_not_overlap():
    import matplotlib.pyplot as plt

    close = [("A", 275e12, 1.2e12), ("B", 197e12, 0.8e12), ("C", 459e12, 2.7e12)]
    ax = roofline.plot(close, direct_labels=True, ridge_labels=False)
    assert ax.get_legend() is None and ax.texts
    heights = sorted(t.get_position()[1] for t in ax.texts if t.get_text() in ("A", "B", "C"))
    assert len(heights) == 3
    assert all(upper / lower >= 2.1 * 0.999 for lower, upper in itertools.pairwise(heights))
    plt.close("all")
