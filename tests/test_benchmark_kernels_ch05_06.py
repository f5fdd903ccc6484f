"""Chapters 05 and 06 register their solution kernels with benchmarks/kernels.py, with the issue's
targets on the kernels they apply to (tests/test_benchmark_kernels.py runs every registered kernel
at its tiny size on the simulator)."""

import kernels  # benchmarks/kernels.py, on the path through pyproject.toml


def test_reductions_and_matmuls_are_registered_with_their_targets():
    found = {b.name: b for b in kernels.discover(tiny=True)}
    reductions = ["reduce_sequential", "reduce_first_add", "reduce_shuffle_atomic"]
    matmuls = ["matmul_naive", "matmul_tiled", "matmul_register_tiled_64"]
    assert set(reductions + matmuls) <= set(found)
    assert (
        found["reduce_grid_stride"].ceiling == "copy" and found["reduce_grid_stride"].target == 0.8
    )
    best = found["matmul_register_tiled_128"]
    assert best.ceiling == "sgemm" and best.target == 0.5
    assert all(found[name].target is None for name in reductions + matmuls)
    assert all(found[name].ceiling == "sgemm" for name in matmuls)
