"""benchmarks/ch13_serving.py: it refuses on the simulator without --device cpu and writes
nothing, its shapes are the chapter's (Llama 2 7B's parameters as published), and a CPU sweep at
a tiny shape runs the same code the GPU run uses and sets each step beside its bound."""

import math

import ch13_serving  # benchmarks/ch13_serving.py, on the path through pyproject.toml
import pytest

import gpu_utils as gu

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator-side checks")


def test_it_refuses_on_the_simulator_and_writes_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_COURSE_REFERENCE_OUT", str(tmp_path))
    assert ch13_serving.main([]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_unknown_shapes_are_named(capsys):
    assert ch13_serving.main(["--shapes", "Llama 9B", "--device", "cpu"]) == 2
    assert "unknown shape(s) ['Llama 9B']" in capsys.readouterr().err


def test_the_7b_config_has_llama_2_7b_s_published_parameters():
    config = ch13_serving.llama_config("Llama 2 7B", context=512)
    decoder = ch13_serving.decoder_of(config)
    # 6.74B: Touvron et al. 2023 (Llama 2), Table 1 and meta-llama/Llama-2-7b-hf
    assert decoder.params == pytest.approx(6.74e9, rel=2e-3)
    assert config.seq_len == 513 and config.n_kv_heads == 32


def test_a_cpu_sweep_times_each_batch_and_sets_it_beside_its_bound():
    rows = ch13_serving.decode_sweep(
        "125M", None, batches=(1, 2), context=8, device="cpu", dtype="float32", repeats=2,
        copy_bw=10e9, graphs=False,
    )  # fmt: skip
    assert [r.batch for r in rows] == [1, 2]
    decoder = ch13_serving.decoder_of(ch13_serving.llama_config("125M", 8))
    for r in rows:
        assert r.graph_s is None and r.eager_s > 0 and r.tokens_per_s == r.batch / r.eager_s
        kv = r.batch * 8 * decoder.kv_bytes_per_token(4)
        assert r.bytes_moved == pytest.approx(decoder.streamed_params * 4 + kv)
        assert r.bound_s == r.copy_bound_s == pytest.approx(r.bytes_moved / 10e9)


def test_with_a_gpu_spec_the_bound_is_decode_step_s():
    spec = gu.specs.get("H100-SXM")
    rows = ch13_serving.decode_sweep(
        "125M", spec, batches=(1,), context=8, device="cpu", dtype="float32", repeats=1,
        copy_bw=None, graphs=False,
    )  # fmt: skip
    decoder = ch13_serving.decoder_of(ch13_serving.llama_config("125M", 8))
    want = gu.inference.decode_step(decoder, spec, 1, 8, 4, 4)
    assert rows[0].bound_s == want.seconds and rows[0].bound == want.bound
    assert math.isnan(rows[0].copy_bound_s)


def test_the_knee_is_where_doubling_stops_paying():
    def row(batch, seconds):
        return ch13_serving.DecodeRow("x", batch, 1, seconds, None, 1.0, "memory", 1.0, 1.0)

    rows = [row(1, 1.0), row(2, 1.0), row(4, 1.1), row(8, 2.0)]  # 1, 2, 3.6, 4 tokens/s
    assert ch13_serving.knee(rows) == 4
    assert ch13_serving.knee(rows[:3]) is None
