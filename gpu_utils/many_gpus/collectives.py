"""How long collectives take: bus bandwidth, the alpha-beta model, cluster estimates (chapter 08).

Conventions follow nccl-tests (``doc/PERFORMANCE.md``): ``nbytes`` (S) is the size of the whole
array, that is the gathered result of an all-gather, the array being reduced (all-reduce,
reduce-scatter, reduce), the broadcast array, and each rank's send buffer of an all-to-all. The
algorithm bandwidth is S / t; the bus bandwidth multiplies it by a factor that depends on the
operation and the number of ranks n, so that it can be compared with the hardware's link speed.

Times use the alpha-beta model: a message of m bytes costs alpha + m * beta (alpha: latency per
step in seconds; beta: seconds per byte, 1 / link bandwidth). Reduction arithmetic is left out:
GPUs add at memory speed, far faster than links move the data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..facts import specs

__all__ = [
    "NCCL_2_4_BLOG",
    "NCCL_LATENCY",
    "NCCL_TESTS",
    "NCCL_TREE_LATENCY",
    "NCCL_TUNING",
    "OPS",
    "PATARASUK_YUAN_2009",
    "RABENSEIFNER_2004",
    "RECORDINGS",
    "SANDERS_2009",
    "SCALING_BOOK",
    "THAKUR_2005",
    "Measurement",
    "algorithm_bandwidth",
    "bus_bandwidth",
    "bus_bandwidth_factor",
    "cluster_time",
    "estimate_time",
    "fit_alpha_beta",
    "latency",
    "measure",
    "rabenseifner_time",
    "recorded",
    "ring_time",
    "tree_time",
]

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all")

NCCL_TESTS = "NVIDIA nccl-tests, doc/PERFORMANCE.md, 'Bus bandwidth' (github.com/NVIDIA/nccl-tests)"
THAKUR_2005 = (
    "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of Collective Communication "
    "Operations in MPICH', International Journal of High Performance Computing Applications "
    "19(1):49-66, 2005"
)
PATARASUK_YUAN_2009 = (
    "P. Patarasuk and X. Yuan, 'Bandwidth optimal all-reduce algorithms for clusters of "
    "workstations', Journal of Parallel and Distributed Computing 69(2):117-124, 2009: the lower "
    "bound 2 (n-1)/n S beta on the bytes each rank sends, and the ring all-reduce that meets it"
)
RABENSEIFNER_2004 = (
    "R. Rabenseifner, 'Optimization of Collective Reduction Operations', ICCS 2004, LNCS 3036, "
    "pp. 1-9; its cost, 2 log2(n) alpha + 2 (n-1)/n S beta for power-of-two n, as THAKUR_2005 "
    "states it in its MPI_Allreduce section"
)
SANDERS_2009 = (
    "P. Sanders, J. Speck and J. L. Träff, 'Two-tree algorithms for full bandwidth broadcast, "
    "reduction and scan', Parallel Computing 35(12):581-594, 2009"
)
NCCL_2_4_BLOG = (
    "S. Jeaugey, 'Massively Scale Your Deep Learning Training with NCCL 2.4', NVIDIA Technical "
    "Blog, 2019 (developer.nvidia.com/blog/massively-scale-deep-learning-training-nccl-2-4)"
)
SCALING_BOOK = (
    "J. Austin et al., 'How to Scale Your Model' (2025), Part 12 'How to Think About GPUs', "
    "section 'How Do Collectives Work on GPUs?' (jax-ml.github.io/scaling-book/gpus)"
)
NCCL_TUNING = (
    "NVIDIA NCCL, src/graph/tuning.cc (github.com/NVIDIA/nccl, 2.2x releases): the latency model "
    "NCCL itself uses to pick an algorithm, tables baseLat and hwLat, Simple protocol"
)

#: Latencies in seconds of NCCL's own tuning model (NCCL_TUNING), Simple protocol, ring: ``base``
#: once per collective (baseLat), then per ring step ``NVLink`` (a hop inside a node) or
#: ``network`` (a hop between nodes, InfiniBand or RoCE) (hwLat).
NCCL_LATENCY = {"base": 8.4e-6, "NVLink": 3.4e-6, "network": 14.0e-6}
#: The same tables' tree column, Simple protocol: no base latency, 4 us per NVLink hop, 14 us
#: per network hop.
NCCL_TREE_LATENCY = {"base": 0.0, "NVLink": 4.0e-6, "network": 14.0e-6}


def _check(op: str, nbytes: float, n: int) -> None:
    if op not in OPS:
        raise ValueError(f"unknown collective {op!r}: use one of {', '.join(OPS)}")
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the number of ranks must be a positive integer, got {n!r}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes!r}")


# --- bandwidths as nccl-tests reports them ----------------------------------------------------


def bus_bandwidth_factor(op: str, n: int) -> float:
    """busbw / algbw for ``op`` on ``n`` ranks, as nccl-tests defines it (see NCCL_TESTS).

    all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n; broadcast and
    reduce 1. With these factors a perfect implementation's bus bandwidth equals the per-rank
    link bandwidth, whatever n.
    """
    _check(op, 0, n)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def algorithm_bandwidth(nbytes: float, seconds: float) -> float:
    """algbw = S / t in bytes/s (nccl-tests' 'algbw')."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds!r}")
    return nbytes / seconds


def bus_bandwidth(op: str, nbytes: float, seconds: float, n: int) -> float:
    """busbw = algbw x bus_bandwidth_factor(op, n) in bytes/s (nccl-tests' 'busbw')."""
    return algorithm_bandwidth(nbytes, seconds) * bus_bandwidth_factor(op, n)


# --- the alpha-beta model (Thakur, Rabenseifner and Gropp 2005) --------------------------------


def _ring_terms(op: str, n: int) -> tuple[float, float]:
    """(steps, bytes moved per rank / S) of the ring algorithms, linear in alpha and beta."""
    if op == "all_reduce":  # reduce-scatter, then all-gather
        return 2 * (n - 1), 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - 1, (n - 1) / n
    raise ValueError(f"{op} on a ring is pipelined, not linear in alpha and beta")


def ring_time(op: str, nbytes: float, n: int, *, alpha: float, beta: float) -> float:
    """Seconds for ``op`` with the ring algorithm on ``n`` ranks (alpha-beta model).

    All-gather and reduce-scatter: n - 1 steps, each moving S/n bytes per rank,
    (n-1) alpha + (n-1)/n S beta (THAKUR_2005, ring allgather). All-reduce = reduce-scatter +
    all-gather: 2(n-1) alpha + 2(n-1)/n S beta, which sends the fewest bytes any all-reduce can
    (PATARASUK_YUAN_2009); its 2(n-1) latency terms are what :func:`rabenseifner_time` saves.
    All-to-all by pairwise exchange: n - 1 steps
    of S/n bytes, the same as a ring step (THAKUR_2005). Broadcast and reduce are pipelined
    along the ring: cut into k pieces, the last piece arrives after n - 2 + k steps,
    (n - 2 + k)(alpha + S beta / k), which is smallest at k = sqrt((n-2) S beta / alpha)
    (at least one piece), where it is (sqrt((n-2) alpha) + sqrt(S beta))^2.
    """
    _check(op, nbytes, n)
    if n == 1:
        return 0.0
    if op in ("broadcast", "reduce"):
        if alpha == 0:
            return nbytes * beta
        pieces = max(1.0, math.sqrt((n - 2) * nbytes * beta / alpha))
        return (n - 2 + pieces) * (alpha + nbytes * beta / pieces)
    steps, fraction = _ring_terms(op, n)
    return steps * alpha + fraction * nbytes * beta


def tree_time(op: str, nbytes: float, n: int, *, alpha: float, beta: float) -> float:
    """Seconds for ``op`` with the logarithmic algorithms of THAKUR_2005, on ``n`` ranks.

    With L = ceil(log2 n) steps: broadcast and reduce on a binomial tree, and all-reduce by
    recursive doubling, move the whole array at every step, L (alpha + S beta). All-gather by
    recursive doubling (Bruck's algorithm when n is not a power of two) and reduce-scatter by
    recursive halving, L alpha + (n-1)/n S beta. All-to-all by Bruck's algorithm,
    L alpha + L S/2 beta. Few steps, so they win for small arrays; for large ones the ring
    moves fewer bytes than recursive doubling. (For all-reduce, :func:`rabenseifner_time` gets
    both: few steps and the ring's bytes.)

    This is not the cost of NCCL's "tree" algorithm. NCCL (since 2.4, NCCL_2_4_BLOG) runs an
    all-reduce on the double binary tree of SANDERS_2009: two binary trees over the ranks, each
    carrying half of the data in pipelined chunks, a rank that is an inner node of one tree being
    a leaf of the other. Its latency grows with log2 n like these algorithms', but each rank
    sends only about 2 S bytes, close to the ring's 2 (n-1)/n S, instead of L S.
    """
    _check(op, nbytes, n)
    if n == 1:
        return 0.0
    steps = math.ceil(math.log2(n))
    if op in ("broadcast", "reduce", "all_reduce"):
        return steps * (alpha + nbytes * beta)
    if op in ("all_gather", "reduce_scatter"):
        return steps * alpha + (n - 1) / n * nbytes * beta
    return steps * alpha + steps * nbytes / 2 * beta  # all_to_all


def rabenseifner_time(nbytes: float, n: int, *, alpha: float, beta: float) -> float:
    """Seconds for an all-reduce by Rabenseifner's algorithm on ``n`` ranks (RABENSEIFNER_2004).

    A reduce-scatter by recursive halving (log2 n steps; each rank sends S/2, S/4, ... bytes)
    then an all-gather by recursive doubling (the same steps in reverse):
    2 log2(n) alpha + 2 (n-1)/n S beta. It sends exactly the ring's bytes in 2 log2 n steps
    instead of 2 (n-1), so in this model it is never slower than the ring for a power-of-two n.
    Rings still win on real machines for reasons the model leaves out (chapter 08): each ring
    step talks only to a neighbour, which maps onto NVLink and rail-optimised networks without
    contention, while recursive halving pairs ranks ever further apart; and NCCL pipelines
    chunks along the ring with protocols (LL, LL128, Simple) that hide most of alpha.
    Only power-of-two ``n`` is modelled (MPICH first folds the extra ranks in, THAKUR_2005).
    """
    _check("all_reduce", nbytes, n)
    if n & (n - 1):
        raise ValueError(
            f"rabenseifner_time models a power-of-two number of ranks; got n={n} (use 2, 4, 8, ...)"
        )
    if n == 1:
        return 0.0
    return 2 * math.log2(n) * alpha + 2 * (n - 1) / n * nbytes * beta


def fit_alpha_beta(
    op: str, n: int, nbytes: Sequence[float], seconds: Sequence[float]
) -> tuple[float, float]:
    """(alpha, beta) of the ring model that best fits measured times (least squares, >= 0).

    For all_reduce, all_gather, reduce_scatter and all_to_all, whose ring times are linear in
    alpha and beta. Needs at least two distinct sizes.
    """
    _check(op, 0, n)
    sizes = np.asarray(nbytes, dtype=float)
    times = np.asarray(seconds, dtype=float)
    if sizes.shape != times.shape or len(set(sizes.tolist())) < 2:
        raise ValueError("give one time per size, for at least two different sizes")
    steps, fraction = _ring_terms(op, n)
    design = np.column_stack([np.full_like(sizes, steps), fraction * sizes])
    weights = 1 / times  # relative errors: small and large sizes count alike
    (alpha, beta), *_ = np.linalg.lstsq(design * weights[:, None], times * weights, rcond=None)
    if alpha < 0 or beta < 0:  # keep the better of the one-parameter fits instead
        column = 1 if alpha < 0 else 0
        x, w2 = design[:, column], weights**2
        value = float(np.sum(w2 * x * times) / np.sum(w2 * x * x))
        alpha, beta = (0.0, value) if column else (value, 0.0)
    return float(alpha), float(beta)


# --- bandwidth-only estimates for a GPU cluster (How to Scale Your Model) ----------------------


def estimate_time(
    op: str, nbytes: float, n_gpus: int, *, gpu: str = "H100-SXM", gpus_per_node: int = 8
) -> float:
    """Seconds for ``op`` over ``n_gpus`` GPUs of type ``gpu``, counting bandwidth only.

    Inside a node each GPU sends over NVLink at ``gu.specs`` ``nvlink_bandwidth`` (per GPU, per
    direction); across nodes the nodes' networks carry ``gpus_per_node`` x ``network_bandwidth``
    each. The time is the slower of the two levels (SCALING_BOOK): for an all-gather of S bytes
    over D GPUs per node and M nodes, max(S (D-1)/D / W_nvlink, S (M-1)/M / (D W_network));
    reduce-scatter the same, all-reduce twice that, broadcast and reduce S at each level, and an
    all-to-all sends (n-1)/n of each rank's S bytes, the share for other nodes over the network.
    """
    _check(op, nbytes, n_gpus)
    if gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be positive, got {gpus_per_node!r}")
    if n_gpus > gpus_per_node and n_gpus % gpus_per_node:
        raise ValueError(
            f"{n_gpus} GPUs is not a whole number of {gpus_per_node}-GPU nodes: use a multiple "
            f"of {gpus_per_node}, or at most {gpus_per_node}"
        )
    if n_gpus == 1:
        return 0.0
    spec = specs.get(gpu)
    if spec.nvlink_bandwidth is None:
        raise ValueError(f"{gpu} has no NVLink: gu.specs lists no GPU-to-GPU bandwidth for it")
    per_node = min(n_gpus, gpus_per_node)
    nodes = n_gpus // per_node
    if nodes > 1 and spec.network_bandwidth is None:
        raise ValueError(f"gu.specs lists no network bandwidth for {gpu} clusters")
    if op == "all_to_all":
        inside = nbytes * (per_node - 1) / n_gpus / spec.nvlink_bandwidth
        across = nbytes * (n_gpus - per_node) / n_gpus / spec.network_bandwidth if nodes > 1 else 0
        return max(inside, across)

    def share(d: int) -> float:  # bytes each member moves per byte of S, at a level of d members
        return bus_bandwidth_factor(op, d) if d > 1 else 0.0

    inside = nbytes * share(per_node) / spec.nvlink_bandwidth
    across = nbytes * share(nodes) / (per_node * spec.network_bandwidth) if nodes > 1 else 0.0
    return max(inside, across)


def latency(op: str, n_gpus: int, *, gpus_per_node: int = 8) -> float:
    """Seconds of latency (the alpha terms) of one ``op`` over ``n_gpus`` GPUs, as NCCL models it.

    NCCL_TUNING's ring: ``base`` + one hop latency per step, the ring's (n-1) steps for an
    all-gather, reduce-scatter or all-to-all and 2 (n-1) for an all-reduce, of which (M-1), or
    2 (M-1), cross between the M nodes at the ``network`` latency and the rest stay on NVLink.
    An all-reduce may instead take NCCL's tree, 2 ((D-1) NVLink + floor(log2 M) network) hop
    latencies for D GPUs per node (NCCL's log2i rounds down), with the tree's own figures; the
    smaller of the two is taken (NCCL picks per size, and the tree wins where latency matters).
    Broadcast and reduce: a pipelined ring, base + hops. Values in :data:`NCCL_LATENCY` (ring)
    and :data:`NCCL_TREE_LATENCY` (tree).
    """
    _check(op, 0, n_gpus)
    if n_gpus == 1:
        return 0.0
    per_node = min(n_gpus, gpus_per_node)
    nodes = math.ceil(n_gpus / per_node)
    lat = NCCL_LATENCY
    steps = 2 * (n_gpus - 1) if op == "all_reduce" else n_gpus - 1
    inter = (2 if op == "all_reduce" else 1) * (nodes - 1)
    ring = lat["base"] + (steps - inter) * lat["NVLink"] + inter * lat["network"]
    if op != "all_reduce":
        return ring
    tree_lat = NCCL_TREE_LATENCY
    tree = tree_lat["base"] + 2 * (
        (per_node - 1) * tree_lat["NVLink"] + (nodes.bit_length() - 1) * tree_lat["network"]
    )
    return min(ring, tree)


def cluster_time(
    op: str,
    nbytes: float,
    n_gpus: int,
    *,
    gpu: str = "H100-SXM",
    gpus_per_node: int = 8,
    messages: int = 1,
) -> float:
    """Seconds for ``op`` on ``nbytes`` sent as ``messages`` collectives of equal size: the
    bandwidth time of :func:`estimate_time` plus ``messages`` x :func:`latency`.

    The alpha-beta model at cluster scale: many small collectives (a parameter gathered tensor
    by tensor, gradients in buckets) pay the latency once each, and a ring's latency grows with
    the number of ranks, so at thousands of GPUs it can outweigh the bytes.
    """
    if messages < 1:
        raise ValueError(f"messages must be at least 1, got {messages!r}")
    if n_gpus == 1 or nbytes == 0:
        return 0.0
    bandwidth = estimate_time(op, nbytes, n_gpus, gpu=gpu, gpus_per_node=gpus_per_node)
    return bandwidth + messages * latency(op, n_gpus, gpus_per_node=gpus_per_node)


# --- measuring on this machine, through gu.dist ------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One size of one collective: seconds per call on the slowest rank (see ``measure``)."""

    op: str
    nbytes: int
    world_size: int
    backend: str
    seconds: float

    @property
    def algbw(self) -> float:
        """Algorithm bandwidth S / t in bytes/s."""
        return algorithm_bandwidth(self.nbytes, self.seconds)

    @property
    def busbw(self) -> float:
        """Bus bandwidth in bytes/s (nccl-tests' definition)."""
        return bus_bandwidth(self.op, self.nbytes, self.seconds, self.world_size)

    def __str__(self) -> str:
        return (
            f"{self.op} {self.nbytes:>10,d} B on {self.world_size} ranks ({self.backend}): "
            f"{self.seconds * 1e6:9.1f} us, algbw {self.algbw / 1e9:6.2f} GB/s, "
            f"busbw {self.busbw / 1e9:6.2f} GB/s"
        )


def _collective(op: str, elements: int, n: int, device, staged: bool):
    """(input, output, a function that runs ``op`` once) for an array of ``elements`` floats."""
    import torch
    import torch.distributed as dist

    def tensor(count: int):
        return torch.rand(count, device=device)

    if op == "all_gather":
        inputs, outputs = tensor(elements // n), tensor(elements)
        call = dist.all_gather_into_tensor
    elif op == "reduce_scatter":
        inputs, outputs = tensor(elements), tensor(elements // n)
        call = dist.reduce_scatter_tensor
    elif op == "all_to_all":
        inputs, outputs = tensor(elements), tensor(elements)
        call = dist.all_to_all_single
    else:
        inputs = outputs = tensor(elements)
        call = {
            "all_reduce": lambda out, _: dist.all_reduce(out),
            "broadcast": lambda out, _: dist.broadcast(out, src=0),
            "reduce": lambda out, _: dist.reduce(out, dst=0),
        }[op]

    def once() -> None:
        if staged:  # gloo with GPU tensors: through host memory, as gloo itself would
            host_out, host_in = outputs.cpu(), inputs.cpu()
            call(host_out, host_in)
            outputs.copy_(host_out)
        else:
            call(outputs, inputs)

    return inputs, outputs, once


def _verify(op: str, n: int, rank: int, once) -> None:
    """Check the collective's result once on known data before timing it (``once`` is built on
    buffers whose rank r input is 10 r + (0, 1, ..., count - 1))."""
    import torch

    inputs, outputs, run = once
    count = inputs.numel()
    inputs.copy_(torch.arange(count, dtype=inputs.dtype) + 10 * rank)
    run()
    got = outputs.cpu().double()
    base = torch.arange(count, dtype=torch.float64)
    everyone = sum(10 * r for r in range(n))
    if op == "broadcast":
        expected = base
    elif op in ("reduce", "all_reduce"):
        expected = n * base + everyone
        if op == "reduce" and rank != 0:
            return  # only the root's result is defined
    elif op == "all_gather":
        expected = torch.cat([base + 10 * r for r in range(n)])
    elif op == "reduce_scatter":
        expected = (n * base + everyone).chunk(n)[rank]
    else:  # all_to_all: block `rank` of every rank's input
        expected = torch.cat([(base + 10 * r).chunk(n)[rank] for r in range(n)])
    if not torch.allclose(got, expected, rtol=1e-5, atol=1e-3):
        raise AssertionError(f"{op} gave a wrong result on rank {rank}; not timing it")


def _measure_rank(rank, world_size, op, sizes, iters, repeats, on_gpu):
    """Runs in every rank: time ``op`` at each size; rank 0 returns the measurements."""
    import statistics
    import time

    import torch
    import torch.distributed as dist

    from . import dist as gu_dist

    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else gu_dist.device()
    staged = on_gpu and dist.get_backend() == "gloo"
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    rows = []
    for size in sizes:
        elements = max(world_size, size // 4 // world_size * world_size)  # float32, n | count
        buffers = _collective(op, elements, world_size, device, staged)
        _verify(op, world_size, rank, buffers)  # correct first; also the warm-up call
        once = buffers[2]
        means = []
        for _ in range(repeats):
            sync()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                once()
            sync()
            means.append((time.perf_counter() - start) / iters)
        slowest = torch.tensor([statistics.median(means)], dtype=torch.float64)
        slowest = slowest.to(device) if dist.get_backend() == "nccl" else slowest
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        rows.append((elements * 4, float(slowest.item())))
    return (rows, dist.get_backend()) if rank == 0 else None


#: Recordings of ``benchmarks/ch08_collectives.py``, best first: NCCL with one GPU per rank,
#: then ranks sharing one GPU through gloo (a machine with a single GPU).
RECORDINGS = ("ch08_collectives_nccl", "ch08_collectives_shared_gpu")
BENCHMARK = "benchmarks/ch08_collectives.py"


def recorded(op: str, names: Sequence[str] = RECORDINGS) -> tuple[list[Measurement], str]:
    """Reference measurements of ``op`` from the first recording in ``names`` that holds any.

    Returns (measurements, caption). When no recording holds ``op``, the list is empty and the
    text says what is missing and how to record it, instead of raising.
    """
    _check(op, 0, 1)
    from ..facts import recorded as reference

    found = []
    for name in names:
        recording = reference.load(name)
        if recording is None:
            continue
        found.append(name)
        rows = recording.results if isinstance(recording.results, list) else []
        try:
            mine = [Measurement(**row) for row in rows if row.get("op") == op]
        except (TypeError, AttributeError):
            return [], (
                f"The recording '{name}' is not in the format this version of gpu_utils reads. "
                f"Record it again with `python {BENCHMARK}` on a GPU machine."
            )
        if mine:
            return mine, f"{recording.caption()} Backend: {mine[0].backend}."
    if not found:
        return [], reference.missing(names[0], BENCHMARK)
    return [], (
        f"The recorded reference measurements ({', '.join(repr(n) for n in found)}) hold no "
        f"{op} results. Record them with `python {BENCHMARK}` on a GPU machine."
    )


def measure(
    op: str,
    sizes: Iterable[int],
    world_size: int,
    *,
    backend: str = "auto",
    iters: int = 5,
    repeats: int = 3,
    timeout: float = 120.0,
    gpu_tensors: bool = False,
) -> list[Measurement]:
    """Time the real collective ``op`` on this machine, through ``gu.dist``, like nccl-tests.

    ``sizes`` are S in bytes (rounded down to whole float32 elements, a multiple of
    ``world_size``). For each size: one call whose result is checked (it also warms up), then
    ``repeats`` times a barrier and ``iters`` calls back to back; the time is the median of
    those means, on the slowest rank.
    ``gpu_tensors=True`` with the gloo backend keeps the data on one GPU that the ranks share
    and stages every call through host memory.
    """
    _check(op, 0, world_size)
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError("give at least one size, in bytes, each at least 1")
    if iters < 1 or repeats < 1:
        raise ValueError("iters and repeats must be at least 1")
    from . import dist

    results = dist.run(
        _measure_rank,
        world_size,
        op,
        sizes,
        iters,
        repeats,
        gpu_tensors,
        backend=backend,
        timeout=timeout,
    )
    rows, used = results[0]
    label = f"{used}, host-staged GPU tensors" if gpu_tensors and used == "gloo" else used
    return [Measurement(op, nbytes, world_size, label, seconds) for nbytes, seconds in rows]
