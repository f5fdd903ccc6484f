"""gu.processors: a source on every figure, peaks that follow from the published per-unit
figures, and the lookups the chapter uses."""

import dataclasses

import pytest

import gpu_utils as gu
from gpu_utils.facts import processors

FIGURES = {
    "cpu": [
        "cores",
        "base_clock_hz",
        "fma_units_per_core",
        "fp32_lanes",
        "amx_bf16_ops_per_cycle",
        "amx_int8_ops_per_cycle",
        "memory_channels",
        "memory_transfers_per_s",
    ],
    "tpu": [
        "year",
        "tensorcores",
        "mxu_count",
        "mxu_shape",
        "bf16_flops",
        "int8_ops",
        "fp8_flops",
        "hbm_bytes",
        "hbm_bandwidth",
        "clock_hz",
    ],
}


@pytest.mark.parametrize("name", processors.names())
def test_every_figure_has_a_source(name):
    spec = processors.get(name)
    for field in dataclasses.fields(spec):
        if field.name in ("name", "architecture", "sources"):
            continue
        assert field.name in FIGURES[spec.kind], f"new field {field.name}: add it to FIGURES"
        if getattr(spec, field.name) is not None:
            assert spec.sources.get(field.name), f"{name}.{field.name} has no source"


def test_the_cpu_peaks_follow_from_the_per_core_figures():
    cpu = processors.get("Xeon-8480+")
    # 56 cores x 2.0 GHz x 2 FMA units x 16 lanes x 2 FLOP = 7.168 TFLOP/s
    assert cpu.fp32_flops == pytest.approx(7.168e12)
    assert cpu.bf16_flops == pytest.approx(56 * 2.0e9 * 1024)
    assert cpu.int8_ops == pytest.approx(2 * cpu.bf16_flops)
    assert cpu.memory_bandwidth == pytest.approx(8 * 4800e6 * 8)  # 307.2 GB/s
    assert cpu.peak_flops("fp32") == cpu.fp32_flops
    assert cpu.peak_flops("fp8") is None


def test_tpu_v1_peak_is_its_array_at_its_clock():
    v1 = processors.get("TPU-v1")
    rows, cols = v1.mxu_shape
    macs_per_cycle = rows * cols * v1.mxu_count  # 65,536
    assert macs_per_cycle * 2 * v1.clock_hz == pytest.approx(v1.int8_ops, rel=0.01)


@pytest.mark.parametrize("name", ["TPU-v4", "TPU-v5e", "TPU-v5p"])
def test_128_wide_mxus_imply_a_plausible_clock(name):
    tpu = processors.get(name)
    rows, cols = tpu.mxu_shape
    clock = tpu.bf16_flops / (2 * rows * cols * tpu.mxu_count)
    assert 0.9e9 < clock < 2.0e9, f"{name}: implied clock {clock / 1e9:.2f} GHz"


def test_v6e_mxu_count_is_marked_doubtful_because_it_implies_3_5_ghz():
    tpu = processors.get("TPU-v6e")
    rows, cols = tpu.mxu_shape
    implied = tpu.bf16_flops / (2 * rows * cols * tpu.mxu_count)
    assert implied > 3e9  # no TPU runs at 3.5 GHz: the published count leaves something out
    assert tpu.clock_hz is None
    assert "DOUBTFUL" in tpu.sources["mxu_count"]


# Google Cloud TPU docs, 'TPU7x (Ironwood)': table comparing v5p, v6e and TPU7x.
TPU7X_TABLE = {  # name: (bf16 TFLOPs, fp8 TFLOPs, HBM GiB, HBM GB/s)
    "TPU-v5p": (459, 459, 95, 2765),
    "TPU-v6e": (918, 918, 32, 1638),
    "TPU7x": (2307, 4614, 192, 7380),
}


@pytest.mark.parametrize("name", TPU7X_TABLE)
def test_tpus_match_googles_tpu7x_table(name):
    bf16, fp8, hbm_gib, bandwidth = TPU7X_TABLE[name]
    tpu = processors.get(name)
    assert tpu.peak_flops("bf16") == bf16 * 1e12
    assert tpu.peak_flops("fp8") == fp8 * 1e12
    assert tpu.hbm_bytes == hbm_gib * 2**30  # capacities binary, as in gu.specs
    assert tpu.hbm_bandwidth == bandwidth * 1e9  # rates decimal


def test_capacities_follow_the_convention_of_gu_specs():
    for name in processors.TPUS:
        assert processors.get(name).hbm_bytes % 2**30 == 0, name
    assert gu.specs.get("H100-SXM").hbm_bytes == 80 * 2**30


def test_tpu_generations_are_in_order_and_bandwidth_grows():
    tpus = [processors.get(n) for n in processors.TPUS]
    assert [t.year for t in tpus] == sorted(t.year for t in tpus)
    later = [t for t in tpus if t.name != "TPU-v1"]
    assert all(t.peak_flops("bf16") and t.memory_bandwidth for t in later)
    assert processors.get("TPU7x").peak_flops("fp8") == 2 * processors.get("TPU7x").bf16_flops


def test_lookups_and_errors():
    assert processors.names()[0] == "Xeon-8480+"
    with pytest.raises(KeyError, match="known processors"):
        processors.get("TPU-v9")
    with pytest.raises(ValueError, match="unknown dtype"):
        processors.get("TPU-v4").peak_flops("fp64")
    with pytest.raises(dataclasses.FrozenInstanceError):
        processors.get("TPU-v4").bf16_flops = 1
