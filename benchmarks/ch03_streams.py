"""Record chapter 03's stream-overlap and launch-overhead measurements on a real GPU.

Usage, on a machine with an NVIDIA GPU, from the repository root:

    python benchmarks/ch03_streams.py

It times (wall clock, median of 10 after a warm-up, each output checked first) a job of 2^24
float32 values copied in from pinned memory, processed by a kernel and copied out: each stage
alone, the whole job on one stream, and the job split into 2 to 32 chunks on 3 streams, next to
``gu.streams``' prediction from the stage times. Then the host's cost of each kind of call on
slices (32 calls back to back, before any synchronisation) and whether a copy of a pinned slice
returns before it is done (asynchronous), and a one-element kernel launched 1,000 times in a row,
against one launch: the launch overhead. Last, the per-call cost ``gu.streams.fit_issue_cost``
fits to the overlap rows, and the model's rows with it. numba-cuda has no public CUDA graph
capture, so no graph is timed. It writes ``gpu_utils/reference_data/ch03_streams.json`` with the device, date and
command; notebooks/03_first_kernels.ipynb shows it when it runs on the simulator.
"""

from __future__ import annotations

import sys

import gpu_utils as gu

NAME = "ch03_streams"
N = 2**24
CHUNKS = [1, 2, 4, 8, 16, 32]
LAUNCHES = 1000


def main() -> int:
    if gu.reference.refuse_without_gpu():
        return 2
    overlap = gu.streams.measure_overlap(N, CHUNKS, streams=3)
    for kind, seconds in overlap["stages_s"].items():
        print(f"{kind:<9} alone: {seconds * 1e3:8.3f} ms")
    for row in overlap["rows"]:
        print(
            f"{row['chunks']:>3} chunks on {row['streams']} stream(s): "
            f"{row['median_s'] * 1e3:8.3f} ms measured, {row['model_s'] * 1e3:8.3f} ms model"
        )
    issue = gu.streams.measure_issue(N, calls=32)
    for kind, seconds in issue["host_s_per_call"].items():
        print(f"{kind:<9} on a 1/32 slice: {seconds * 1e6:7.1f} us of host time per call")
    for kind, copy in issue["copies"].items():
        verdict = "asynchronous" if copy["asynchronous"] else "NOT asynchronous"
        print(
            f"{kind} of half the pinned array: call returned after {copy['returns_s'] * 1e6:.1f} "
            f"us, copy done after {copy['done_s'] * 1e6:.1f} us: {verdict}"
        )
    launches = gu.streams.measure_launches(LAUNCHES)
    print(f"{LAUNCHES} launches: {launches['per_launch_s'] * 1e6:.2f} us each")
    fitted = gu.streams.fit_issue_cost(overlap)
    model = gu.streams.predict(overlap, fitted)
    print(f"fitted host cost per call: {fitted * 1e6:.1f} us; the model with it:")
    for row, seconds in zip(overlap["rows"], model, strict=True):
        print(
            f"{row['chunks']:>3} chunks: {row['median_s'] * 1e3:8.3f} ms measured, "
            f"{seconds * 1e3:8.3f} ms model ({seconds / row['median_s'] - 1:+.0%})"
        )
    record = {
        "overlap": overlap,
        "issue": issue,
        "launches": launches,
        "fitted_issue_cost_s": fitted,
    }
    path = gu.reference.save(NAME, record)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
