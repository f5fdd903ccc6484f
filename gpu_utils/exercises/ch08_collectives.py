"""Exercises of lab 08, collectives (chapter 08): ring all-gather and ring all-reduce built from
send and receive, and questions on the cost model.

The ring exercises run the learner's function in 2, 3 and 4 real processes (``gu.dist``, gloo),
several array lengths per run, and compare each rank's result with ``torch.distributed``'s own
collective on the same random data. A diagnostic case whose inputs are powers of 16 tells
exactly which ranks' contributions each element of a wrong all-reduce holds, which is what the
hints are keyed to.
"""

from __future__ import annotations

import inspect
import re

import numpy as np

# torch loads with the chapter, before the checker's worker saves its state: a check that
# first imported it would make the worker start afresh for the next check (5-10 s each).
import torch

from ..facts import specs
from . import _ranks
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import CheckResult, Exercise, failed, passed, register

CHAPTER = "08_collectives"
WORLD_SIZES = (2, 3, 4)
#: Seconds on the clock per multi-rank run (loops and deadlocks are stopped sooner, see _ranks).
RUN_TIMEOUT = _ranks.RUN_TIMEOUT
#: Seconds a whole check may take in the checker's process (a backstop, see _ranks).
CHECK_TIME_LIMIT = _ranks.check_time_limit(WORLD_SIZES)
SEED = 8

#: Collectives a ring exercise must not call (the point is to build them from send and recv).
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_single",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce_scatter_single",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "reduce",
    "scatter",
    "gather",
)

DEADLOCK_HINT = (
    "with gloo, `dist.send` returns only once the receiving rank has called `dist.recv`, so if "
    "every rank sends first, every rank waits for ever. Start the send without waiting, "
    "`request = dist.isend(chunk, dst=right)`, then `dist.recv(buffer, src=left)`, then "
    "`request.wait()`; or let even ranks send first and odd ranks receive first."
)
PEER_GONE_HINT = (
    "every rank must make the same sends and receives: a rank that returns early, or sends "
    "fewer chunks than its neighbour receives, leaves that neighbour waiting."
)
CHUNK_HINT = (
    "the sender and the receiver must agree on each chunk's size. When the length is not a "
    "multiple of world_size, chunks differ by one element: take them all from "
    "`torch.tensor_split(x, world_size)` and receive into a buffer of the size of the chunk "
    "that is coming, e.g. `torch.empty_like(chunks[index])`."
)


# --- what runs in every rank ------------------------------------------------------------------


def _inputs(exercise: str, case: int, length: int, world_size: int, seed: int) -> list:
    """Every rank's input for one case (each rank builds all of them, from the same seed)."""

    if length < 0:  # the diagnostic case: rank r holds 16**r everywhere
        return [torch.full((-length,), 16.0**r) for r in range(world_size)]
    rng = np.random.default_rng([seed, case, length, world_size])
    data = rng.uniform(-1.0, 1.0, size=(world_size, length)).astype(np.float32)
    return [torch.from_numpy(row.copy()) for row in data]


def _ring_rank(rank, world_size, exercise, answer, lengths, seed):
    """One rank of a check: for each case, the true collective, then the learner's function."""
    import torch.distributed as dist

    originals = {name: getattr(dist, name) for name in COLLECTIVES if hasattr(dist, name)}
    used: set[str] = set()

    def watching(name):
        def call(*args, **kwargs):
            used.add(name)
            return originals[name](*args, **kwargs)

        return call

    cases = []
    for case, length in enumerate(lengths):
        mine = _inputs(exercise, case, length, world_size, seed)[rank]
        if exercise == "ring_all_gather":
            expected = torch.empty(world_size * mine.numel())
            originals["all_gather_into_tensor"](expected, mine.clone())
        else:
            expected = mine.clone()
            originals["all_reduce"](expected)
        for name in originals:
            setattr(dist, name, watching(name))
        try:
            got = answer(mine.clone(), rank, world_size)
        finally:
            for name, function in originals.items():
                setattr(dist, name, function)
        cases.append({"length": length, "expected": expected.numpy(), "got": _as_array(got)})
    return {"cases": cases, "used": sorted(used)}


def _as_array(value):
    """The learner's result as a float64 NumPy array, or a description of what it was."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple, dict, str)):
        return type(value).__name__
    if hasattr(value, "detach"):
        dtype = f"tensor of dtype {str(value.dtype).replace('torch.', '')}"
        if value.is_complex():
            return dtype
        try:
            return value.detach().cpu().double().numpy()
        except (TypeError, RuntimeError):  # quantised, meta, ...: not comparable as reals
            return dtype
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return type(value).__name__


# --- what the checker concludes -----------------------------------------------------------------


def _lengths(exercise: str, n: int) -> list[int]:
    """Array lengths per world size n: not divisible by n (remainders 1 and n - 1), divisible."""
    if exercise == "ring_all_gather":
        return [1, 4, 7]  # elements per rank
    return [n + 1, 6 * n - 1, 16 * n, -(5 * n - 1)]  # the last: the diagnostic case


_WAITING = re.compile(r"waiting in (?:dist\.)?(\w+)")
_LINE = re.compile(r"\(line (\d+)\)")


def _source(answer) -> tuple[list[str], int]:
    """The answer's source lines and the file line of the first, or ([], 0)."""
    try:
        return inspect.getsourcelines(answer)
    except (OSError, TypeError):
        return [], 0


def _stuck_at(where: str, answer) -> str:
    """'send' | 'recv' | 'wait' | '' for one waiting rank's RankTimeout text."""
    match = _LINE.search(where)
    line = int(match.group(1)) if match else None
    waiting = _WAITING.search(where)
    call = waiting.group(1) if waiting else ""
    if not call and line is not None:  # the top frame is the learner's: a C++ wait
        lines, first = _source(answer)
        text = lines[line - first] if 0 <= line - first < len(lines) else ""
        found = re.search(r"\b(recv|send|wait)\b", text)
        call = found.group(1) if found else ""
    if call in ("irecv", "recv"):
        return "recv"
    if call in ("isend", "send"):
        return "send"
    return call


def _deadlock_hint(error, answer) -> str:
    """The hint for ranks that waited for each other, from the calls they waited in."""
    if any("outside your function" in w for w in error.where.values()):
        return PEER_GONE_HINT  # back in the checker's own code: that rank's function returned
    calls = {_stuck_at(w, answer) for w in error.where.values() if w}
    if calls == {"send"}:
        return DEADLOCK_HINT
    if calls and calls <= {"recv", "wait"}:
        return (
            "every rank was waiting to receive and none was sending to it: each `recv` must "
            "name the rank that sends to you. If you send to the right, "
            "`dst=(rank + 1) % world_size`, receive from the left, `src=(rank - 1) % world_size`."
        )
    return (
        "the sends and receives do not pair up: rank r's send to its right neighbour must meet "
        "that neighbour's receive from its left, at the same step, on every rank. "
        + DEADLOCK_HINT[0].upper()
        + DEADLOCK_HINT[1:]
    )


def _error_result(exercise_id: str, n: int, error, answer) -> CheckResult:
    """The verdict on a RankError (an exception or a crash in one rank)."""
    from ..many_gpus import dist

    if any(phrase in error.exc_message for phrase in dist._PEER_GONE):
        return failed(
            exercise_id,
            f"With {n} ranks, rank {error.rank} was still waiting for a message"
            f"{_ranks.answer_line(error, answer)} when the rank it was talking to had already "
            "returned from your function.",
            PEER_GONE_HINT,
        )
    text = _ranks.crash_text(n, error, answer)
    message = f"{error.exc_message} {error.last_output}"
    if "doesn't match expected size" in message or "size mismatch" in message:
        return failed(exercise_id, text, CHUNK_HINT)
    if error.exc_type == "TypeError" and "'tuple' object does not support item" in message:
        return failed(
            exercise_id,
            text,
            "torch.tensor_split returns a tuple, which cannot be assigned to: write "
            "`chunks = list(torch.tensor_split(result, world_size))`, or add in place with "
            "`chunks[i].add_(incoming)`.",
        )
    if error.exc_type == "IndexError":
        return failed(
            exercise_id,
            text,
            "a chunk index ran past the end: neighbours and chunk numbers wrap around the ring, "
            "so take them modulo world_size, e.g. `(rank - 1) % world_size`.",
        )
    if "contiguous" in message:
        return failed(
            exercise_id,
            text,
            "send and receive contiguous tensors: the pieces of `torch.tensor_split` of a 1-D "
            "tensor are, and `.contiguous()` makes a copy that is.",
        )
    return failed(
        exercise_id,
        text,
        "run your function yourself, `gu.dist.run(lambda rank, n: ...(...), 2)`, to see the "
        "full traceback of the rank.",
    )


def _shape_problem(exercise_id: str, n: int, case: dict, rank: int) -> CheckResult | None:
    got, expected = case["got"], case["expected"]
    if isinstance(got, str):
        if got == "None":
            return failed(
                exercise_id,
                f"With {n} ranks, your function returned None on rank {rank}.",
                "end it with `return result`, the tensor that holds the answer on this rank.",
            )
        if got in ("list", "tuple"):
            return failed(
                exercise_id,
                f"With {n} ranks, your function returned a {got} on rank {rank}, not a tensor.",
                "return one 1-D torch tensor: `torch.cat(pieces)` joins a list of tensors.",
            )
        if got.startswith("tensor of dtype"):
            return failed(
                exercise_id,
                f"With {n} ranks, your function returned a {got} on rank {rank}, which cannot "
                "be compared with real numbers.",
                "return a float32 tensor, like the input.",
            )
        return failed(
            exercise_id,
            f"With {n} ranks, your function returned a {got} on rank {rank}, not a tensor.",
            "return a 1-D torch tensor.",
        )
    if got.shape != expected.shape:
        return failed(
            exercise_id,
            f"With {n} ranks and {expected.size} elements, rank {rank} returned shape "
            f"{tuple(got.shape)} instead of {tuple(expected.shape)}.",
            "every rank returns the whole result, as long as the collective's output.",
        )
    return None


def _first_wrong(n: int, length: int, rank: int, got, expected) -> str:
    index = int(np.argmax(~np.isclose(got, expected, rtol=1e-5, atol=1e-5)))
    return (
        f"With {n} ranks and length {length}, rank {rank} is wrong from element {index} on "
        f"(yours {got[index]:.6g}, expected {expected[index]:.6g})."
    )


def _run_ring(exercise_id: str, answer, judge) -> CheckResult | None:
    if not callable(answer):
        return failed(
            exercise_id,
            f"Expected a function, got {type(answer).__name__}.",
            "pass the function itself: check(..., my_function), not my_function(...).",
        )
    try:
        inspect.signature(answer).bind(None, 0, 2)
    except TypeError:
        return failed(
            exercise_id,
            "Your function must take three arguments: (x, rank, world_size).",
            "define it as `def f(x, rank, world_size):`.",
        )
    except ValueError:
        pass  # no signature to inspect: let the run tell

    def judge_run(n: int, outcome: list) -> CheckResult | None:
        used = sorted({name for rank in outcome for name in rank["used"]})
        if used:
            return failed(
                exercise_id,
                f"Your function calls dist.{used[0]}: the point is to build the collective "
                "yourself.",
                "use only dist.send / dist.recv (or dist.isend / dist.irecv) between neighbours "
                "on the ring.",
            )
        return judge(exercise_id, n, outcome)

    return _ranks.run_world_sizes(
        exercise_id,
        answer,
        _ring_rank,
        lambda n: (exercise_id, answer, _lengths(exercise_id, n), SEED),
        judge_run,
        world_sizes=WORLD_SIZES,
        error_result=_error_result,
        deadlock_hint=_deadlock_hint,
        timeout=RUN_TIMEOUT,
    )


# --- ring_all_gather ------------------------------------------------------------------------------


def _gather_judge(exercise_id: str, n: int, outcome: list[dict]) -> CheckResult | None:
    for case_index, length in enumerate(_lengths(exercise_id, n)):
        chunks = [
            t.numpy().astype(np.float64) for t in _inputs(exercise_id, case_index, length, n, SEED)
        ]
        for rank, result in enumerate(outcome):
            case = result["cases"][case_index]
            problem = _shape_problem(exercise_id, n, case, rank)
            if problem is not None:  # a failed CheckResult is falsy: test for None
                return problem
            got, expected = case["got"], case["expected"]
            if np.allclose(got, expected, rtol=0, atol=0):
                continue
            what = _first_wrong(n, expected.size, rank, got, expected)
            return failed(exercise_id, what, _gather_hint(got, chunks, rank, n))
    return None


def _gather_hint(got, chunks: list, rank: int, n: int) -> str:
    slots = np.split(got, n)
    sources = []
    for slot in slots:
        match = [j for j, chunk in enumerate(chunks) if np.array_equal(slot, chunk)]
        sources.append(match[0] if match else None)
    filled = [s for s in sources if s is not None]
    if len(filled) == n and sorted(filled) == list(range(n)):
        return (
            "every chunk arrived but some sit in the wrong place: position j of the result holds "
            "rank j's chunk. The chunk you receive at step k started on rank "
            "(rank - k - 1) % world_size."
        )
    if len(filled) != len(set(filled)):
        return (
            "the same chunk landed in several places: at each step, send on the chunk you "
            "received at the previous step (at step 0, your own), not your own chunk every time."
        )
    missing = [j for j, s in enumerate(sources) if s is None]
    if missing == [(rank + 1) % n]:
        return (
            "one chunk never arrived: with n ranks the ring needs n - 1 steps, "
            "`for step in range(world_size - 1)`."
        )
    return (
        f"positions {missing} of rank {rank}'s result hold none of the ranks' chunks. Copy your "
        "own chunk to position `rank`, then at each of the n - 1 steps send to the right "
        "neighbour and receive from the left one."
    )


def _check_all_gather(answer) -> CheckResult:
    problem = _run_ring("ring_all_gather", answer, _gather_judge)
    return (
        problem
        if problem is not None
        else passed(
            "ring_all_gather",
            "Every rank's result equals dist.all_gather_into_tensor's for 2, 3 and 4 ranks and "
            "chunks of 1, 4 and 7 elements.",
        )
    )


register(
    Exercise(
        id="ring_all_gather",
        chapter=CHAPTER,
        title="All-gather around a ring, with send and receive",
        signature=(
            "ring_all_gather(chunk, rank, world_size) -> tensor: chunk is this rank's 1-D float32 "
            "tensor (the same length on every rank); return the concatenation of all ranks' "
            "chunks in rank order"
        ),
        launch=(
            f"run with gu.dist (gloo) on {', '.join(map(str, WORLD_SIZES))} ranks; compared "
            "with dist.all_gather_into_tensor"
        ),
        run=_check_all_gather,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- ring_all_reduce --------------------------------------------------------------------------


def _decode(values, n: int):
    """Which ranks' contributions each element holds: an (elements, n) array of counts, or None.

    Rank r's diagnostic input is 16**r, so a sum of contributions is a number whose base-16
    digits count them.
    """
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        return None
    rounded = np.rint(values)
    if not np.allclose(values, rounded, rtol=0, atol=1e-6) or np.any(rounded >= 16**n):
        return None
    digits = np.empty((values.size, n), dtype=int)
    remaining = rounded.astype(np.int64)
    for r in range(n):
        digits[:, r] = remaining % 16
        remaining //= 16
    return digits


def _reduce_hint(outcome: list[dict], n: int) -> str:
    """The hint for a wrong all-reduce, from the diagnostic case's base-16 digits."""
    got = [result["cases"][-1]["got"] for result in outcome]
    length = got[0].size
    decoded = [_decode(g, n) for g in got]
    if any(d is None for d in decoded):
        if all(_decode(g * n, n) is not None and (_decode(g * n, n) == 1).all() for g in got):
            return "you returned the mean: an all-reduce here sums, so do not divide by world_size."
        return (
            "each element should be the sum of that element over all ranks; yours holds "
            "something else. Add what you receive to your own chunk: `chunk += incoming`."
        )
    digits = np.stack(decoded)  # (rank, element, contributor)
    complete = (digits == 1).all(axis=2)
    if (digits >= 2).any():
        return (
            "some elements hold a rank's contribution twice: the reduce-scatter takes n - 1 "
            "steps, not n, and you must add the chunk you received, not one you already added."
        )
    own_only = (digits.sum(axis=2) == 1) & (digits[np.arange(n), :, np.arange(n)] == 1)
    if own_only.all():
        return (
            "every rank returned its own input: nothing was added. Send chunks around the ring "
            "and add what you receive."
        )
    tail = np.arange(length) >= length - length % n
    if length % n and complete[:, ~tail].all() and not complete[:, tail].any():
        return (
            f"the last {length % n} element(s) were never reduced: when the length is not a "
            "multiple of world_size, `x.split(len(x) // world_size)` makes an extra short chunk. "
            "Use `torch.tensor_split(x, world_size)`: exactly world_size chunks."
        )
    if (digits.sum(axis=2) == 1).all():
        return (
            "each element holds exactly one rank's value: you overwrote instead of adding. "
            "Receive into a separate buffer, then add it to your chunk."
        )
    per_rank = complete.sum(axis=1)
    if (per_rank > 0).all() and (per_rank <= -(-length // n)).all():
        return (
            "each rank holds the full sum of only one chunk: that is the reduce-scatter. Finish "
            "with an all-gather: n - 1 more steps that pass the completed chunks around the ring."
        )
    return (
        "some elements hold partial sums: the reduce-scatter needs n - 1 steps in which chunk "
        "(rank - step) % n goes to the right and chunk (rank - step - 1) % n comes from the left "
        "and is added; then n - 1 steps of all-gather."
    )


def _reduce_judge(exercise_id: str, n: int, outcome: list[dict]) -> CheckResult | None:
    for case_index in range(len(_lengths(exercise_id, n))):
        for rank, result in enumerate(outcome):
            case = result["cases"][case_index]
            problem = _shape_problem(exercise_id, n, case, rank)
            if problem is not None:  # a failed CheckResult is falsy: test for None
                return problem
            got, expected = case["got"], case["expected"]
            if np.allclose(got, expected, rtol=1e-5, atol=1e-5):
                continue
            what = _first_wrong(n, expected.size, rank, got, expected)
            diagnostic = [_shape_problem(exercise_id, n, r["cases"][-1], 0) for r in outcome]
            if any(problem is not None for problem in diagnostic):
                return failed(exercise_id, what)  # the diagnostic case cannot be decoded
            return failed(exercise_id, what, _reduce_hint(outcome, n))
    return None


def _check_all_reduce(answer) -> CheckResult:
    problem = _run_ring("ring_all_reduce", answer, _reduce_judge)
    return (
        problem
        if problem is not None
        else passed(
            "ring_all_reduce",
            "Every rank's result equals dist.all_reduce's for 2, 3 and 4 ranks, including lengths "
            "that are not multiples of the number of ranks.",
        )
    )


register(
    Exercise(
        id="ring_all_reduce",
        chapter=CHAPTER,
        title="All-reduce around a ring: reduce-scatter, then all-gather",
        signature=(
            "ring_all_reduce(x, rank, world_size) -> tensor: x is this rank's 1-D float32 "
            "tensor (the same length on every rank, not always a multiple of world_size); "
            "return the element-wise sum over all ranks"
        ),
        launch=(
            f"run with gu.dist (gloo) on {', '.join(map(str, WORLD_SIZES))} ranks; compared "
            "with dist.all_reduce"
        ),
        run=_check_all_reduce,
        kind="function",
        time_limit=CHECK_TIME_LIMIT,
    )
)


# --- the cost model -----------------------------------------------------------------------------


def _allgather_node_answer() -> NumericAnswer:
    h100 = specs.get("H100-SXM")
    nbytes, n = 1024 * 16384 * 2, 8
    expected = nbytes * (n - 1) / n / h100.nvlink_bandwidth * 1e6
    return NumericAnswer(
        expected=expected,
        unit="us",
        mistakes={
            nbytes / h100.nvlink_bandwidth * 1e6: (
                "close, but each GPU already holds its own 1/8 of the array: it receives "
                "(n - 1)/n of S, not all of it."
            ),
            expected / 2: (
                "NVLink's 900 GB/s on the datasheet counts both directions; one direction, "
                "what a GPU can send, is gu.specs nvlink_bandwidth (450 GB/s)."
            ),
            expected * 2: (
                "twice the answer: a bf16 element is 2 bytes (not 4), and an all-gather moves "
                "(n - 1)/n of S per GPU, not the all-reduce's 2(n - 1)/n."
            ),
            expected / n: (
                "S is the whole gathered array (1024 x 16384 bf16), not one GPU's shard of it."
            ),
        },
        hint="time = S (n - 1)/n / W, with S = 1024 * 16384 * 2 bytes, n = 8, W = 450e9 B/s.",
    )


register(
    numeric_exercise(
        id="allgather_node_time",
        chapter=CHAPTER,
        title="All-gather inside an 8-GPU H100 node",
        question=(
            "How many microseconds does an all-gather of a bf16 array of shape (1024, 16384) take "
            "over the 8 H100s of one node, counting NVLink bandwidth only?"
        ),
        answer=_allgather_node_answer,
    )
)


def _allreduce_cluster_answer() -> NumericAnswer:
    h100 = specs.get("H100-SXM")
    nbytes, per_node, nodes = 7e9 * 2, 8, 16
    node_egress = per_node * h100.network_bandwidth
    inside = 2 * nbytes * (per_node - 1) / per_node / h100.nvlink_bandwidth * 1e3
    expected = 2 * nbytes * (nodes - 1) / nodes / node_egress * 1e3
    return NumericAnswer(
        expected=expected,
        unit="ms",
        mistakes={
            expected * per_node: (
                "every GPU of a node has its own network card (rail), so a node sends "
                f"{per_node} x network_bandwidth = {node_egress / 1e9:.0f} GB/s across nodes."
            ),
            2 * nbytes * 127 / 128 / h100.network_bandwidth * 1e3: (
                "a flat ring through one network card per GPU ignores the other seven cards of "
                "each node: count the network per node, 8 x network_bandwidth."
            ),
            inside: (
                "that is the NVLink level, inside each node; the network between the nodes is "
                "slower here, and the slower level sets the time."
            ),
            expected
            / 2: "an all-reduce is a reduce-scatter plus an all-gather: twice S (M-1)/M / W.",
            expected * 2: "bf16 gradients are 2 bytes per parameter, not 4.",
        },
        hint=(
            "time = max over the two levels: inside a node 2 S (D-1)/D / W_nvlink, across nodes "
            "2 S (M-1)/M / (D x network_bandwidth), with D = 8 GPUs per node and M = 16 nodes."
        ),
    )


register(
    numeric_exercise(
        id="allreduce_cluster_time",
        chapter=CHAPTER,
        title="All-reduce of gradients across 16 H100 nodes",
        question=(
            "How many milliseconds does an all-reduce of the bf16 gradients of a 7-billion-"
            "parameter model take over 16 nodes of 8 H100s (128 GPUs), counting bandwidth only?"
        ),
        answer=_allreduce_cluster_answer,
    )
)


register(
    numeric_exercise(
        id="busbw_from_algbw",
        chapter=CHAPTER,
        title="From algorithm bandwidth to bus bandwidth",
        question=(
            "nccl-tests prints algbw = 180 GB/s for an all-reduce on 8 GPUs. What bus bandwidth, "
            "in GB/s, does it print next to it?"
        ),
        answer=NumericAnswer(
            expected=180 * 2 * 7 / 8,
            unit="GB/s",
            mistakes={
                180.0: "busbw multiplies algbw by a factor that depends on the collective and n.",
                180 * 7 / 8: "(n - 1)/n is the all-gather's factor; an all-reduce's is 2(n - 1)/n.",
                360.0: "the factor is 2(n - 1)/n, not 2.",
                180 / (2 * 7 / 8): "multiply algbw by the factor 2(n - 1)/n, do not divide.",
            },
            hint="busbw = algbw x 2(n - 1)/n for an all-reduce (nccl-tests, doc/PERFORMANCE.md).",
        ),
    )
)


def _crossover_answer() -> NumericAnswer:
    alpha, beta, n = 10e-6, 1 / 50e9, 8
    steps = np.log2(n)
    ring_steps, ring_fraction = 2 * (n - 1), 2 * (n - 1) / n
    # steps (alpha + S beta) = ring_steps alpha + ring_fraction S beta
    expected = (ring_steps - steps) * alpha / ((steps - ring_fraction) * beta) / 1e6
    wrong_ring_steps = (n - 1 - steps) * alpha / ((steps - ring_fraction) * beta) / 1e6
    return NumericAnswer(
        expected=float(expected),
        unit="MB",
        mistakes={
            n * alpha / beta / 1e6: (
                "that is where the ring's own latency and bandwidth terms are equal; compare the "
                "two algorithms' whole times, tree_time and ring_time, instead."
            ),
            float(wrong_ring_steps): (
                "the ring all-reduce takes 2(n - 1) steps: n - 1 of reduce-scatter, then n - 1 "
                "of all-gather."
            ),
        },
        hint=(
            "set log2(n) (alpha + S beta) equal to 2(n-1) alpha + 2(n-1)/n S beta and solve for "
            "S, in bytes, then divide by 1e6."
        ),
    )


register(
    numeric_exercise(
        id="ring_tree_crossover",
        chapter=CHAPTER,
        title="When does recursive doubling beat the ring?",
        question=(
            "With an assumed alpha = 10 us per step and beta = 1/(50 GB/s), below what array "
            "size, in MB (1e6 bytes), is a recursive-doubling all-reduce on 8 ranks faster than "
            "the ring, in the alpha-beta model?"
        ),
        answer=_crossover_answer,
    )
)


def _rabenseifner_answer() -> NumericAnswer:
    from ..many_gpus import collectives

    alpha, beta, n, size = 10e-6, 1 / 50e9, 8, 1e6
    ring = collectives.ring_time("all_reduce", size, n, alpha=alpha, beta=beta)
    halving = collectives.rabenseifner_time(size, n, alpha=alpha, beta=beta)
    doubling = collectives.tree_time("all_reduce", size, n, alpha=alpha, beta=beta)
    one_pass = np.log2(n) * alpha + 2 * (n - 1) / n * size * beta  # log2(n) steps, not 2 log2(n)
    return NumericAnswer(
        expected=ring / halving,
        rel_tol=0.01,
        mistakes={
            ring / one_pass: (
                "Rabenseifner's algorithm takes log2(n) steps twice: recursive halving for the "
                "reduce-scatter, then recursive doubling for the all-gather."
            ),
            ring / doubling: (
                "that is recursive doubling, which moves the whole array at every step; "
                "Rabenseifner's halving moves S/2, S/4, ... and so sends the ring's "
                "2(n-1)/n S bytes in all."
            ),
            halving / ring: "the question asks how many times faster: the ring's time / its time.",
        },
        hint=(
            "ring: 2(n-1) alpha + 2(n-1)/n S beta; Rabenseifner: 2 log2(n) alpha + 2(n-1)/n S "
            "beta. Divide the first by the second."
        ),
    )


register(
    numeric_exercise(
        id="rabenseifner_speedup",
        chapter=CHAPTER,
        title="How much does Rabenseifner's all-reduce save?",
        question=(
            "With the same alpha = 10 us, beta = 1/(50 GB/s) and 8 ranks, how many times faster "
            "than the ring is Rabenseifner's all-reduce (recursive halving, then recursive "
            "doubling) for a 1 MB (1e6-byte) array, in the alpha-beta model?"
        ),
        answer=_rabenseifner_answer,
    )
)
