"""gu.training and gu.train_script (chapter 11): the corpus, the data pipeline, the timing and
memory helpers, the noise scale, and data parallelism under torchrun with 2 local processes."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gpu_utils as gu
from gpu_utils.many_gpus import train_script

T = gu.training


def test_corpus_is_python_own_text_and_deterministic():
    text = T.corpus()
    assert text.startswith("The Zen of Python, by Tim Peters")
    assert "Beautiful is better than ugly." in text
    assert len(text) > 20_000 and text == T.corpus()
    assert all(len(d) > 0 for d in T.documents())


def test_encode_decode_round_trip_bytes():
    text = "naïve café ±"
    tokens = T.encode(text)
    assert tokens.dtype == torch.int64 and len(tokens) == len(text.encode()) > len(text)
    assert int(tokens.max()) < 256
    assert T.decode(tokens) == text


def test_split_keeps_order():
    data = torch.arange(100)
    train, val = T.split(data, 0.1)
    assert torch.equal(torch.cat([train, val]), data) and len(val) == 10


def test_get_batch_windows_and_targets():
    data = torch.arange(1000)
    x, y = T.get_batch(data, 6, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (6, 16)
    assert torch.equal(y, x + 1)  # consecutive windows of arange: the next token
    again, _ = T.get_batch(data, 6, 16, torch.Generator().manual_seed(0))
    assert torch.equal(x, again)


def test_slow_and_window_datasets_agree():
    text = T.corpus()[:5000]
    slow = T.SlowTokenizingDataset(text, 32, repeat=2)
    fast = T.WindowDataset(T.encode(text), 32)
    assert len(slow) == len(fast)
    for i in (0, 17, len(fast) - 1):
        assert all(torch.equal(a, b) for a, b in zip(slow[i], fast[i], strict=True))


def test_packing_has_no_padding_and_padding_is_counted():
    docs = ["a" * 10, "b" * 3, "c" * 40]
    rows, waste = T.pad_documents(docs, 8)
    pieces = [9, 2, 3, 9, 9, 9, 9, 8]  # tokens per row: cut every seq_len, up to seq_len + 1
    assert rows.shape == (len(pieces), 9)
    assert math.isclose(waste, sum(9 - p for p in pieces) / rows.numel())
    packed = T.pack(docs, 8)
    stream = T.encode(chr(T.SEP).join(docs))
    assert packed.shape == (len(stream) // 9, 9)
    assert torch.equal(packed.flatten(), stream[: packed.numel()])


def test_measure_and_compare_report_ratios():
    calls = []
    result = T.measure(lambda: calls.append(1), tokens_per_step=10, warmup=2, repeat=3)
    assert len(calls) == 5 and len(result.step_times) == 3
    assert result.tokens_per_s == pytest.approx(10 / result.median)
    both = T.compare({"a": (lambda: None, 10), "b": (lambda: sum(range(20000)), 10)}, repeat=3)
    table = T.speedup_table(both, "a")
    assert "1.00x" in table and "b" in table
    assert "tokens/s" in str(both["a"])


def test_plot_speedups_draws_bars():
    import matplotlib

    matplotlib.use("Agg")
    results = {
        "base": T.Throughput("base", 10, (1.0, 1.1, 0.9)),
        "fast": T.Throughput("fast", 10, (0.5, 0.5, 0.6)),
    }
    ax = T.plot_speedups(results, "base")
    widths = [patch.get_width() for patch in ax.patches]
    assert widths == pytest.approx([1.0, 2.0])


def test_saved_tensor_bytes_counts_activations_exactly():
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8)

    def fn():
        return torch.tanh(x @ w).sum()  # saves x (for w's gradient) and tanh's output

    nbytes, out = T.saved_tensor_bytes(fn, exclude=[w])
    assert nbytes == 2 * 4 * 8 * 4
    out.backward()
    assert w.grad is not None


def test_checkpointing_keeps_less_and_gives_the_same_gradients():
    model = gu.gpt.build(seed=0, seq_len=16, d_model=16, n_layers=2, n_heads=2)
    x, y = T.get_batch(T.encode(T.corpus()), 4, 16, torch.Generator().manual_seed(0))
    plain, (_, loss) = T.saved_tensor_bytes(lambda: model(x, y), exclude=model.parameters())
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    kept = []
    inside, (_, loss2) = T.saved_tensor_bytes(
        lambda: T.forward_checkpointed(model, x, y, kept), exclude=model.parameters()
    )
    loss2.backward()
    assert len(kept) == 2 and inside + sum(k.untyped_storage().nbytes() for k in kept) < plain
    assert torch.allclose(loss, loss2)
    assert all(
        torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, model.parameters(), strict=True)
    )


def test_noise_scale_recovers_a_known_case():
    # |G_B|^2 = |G|^2 + tr(Sigma)/B exactly for |G|^2 = 2, tr(Sigma) = 40
    b_simple, g2, trace = T.noise_scale(2 + 40 / 4, 2 + 40 / 64, 4, 64)
    assert (b_simple, g2, trace) == pytest.approx((20.0, 2.0, 40.0))


def test_progress_falls_back_to_a_text_bar_on_stdout(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    bar = T.progress(range(5), desc="t")
    bar.set_postfix(loss="1.0")
    assert list(bar) == list(range(5))
    out = capsys.readouterr()
    assert "5/5" in out.out and out.err == ""  # stdout: no error-coloured box in a notebook


def test_progress_outside_a_notebook_is_tqdm_text_on_stdout(capsys):
    assert not T._in_notebook_with_widgets()  # pytest is no Jupyter kernel
    assert list(T.progress(range(3), desc="t")) == [0, 1, 2]
    out = capsys.readouterr()
    assert "3/3" in out.out and out.err == ""


def test_progress_in_a_jupyter_kernel_with_ipywidgets_is_the_notebook_widget(monkeypatch):
    import types

    import tqdm.notebook

    class WidgetBar:  # stands in for tqdm.notebook.tqdm, which needs a live kernel to draw
        def __init__(self, iterable, total=None, desc=""):
            self.iterable = iterable

    shell = types.SimpleNamespace(config={"IPKernelApp": {}})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setattr(tqdm.notebook, "tqdm", WidgetBar)
    assert isinstance(T.progress(range(3)), WidgetBar)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # widgets absent: the text form
    assert not T._in_notebook_with_widgets()
    assert not isinstance(T.progress(range(3), desc="t"), WidgetBar)


def test_decode_can_drop_a_cut_multibyte_character():
    tokens = T.encode("café")[:-1]  # the last character's second byte is missing
    assert T.decode(tokens).endswith("\ufffd")
    assert T.decode(tokens, errors="ignore") == "caf"


def test_quiet_profiler_log_hides_kinetos_lines_and_passes_others_on(capfd):
    with T.quiet_profiler_log():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            torch.ones(4).sum()
        os.write(2, b"USDT:2026-11-24 03:00:15 3583:3583 SyncActivityProfilerHandler.cpp:52] x\n")
        os.write(2, b"a real warning\n")
    err = capfd.readouterr().err
    assert "USDT" not in err and "profiler_st" not in err
    assert "a real warning" in err


def test_an_out_of_memory_counts_as_does_not_fit():
    budget = 1000

    def fake_measure(batch):  # 100 bytes per example; the device fails at 8 and more
        if batch >= 8:
            raise T.OutOfMemory("CUDA out of memory. Tried to allocate 2.00 MiB")
        return 100 * batch

    assert T.bytes_or_oom(fake_measure, 5) == 500 and T.fits(fake_measure, 5, budget)
    assert T.bytes_or_oom(fake_measure, 8) is None
    assert not T.fits(fake_measure, 8, budget)  # an out-of-memory below the budget: no fit
    assert not T.fits(fake_measure, 7, 600)  # over the budget, no error: no fit either
    with pytest.raises(ValueError):  # any other error is the learner's to see
        T.bytes_or_oom(lambda b: int("x"), 1)


# --- the training script ------------------------------------------------------------------------


def test_train_one_process_learns():
    result = train_script.train(0, 1, train_script.Config(steps=15, batch_size=8))
    losses = result["losses"]
    assert len(losses) == 15 and losses[-1] < losses[0] - 0.5
    assert abs(losses[0] - math.log(256)) < 0.5


def test_train_under_gu_dist_matches_one_process_with_the_whole_batch():
    config = train_script.Config(steps=4, batch_size=4)
    ranks = gu.dist.run(train_script.train, 2, config, backend="gloo", timeout=240)
    assert ranks[0]["checksum"] == ranks[1]["checksum"]
    one = train_script.train(0, 1, train_script.Config(steps=4, batch_size=8))
    assert ranks[0]["losses"] == pytest.approx(one["losses"], abs=1e-4)


def test_torchrun_with_two_local_processes(tmp_path):
    out = tmp_path / "result.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    command += ["--standalone", "-m", "gpu_utils.many_gpus.train_script"]
    command += ["--steps", "4", "--batch-size", "4", "--out", str(out)]
    done = subprocess.run(
        command,
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["world_size"] == 2 and len(result["losses"]) == 4
    single = train_script.main(["--steps", "4", "--batch-size", "8"])
    assert result["losses"] == pytest.approx(single["losses"], abs=1e-4)


def test_profile_table_fits_100_columns_and_agrees_with_torchs_table():
    with T.quiet_profiler_log(), torch.profiler.profile() as prof:
        x = torch.randn(64, 64)
        for _ in range(3):
            x = torch.nn.functional.gelu(x @ x) / 64
    table = T.profile_table(prof, row_limit=4)
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[0].split()[:1] == ["Name"] and "# of Calls" in lines[0]
    torch_total = prof.key_averages().table(row_limit=1).strip().splitlines()[-1]
    assert lines[-1] == torch_total  # "Self CPU time total: ..." as torch prints it
    averages = {a.key: a for a in prof.key_averages()}
    rows = [line.split() for line in lines[2:-2]]
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=4)
    theirs = [line.split() for line in table.splitlines()[3:7]]
    assert len(rows) == 4
    for (name, calls, total, self_cpu, share), their in zip(rows, theirs, strict=True):
        # torch's columns: name, self %, self, total %, total, average, calls
        assert [name, calls, total, self_cpu, share] == [their[i] for i in (0, 6, 4, 2, 1)]
    assert averages["aten::mm"].count == 3
    by_count = T.profile_table(prof, sort_by="count", row_limit=2).splitlines()[2].split()
    assert int(by_count[1]) == max(a.count for a in averages.values())


def test_profile_table_refuses_bad_options_in_words():
    with T.quiet_profiler_log(), torch.profiler.profile() as prof:
        torch.ones(2).sum()
    with pytest.raises(ValueError, match="sort_by must be one of"):
        T.profile_table(prof, sort_by="cuda_time")
    with pytest.raises(ValueError, match="row_limit must be"):
        T.profile_table(prof, row_limit=0)
