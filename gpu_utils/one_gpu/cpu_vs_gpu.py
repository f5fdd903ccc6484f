"""The same two operations on one CPU core, all CPU cores and the GPU, across sizes (chapter 01).

The two operations bracket what a neural network spends its time on:

* ``add``: ``out = x + y`` on float32 vectors of n elements. It moves 12 bytes (two reads, one
  write) for 1 FLOP, so memory bandwidth decides its speed.
* ``matmul``: ``C = A @ B`` on float32 n x n matrices: 2 n^3 FLOPs on 3 n^2 numbers, so for large
  n arithmetic decides its speed.

:func:`sweep` times them with ``gu.bench`` (result checked first) and returns plain rows (dicts),
which :func:`plot` draws and ``benchmarks/ch01_cpu_vs_gpu.py`` records with ``gu.reference.save``.
Backends: NumPy as you would call it; PyTorch on the CPU limited to 1 thread and using every
core; PyTorch on the GPU (only in GPU mode). Every row states the CPU threads it used
(``threads``; ``None`` where NumPy's BLAS chooses, usually one per core). Each point is the median
of ``repeat`` timed calls after ``warmup`` untimed ones, so one disturbed call on a busy machine
moves the spread (``q1`` to ``q3``), not the point.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from .. import runtime
from ..bench import bench
from .backends import torch_device

__all__ = ["BACKENDS", "OPS", "backends_here", "plot", "sweep", "threads_used", "work"]

OPS = ("add", "matmul")
FLOAT32_BYTES = 4


def _cpu_count() -> int:
    return os.cpu_count() or 1


BACKENDS = {
    "numpy": "NumPy (add: 1 core; matmul: its BLAS, all cores)",
    "torch-cpu-1": "PyTorch CPU, 1 thread",
    "torch-cpu-all": f"PyTorch CPU, {_cpu_count()} threads",
    "torch-gpu": "PyTorch on the GPU",
}


def backends_here() -> list[str]:
    """The backends this machine can time: the GPU one only in GPU mode with a CUDA build of torch."""
    names = ["numpy", "torch-cpu-1", "torch-cpu-all"]
    if runtime.mode == "gpu" and torch_device() == "cuda":
        names.append("torch-gpu")
    return names


def threads_used(backend: str, op: str) -> int | None:
    """CPU threads ``backend`` runs ``op`` on: ``None`` where NumPy's BLAS picks (its matmul)."""
    if backend == "numpy":
        return 1 if op == "add" else None
    if backend == "torch-cpu-1":
        return 1
    if backend == "torch-cpu-all":
        return _cpu_count()
    return None  # the GPU


def work(op: str, n: int) -> tuple[float, float]:
    """(bytes moved at least once, FLOPs) of one call of ``op`` at size ``n``."""
    if op == "add":
        return 3 * n * FLOAT32_BYTES, float(n)
    if op == "matmul":
        return 3 * n * n * FLOAT32_BYTES, 2.0 * n**3
    raise ValueError(f"op={op!r}: use one of {', '.join(OPS)}")


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _inputs(op: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    shape = (n,) if op == "add" else (n, n)
    return (
        rng.standard_normal(shape, dtype=np.float32),
        rng.standard_normal(shape, dtype=np.float32),
    )


def _numpy_call(op: str, x: np.ndarray, y: np.ndarray) -> tuple[Callable[[], object], np.ndarray]:
    out = np.empty_like(x)
    if op == "add":
        return (lambda: np.add(x, y, out=out)), out
    return (lambda: np.matmul(x, y, out=out)), out


def _torch_call(op: str, x: np.ndarray, y: np.ndarray, device: str):
    import torch

    tx, ty = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    out = torch.empty_like(tx)
    if op == "add":
        return (lambda: torch.add(tx, ty, out=out)), out
    return (lambda: torch.matmul(tx, ty, out=out)), out


def _expected(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y if op == "add" else (x.astype(np.float64) @ y).astype(np.float32)


def _measure_one(
    backend: str,
    op: str,
    x: np.ndarray,
    y: np.ndarray,
    expected: np.ndarray,
    repeat: int,
    warmup: int,
) -> dict[str, object]:
    n = x.shape[0]
    if backend == "numpy":
        call, out = _numpy_call(op, x, y)
    else:
        call, out = _torch_call(op, x, y, "cuda" if backend == "torch-gpu" else "cpu")
    nbytes, flops = work(op, n)
    target = "gpu" if backend == "torch-gpu" else "cpu"
    with contextlib.ExitStack() as stack:
        if backend == "torch-cpu-1":
            stack.enter_context(_torch_threads(1))
        elif backend == "torch-cpu-all":
            stack.enter_context(_torch_threads(_cpu_count()))
        call()
        got = out if isinstance(out, np.ndarray) else out.cpu().numpy()
        tolerance = 1e-6 if op == "add" else 1e-3 * np.sqrt(n)  # float32 sums of n products
        if not np.allclose(got, expected, rtol=1e-3, atol=tolerance):
            raise AssertionError(f"{backend} computed a wrong {op} at n={n}; nothing was timed")
        result = bench(call, bytes=nbytes, flops=flops, warmup=warmup, repeat=repeat, target=target)
    return {
        "op": op,
        "backend": backend,
        "label": BACKENDS[backend],
        "size": n,
        "threads": threads_used(backend, op),
        "repeat": repeat,
        "seconds": result.median,
        "q1": result.q1,
        "q3": result.q3,
        "bytes": nbytes,
        "flops": flops,
        "bytes_per_s": result.bytes_per_s,
        "flops_per_s": result.flops_per_s,
    }


def sweep(
    op: str,
    sizes: Iterable[int],
    backends: Sequence[str] | None = None,
    *,
    repeat: int = 7,
    warmup: int = 2,
    seed: int = 0,
) -> list[dict[str, object]]:
    """Check, then time ``op`` at each size on each backend; one row (a dict) per measurement.

    Each row's ``seconds`` is the median of ``repeat`` calls after ``warmup`` untimed ones.
    """
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat={repeat}, warmup={warmup}: need repeat >= 1 and warmup >= 0")
    work(op, 1)  # validates op
    chosen = list(backends) if backends is not None else backends_here()
    unknown = [b for b in chosen if b not in BACKENDS]
    if unknown:
        raise ValueError(f"unknown backends {unknown}: use some of {', '.join(BACKENDS)}")
    if "torch-gpu" in chosen and "torch-gpu" not in backends_here():
        raise ValueError("'torch-gpu' needs GPU mode and a CUDA build of PyTorch")
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        x, y = _inputs(op, int(n), rng)
        expected = _expected(op, x, y)
        rows += [_measure_one(backend, op, x, y, expected, repeat, warmup) for backend in chosen]
    return rows


def plot(rows: Sequence[dict], title: str = "", peaks: dict[str, float] | None = None):
    """Time (median, error bars from quartile 1 to 3) and achieved rate against size, one panel
    pair per operation; returns the figure.

    ``peaks`` may give ``{"bytes_per_s": ..., "flops_per_s": ...}`` to draw as dashed lines.
    """
    import matplotlib.pyplot as plt

    ops = [op for op in OPS if any(r["op"] == op for r in rows)]
    fig, axes = plt.subplots(len(ops), 2, figsize=(11, 3.6 * len(ops)), squeeze=False)
    for (time_ax, rate_ax), op in zip(axes, ops, strict=True):
        rate_key = "bytes_per_s" if op == "add" else "flops_per_s"
        unit, scale = ("GB/s", 1e9) if op == "add" else ("GFLOP/s", 1e9)
        for backend in BACKENDS:
            mine = sorted(
                (r for r in rows if r["op"] == op and r["backend"] == backend),
                key=lambda r: r["size"],
            )
            if not mine:
                continue
            sizes = [r["size"] for r in mine]
            medians = np.array([r["seconds"] for r in mine])
            spread = [medians - [r["q1"] for r in mine], [r["q3"] for r in mine] - medians]
            time_ax.errorbar(
                sizes, medians, yerr=spread, fmt="o-", capsize=3, label=mine[0]["label"]
            )
            rate_ax.plot(sizes, [r[rate_key] / scale for r in mine], "o-", label=mine[0]["label"])
        if peaks and peaks.get(rate_key):
            rate_ax.axhline(peaks[rate_key] / scale, ls="--", c="gray", label="GPU peak (spec)")
        size_name = "n (elements)" if op == "add" else "n (n x n matrices)"
        for ax in (time_ax, rate_ax):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(size_name)
            ax.grid(True, which="major", alpha=0.3)
        time_ax.set_ylabel("median time (s)")
        rate_ax.set_ylabel(f"achieved {unit}")
        time_ax.set_title(f"{op}: time")
        rate_ax.set_title(f"{op}: achieved {unit}")
        rate_ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
