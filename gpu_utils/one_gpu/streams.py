"""Streams and overlap: a timeline model of copies and kernels on CUDA streams (chapter 03).

The job: ``n`` bytes go to the GPU, a kernel processes them, the result comes back. Split into
``chunks`` pieces, each piece's copy in, kernel and copy out go, in that order, on one of
``streams`` streams (piece ``i`` on stream ``i % streams``). The rules of the model, each from the
CUDA C++ Programming Guide, section "Asynchronous Concurrent Execution":

- Operations in one stream run in the order they were issued; operations in different streams
  may run at the same time ("Streams").
- Copies overlap kernels only when the host memory is page-locked (pinned) ("Overlap of Data
  Transfer and Kernel Execution"). A copy from pageable memory is staged by the driver and does
  not overlap: the model runs it after all earlier work and holds the host until it ends.
- A GPU with two copy engines (``asyncEngineCount == 2``) copies host-to-device and
  device-to-host at the same time, each overlapping kernels ("Concurrent Data Transfers"); with
  one copy engine the two directions share it.
- The host issues one call at a time; each call (a launch or an asynchronous copy) takes
  ``launch_overhead`` seconds of host time (one figure, or one per kind of call), a parameter of
  the model, which a GPU measures (``benchmarks/ch03_streams.py``; :func:`fit_issue_cost` fits it
  to a measured run). A CUDA graph issues the whole recorded sequence with one launch ("CUDA
  Graphs": definition and instantiation happen once, then each launch submits the whole graph).

Each engine (copy in, compute, copy out) runs one operation at a time; whenever it is free it
starts the earliest-issued operation that is ready. Kernels of different streams that could
share the SMs are not modelled: one kernel at a time, each given its share of the compute time.

With two copy engines, enough streams (three or more) and stage times ``t_in, t_c, t_out`` for
the whole job, the chunks flow through a three-stage pipeline, and the total is

    T(k) = (t_in + t_c + t_out) / k  +  (k - 1) * max(t_in, t_c, t_out) / k

(:func:`pipeline_time`): the first chunk passes through all three stages (the pipeline fill),
then the slowest stage delivers one chunk every ``max / k``. One stream gives the sum of all
three; many chunks approach ``max(t_in, t_c, t_out)``.

That formula has no host in it. On the first H100 run (``reference_data/ch03_streams.json``) the
job overlapped up to 4 chunks, then got slower with every extra chunk: each chunk's three numba
calls on array slices cost about 0.3 ms of host time, more than a chunk's copy, so the host set
the pace. With the issue cost fitted from the same run (:func:`fit_issue_cost`),
:func:`schedule` follows every row (:func:`predict`).
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import cuda  # gpu_utils is imported first (gu.streams), so the mode is settled

__all__ = [
    "Op",
    "Schedule",
    "device_stage_times",
    "fit_issue_cost",
    "measure_issue",
    "pipeline_time",
    "predict",
    "schedule",
    "timeline",
    "total_vs_chunks",
]

KINDS = ("copy in", "kernel", "copy out")
COLORS = {"copy in": "tab:blue", "kernel": "tab:orange", "copy out": "tab:green"}


@dataclass(frozen=True)
class Op:
    """One operation on the timeline (times in the unit of the stage times)."""

    kind: str  # "copy in", "kernel" or "copy out"
    chunk: int
    stream: int
    engine: str  # "copy in", "compute", "copy out", or "copy" when one engine does both
    issued: float  # when the host's call returned
    start: float
    end: float


@dataclass(frozen=True)
class Schedule:
    """The operations of one run, and what they add up to."""

    ops: tuple[Op, ...]
    chunks: int
    streams: int
    copy_engines: int
    pinned: bool
    graph: bool

    @property
    def total(self) -> float:
        """From the first call to the end of the last operation."""
        return max(op.end for op in self.ops)

    @property
    def label(self) -> str:
        memory = "pinned" if self.pinned else "pageable"
        how = ", one graph launch" if self.graph else ""
        return (
            f"{self.chunks} chunks on {self.streams} stream(s), {self.copy_engines} copy "
            f"engine(s), {memory}{how}"
        )


def _engine(kind: str, copy_engines: int) -> str:
    if kind == "kernel":
        return "compute"
    return kind if copy_engines == 2 else "copy"


def schedule(
    t_in: float,
    t_compute: float,
    t_out: float,
    *,
    chunks: int = 1,
    streams: int = 1,
    copy_engines: int = 2,
    pinned: bool = True,
    launch_overhead: float | dict[str, float] = 0.0,
    graph: bool = False,
) -> Schedule:
    """The timeline of the chunked job: whole-job stage times split evenly over ``chunks``.

    Calls are issued depth first (chunk 0's copy in, kernel, copy out, then chunk 1's, ...).
    ``launch_overhead`` is the host time of each call: one figure, or a dict with one per kind
    (``{"copy in": ..., "kernel": ..., "copy out": ...}``); a graph is one launch, charged the
    kernel's figure.
    """
    if isinstance(launch_overhead, dict):
        if set(launch_overhead) != set(KINDS):
            raise ValueError(f"launch_overhead: give one figure per kind of call, {list(KINDS)}")
        cost = {kind: launch_overhead[kind] for kind in KINDS}
    else:
        cost = dict.fromkeys(KINDS, launch_overhead)
    for name, value in (("t_in", t_in), ("t_compute", t_compute), ("t_out", t_out)):
        if not value >= 0:
            raise ValueError(f"{name} = {value}: a time must be zero or more")
    if not all(value >= 0 for value in cost.values()):
        raise ValueError(f"launch_overhead = {launch_overhead}: must be zero or more")
    if int(chunks) != chunks or chunks < 1 or int(streams) != streams or streams < 1:
        raise ValueError(f"chunks = {chunks}, streams = {streams}: both whole numbers >= 1")
    if copy_engines not in (1, 2):
        raise ValueError(f"copy_engines = {copy_engines}: a GPU has 1 or 2 (asyncEngineCount)")
    per_chunk = {"copy in": t_in / chunks, "kernel": t_compute / chunks, "copy out": t_out / chunks}
    calls = [(i, kind) for i in range(chunks) for kind in KINDS]  # issue order, depth first

    free: dict[str, float] = {}  # engine -> when it is next free
    stream_end: dict[int, float] = {}  # stream -> end of its last operation
    ops: list[Op] = []
    host = cost["kernel"] if graph else 0.0  # a graph: one launch issues everything
    if pinned:
        issued = []
        for _, kind in calls:
            if not graph:
                host += cost[kind]
            issued.append(host)
        # in-stream order: only the first unscheduled call of each stream may start next
        queues = {
            s: [n for n, (c, _) in enumerate(calls) if c % streams == s] for s in range(streams)
        }
        heads = dict.fromkeys(queues, 0)
        for _ in calls:  # list scheduling: the op that can start first (ties: issue order)
            best = None
            ready = sorted((q[heads[s]], s) for s, q in queues.items() if heads[s] < len(q))
            for n, stream in ready:
                engine = _engine(calls[n][1], copy_engines)
                start = max(issued[n], free.get(engine, 0.0), stream_end.get(stream, 0.0))
                if best is None or start < best[0]:
                    best = (start, n, engine, stream)
            start, n, engine, stream = best
            chunk, kind = calls[n]
            end = start + per_chunk[kind]
            ops.append(Op(kind, chunk, stream, engine, issued[n], start, end))
            free[engine] = stream_end[stream] = end
            heads[stream] += 1
    else:  # pageable: each copy waits for all earlier work, and the host waits for the copy
        last = 0.0
        for chunk, kind in calls:
            if not graph:
                host += cost[kind]
            engine, stream = _engine(kind, copy_engines), chunk % streams
            start = max(host, free.get(engine, 0.0), stream_end.get(stream, 0.0))
            if kind != "kernel":
                start = max(start, last)
            end = start + per_chunk[kind]
            ops.append(Op(kind, chunk, stream, engine, host, start, end))
            free[engine] = stream_end[stream] = end
            last = max(last, end)
            if kind != "kernel":
                host = max(host, end)
    return Schedule(tuple(ops), chunks, streams, copy_engines, pinned, graph)


def pipeline_time(t_in: float, t_compute: float, t_out: float, chunks: int) -> float:
    """Total time with two copy engines and enough streams, no launch overhead:
    (t_in + t_c + t_out) / k + (k - 1) * max(t_in, t_c, t_out) / k."""
    stages = (t_in, t_compute, t_out)
    return sum(stages) / chunks + (chunks - 1) * max(stages) / chunks


def device_stage_times(measurement: dict, issue_cost: float) -> tuple[float, float, float]:
    """The GPU's share of each stage of a :func:`measure_overlap` result: a stage timed alone is
    one call's host cost followed by the device's work, so ``issue_cost`` comes off each."""
    return tuple(max(0.0, measurement["stages_s"][kind] - issue_cost) for kind in KINDS)


def predict(measurement: dict, issue_cost: float, *, copy_engines: int = 2) -> list[float]:
    """The model's total for each row of a :func:`measure_overlap` result, with ``issue_cost``
    seconds of host time per call: :func:`schedule` of :func:`device_stage_times`."""
    stages = device_stage_times(measurement, issue_cost)
    return [
        schedule(
            *stages,
            chunks=row["chunks"],
            streams=row["streams"],
            copy_engines=copy_engines,
            launch_overhead=issue_cost,
        ).total
        for row in measurement["rows"]
    ]


def fit_issue_cost(measurement: dict, *, copy_engines: int = 2) -> float:
    """The host cost per call (seconds) that makes :func:`predict` closest to a
    :func:`measure_overlap` result: the one that minimises the largest relative error over its
    rows (a search over 0 to the shortest stage, then refined around the best)."""
    rows = measurement.get("rows") if isinstance(measurement, dict) else None
    if not rows or "stages_s" not in measurement:
        raise ValueError(
            "fit_issue_cost needs a measure_overlap result: a dict with 'stages_s' and 'rows' "
            "(gu.reference.load('ch03_streams').results['overlap'] is one)"
        )
    measured = [row["median_s"] for row in rows]

    def worst(cost: float) -> float:
        model = predict(measurement, cost, copy_engines=copy_engines)
        return max(abs(m / t - 1) for m, t in zip(model, measured, strict=True))

    top = min(measurement["stages_s"].values())
    grid = [top * i / 64 for i in range(65)]
    best = min(grid, key=worst)
    low, high = max(0.0, best - top / 64), min(top, best + top / 64)
    for _ in range(40):  # golden-section search in the bracket around the best grid point
        a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
        if worst(a) <= worst(b):
            high = b
        else:
            low = a
    refined = (low + high) / 2
    return refined if worst(refined) <= worst(best) else best


def timeline(result: Schedule, *, ax=None, unit: str = "", title: str | None = None):
    """Draw a schedule: one row per engine, one bar per operation, labelled with its chunk."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 2.2))
    engines = sorted(
        {op.engine for op in result.ops}, key=["copy in", "copy", "compute", "copy out"].index
    )
    for row, engine in enumerate(engines):
        for op in (o for o in result.ops if o.engine == engine):
            ax.barh(row, op.end - op.start, left=op.start, color=COLORS[op.kind], edgecolor="black")
            if op.end - op.start > 0.03 * result.total:
                ax.text(
                    (op.start + op.end) / 2,
                    row,
                    str(op.chunk),
                    ha="center",
                    va="center",
                    fontsize=8,
                )
    ax.set_yticks(range(len(engines)), [f"{e} engine" for e in engines])
    ax.invert_yaxis()
    ax.set_xlim(0, result.total * 1.02)
    ax.set_xlabel(f"time{f' ({unit})' if unit else ''}; bar labels: chunk number")
    ax.set_title(title or f"{result.label}: total {result.total:.3g}{f' {unit}' if unit else ''}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in KINDS]
    ax.legend(handles, KINDS, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return ax


def total_vs_chunks(
    t_in: float,
    t_compute: float,
    t_out: float,
    chunk_counts,
    *,
    ax=None,
    unit: str = "",
    **settings,
):
    """Plot the model's total time against the number of chunks, for each setting in
    ``settings`` ({label: dict of :func:`schedule` keywords}), with the one-stream sum and the
    bound max(t_in, t_c, t_out) as dashed lines."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    counts = list(chunk_counts)
    for label, keywords in settings.items():
        totals = [schedule(t_in, t_compute, t_out, chunks=k, **keywords).total for k in counts]
        ax.plot(counts, totals, marker="o", label=label)
    ax.axhline(t_in + t_compute + t_out, color="gray", ls="--", label="one stream: the sum")
    ax.axhline(max(t_in, t_compute, t_out), color="black", ls=":", label="slowest stage alone")
    ax.set_xlabel("chunks k")
    ax.set_ylabel(f"total time{f' ({unit})' if unit else ''}")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return ax


# --- on a GPU: measure what the model predicts -------------------------------------------------

THREADS = 256


@cuda.jit
def work(x, out, rounds):  # `rounds` multiply-adds per element: compute time to taste
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        for _ in range(rounds):
            v = v * 0.999 + 0.001
        out[i] = v


@cuda.jit
def tiny(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] += 1.0


def _expected(x, rounds):
    import numpy as np

    v = x.astype(np.float32)
    for _ in range(rounds):
        v = v * np.float32(0.999) + np.float32(0.001)
    return v


def measure_overlap(n: int, chunk_counts, *, streams: int = 3, rounds: int = 64, repeat: int = 10):
    """Time the copy-in / kernel / copy-out job of ``n`` float32 values from pinned memory, whole
    on one stream and split into each of ``chunk_counts`` chunks on ``streams`` streams (wall
    time from the first call to the end of the last operation, median of ``repeat``). Each run's
    output is checked first. Returns rows {"chunks", "median_s", ...} and the three stages
    timed alone, with the model's prediction from them (on the simulator the times mean nothing:
    only that it ran)."""
    import time

    import numpy as np

    x = np.random.default_rng(0).random(n, dtype=np.float32)
    h_in, h_out = cuda.pinned_array(n, np.float32), cuda.pinned_array(n, np.float32)
    h_in[:] = x
    d_in, d_out = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
    pool = [cuda.stream() for _ in range(streams)]
    expected = _expected(x, rounds)

    def run(chunks: int, only: str | None = None) -> float:
        bounds = np.linspace(0, n, chunks + 1).astype(int)
        cuda.synchronize()
        start = time.perf_counter()
        for c in range(chunks):
            a, b, s = bounds[c], bounds[c + 1], pool[c % streams]
            if only in (None, "copy in"):
                d_in[a:b].copy_to_device(h_in[a:b], stream=s)
            if only in (None, "kernel"):
                blocks = min(1024, (b - a + THREADS - 1) // THREADS)
                work[blocks, THREADS, s](d_in[a:b], d_out[a:b], rounds)
            if only in (None, "copy out"):
                d_out[a:b].copy_to_host(h_out[a:b], stream=s)
        cuda.synchronize()
        return time.perf_counter() - start

    def median(chunks: int, only: str | None = None) -> float:
        run(chunks, only)  # warm-up (and compilation)
        return float(np.median([run(chunks, only) for _ in range(repeat)]))

    stages = {kind: median(1, kind) for kind in KINDS}
    rows = []
    for chunks in chunk_counts:
        h_out[:] = np.nan
        run(chunks)
        if not np.allclose(h_out, expected, rtol=1e-5):
            raise RuntimeError(f"{chunks} chunks: the output is wrong; no time recorded")
        rows.append(
            {
                "chunks": int(chunks),
                "streams": streams if chunks > 1 else 1,
                "median_s": median(chunks),
                "model_s": pipeline_time(*stages.values(), chunks),
            }
        )
    return {"n": n, "rounds": rounds, "stages_s": stages, "rows": rows}


def measure_launches(launches: int, *, repeat: int = 10) -> dict:
    """Wall seconds for a one-element kernel launched ``launches`` times in a row, and for one
    such launch; ``per_launch_s`` is what each launch costs when launches follow each other
    (numba-cuda 0.30 has no public CUDA graph capture, so a graph is not measured; checked
    results; on the simulator the times mean nothing)."""
    import time

    import numpy as np

    one, many = cuda.to_device(np.zeros(1, np.float32)), cuda.to_device(np.zeros(1, np.float32))

    def launch_many() -> float:
        cuda.synchronize()
        start = time.perf_counter()
        for _ in range(launches):
            tiny[1, 1](one)
        cuda.synchronize()
        return time.perf_counter() - start

    def launch_once() -> float:
        cuda.synchronize()
        start = time.perf_counter()
        tiny[1, 1](many)
        cuda.synchronize()
        return time.perf_counter() - start

    launch_many(), launch_once()  # warm-up
    many_s = float(np.median([launch_many() for _ in range(repeat)]))
    once_s = float(np.median([launch_once() for _ in range(repeat)]))
    if one.copy_to_host()[0] != launches * (repeat + 1):
        raise RuntimeError("the repeated launches did not all run; no time recorded")
    return {
        "launches": launches,
        "many_s": many_s,
        "once_s": once_s,
        "per_launch_s": many_s / launches,
    }


def measure_issue(n: int, *, calls: int = 32, streams: int = 3, repeat: int = 10) -> dict:
    """Host seconds per call of each kind, the calls :func:`measure_overlap` makes for ``calls``
    chunks of ``n`` float32 values (slices of pinned and device arrays), and whether a copy of a
    pinned slice is asynchronous: the call returns before the copy is done.

    ``host_s_per_call[kind]``: the host's time to issue ``calls`` such calls back to back, before
    any synchronisation, divided by ``calls`` (median of ``repeat``). ``copies[kind]``: for one
    copy of half the array, ``returns_s`` (until the call returned) and ``done_s`` (until the
    copy finished); ``asynchronous`` when it returned in under half of ``done_s``. On the
    simulator the times mean nothing: only that it ran.
    """
    import time

    import numpy as np

    h_in, h_out = cuda.pinned_array(n, np.float32), cuda.pinned_array(n, np.float32)
    h_in[:] = np.random.default_rng(0).random(n, dtype=np.float32)
    d_in, d_out = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
    pool = [cuda.stream() for _ in range(streams)]
    bounds = np.linspace(0, n, calls + 1).astype(int)

    def issue(kind: str, c: int) -> None:
        a, b, s = bounds[c], bounds[c + 1], pool[c % streams]
        if kind == "copy in":
            d_in[a:b].copy_to_device(h_in[a:b], stream=s)
        elif kind == "kernel":
            blocks = min(1024, (b - a + THREADS - 1) // THREADS)
            work[blocks, THREADS, s](d_in[a:b], d_out[a:b], 1)
        else:
            d_out[a:b].copy_to_host(h_out[a:b], stream=s)

    def host_time(kind: str) -> float:
        cuda.synchronize()
        start = time.perf_counter()
        for c in range(calls):
            issue(kind, c)
        issued = time.perf_counter() - start
        cuda.synchronize()
        return issued

    def one_copy(kind: str) -> tuple[float, float]:
        half, s = n // 2, pool[0]
        cuda.synchronize()
        start = time.perf_counter()
        if kind == "copy in":
            d_in[:half].copy_to_device(h_in[:half], stream=s)
        else:
            d_out[:half].copy_to_host(h_out[:half], stream=s)
        returned = time.perf_counter() - start
        s.synchronize()
        return returned, time.perf_counter() - start

    per_call = {}
    for kind in KINDS:
        host_time(kind)  # warm-up (and compilation)
        per_call[kind] = float(np.median([host_time(kind) for _ in range(repeat)])) / calls
    h_out[:] = np.nan
    d_out.copy_to_device(h_in)
    copies = {}
    for kind in ("copy in", "copy out"):
        one_copy(kind)
        times = np.array([one_copy(kind) for _ in range(repeat)])
        returns, done = float(np.median(times[:, 0])), float(np.median(times[:, 1]))
        copies[kind] = {"returns_s": returns, "done_s": done, "asynchronous": returns < done / 2}
    if not np.array_equal(h_out[: n // 2], h_in[: n // 2]):
        raise RuntimeError("the pinned copies did not arrive; no time recorded")
    return {"n": n, "calls": calls, "host_s_per_call": per_call, "copies": copies}
