"""gu.specs: the required GPUs and fields, and figures consistent with the sources they cite."""

import dataclasses
import re

import pytest

from gpu_utils.facts import specs

REQUIRED = ["T4", "L4", "A100-SXM4-80GB", "H100-SXM", "H200", "B200"]
FIELDS = [
    "sm_count",
    "hbm_bytes",
    "hbm_bandwidth",
    "l2_bytes",
    "smem_per_sm_bytes",
    "fp32_flops",
    "bf16_dense_flops",
    "fp8_dense_flops",
    "nvlink_bandwidth",
    "network_bandwidth",
    "compute_capability",
]


def test_required_gpus_are_listed():
    assert set(REQUIRED) <= set(specs.names())


@pytest.mark.parametrize("name", REQUIRED)
def test_every_figure_has_a_source(name):
    spec = specs.get(name)
    for field in FIELDS:
        assert hasattr(spec, field)
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if field.name in ("name", "architecture", "sources") or value is None:
            continue
        assert spec.sources.get(field.name), f"{name}.{field.name} has no source"


def test_specs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        specs.get("T4").sm_count = 1


def _printed(source: str) -> float:
    """The figure a source quotes in parentheses, e.g. '(1,979 TFLOPS)' -> 1.979e15."""
    number, unit = re.search(r"\(([\d.,]+) (TFLOPS|PFLOPS|GB/s|TB/s)\)", source).groups()
    scale = {"TFLOPS": 1e12, "PFLOPS": 1e15, "GB/s": 1e9, "TB/s": 1e12}[unit]
    return float(number.replace(",", "")) * scale


@pytest.mark.parametrize("name", REQUIRED)
def test_dense_rates_are_half_the_printed_sparse_rates(name):
    spec = specs.get(name)
    for field in ("tf32_dense_flops", "fp16_dense_flops", "bf16_dense_flops", "fp8_dense_flops"):
        source = spec.sources.get(field, "")
        if "with sparsity; dense = printed / 2" in source:
            assert getattr(spec, field) == pytest.approx(_printed(source) / 2, rel=1e-3)


@pytest.mark.parametrize("name", REQUIRED)
def test_nvlink_is_per_direction(name):
    spec = specs.get(name)
    if spec.nvlink_bandwidth is not None:
        assert spec.nvlink_bandwidth == pytest.approx(
            _printed(spec.sources["nvlink_bandwidth"]) / 2
        )


@pytest.mark.parametrize("name", REQUIRED)
def test_network_is_the_nic_rate_in_bytes(name):
    spec = specs.get(name)
    if spec.network_bandwidth is not None:
        gbits = float(re.search(r"; (\d+) Gb/s = ", spec.sources["network_bandwidth"]).group(1))
        assert spec.network_bandwidth == pytest.approx(gbits * 1e9 / 8)


def test_chips_without_units_say_none():
    t4 = specs.get("T4")
    assert t4.bf16_dense_flops is None and t4.fp8_dense_flops is None
    assert t4.nvlink_bandwidth is None
    assert specs.get("A100-SXM4-80GB").fp8_dense_flops is None
    assert specs.get("H100-SXM").peak_flops("bf16") == specs.get("H100-SXM").bf16_dense_flops
    with pytest.raises(ValueError, match="unknown dtype"):
        specs.get("H100-SXM").peak_flops("fp64")


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="H100-SXM"):
        specs.get("H100")


@pytest.mark.parametrize(
    "device_name, expected",
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H200", "H200"),
        ("Tesla T4", "T4"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA L40S", None),
        ("NVIDIA H100 PCIe", None),
    ],
)
def test_match_device_names(device_name, expected):
    found = specs.match(device_name)
    assert (found.name if found else None) == expected
