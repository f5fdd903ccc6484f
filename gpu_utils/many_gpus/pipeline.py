"""Pipeline schedules: GPipe, 1F1B and interleaved 1F1B, simulated and drawn (chapter 10).

A schedule is, for each of the p pipeline devices, the list of operations it runs in order:
``("F", i)`` and ``("B", i)`` are the forward and backward pass of micro-batch i (0-based), and
``("F", i, c)`` those of model chunk c when each device holds v chunks (the interleaved
schedule, where device d holds virtual stages d, d + p, ..., d + (v - 1) p).

:func:`simulate` gives every operation its start and end time under the rules of a pipeline: a
device runs one operation at a time, in its list's order; the forward of micro-batch i on
virtual stage k waits for that on stage k - 1; its backward waits for the backward on stage
k + 1 and for its own forward. Communication takes no time here.

Sources: GPipe, Huang et al. 2019 (arXiv:1811.06965), sec. 2.2 and Fig. 2c, bubble
O((K - 1)/(M + K - 1)) in sec. 2.3; 1F1B, PipeDream-Flush, Narayanan et al. 2021 ("Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473),
sec. 2.2.1 and Fig. 4 (top); the interleaved schedule, sec. 2.2.2 and Fig. 4 (bottom): bubble divided by v.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HUANG_2019",
    "NARAYANAN_2021",
    "Deadlock",
    "Timeline",
    "bubble_fraction",
    "draw",
    "gpipe",
    "in_flight",
    "interleaved",
    "one_f_one_b",
    "simulate",
]

HUANG_2019 = (
    "Y. Huang et al., 'GPipe: Efficient Training of Giant Neural Networks using Pipeline "
    "Parallelism', NeurIPS 2019, arXiv:1811.06965, sec. 2.2 and Fig. 2; the bubble in sec. 2.3"
)
NARAYANAN_2021 = (
    "D. Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU Clusters Using "
    "Megatron-LM', SC 2021, arXiv:2104.04473, sec. 2.2 and Fig. 3-4"
)


def gpipe(p: int, m: int) -> list[list[tuple]]:
    """GPipe: every device runs all m forwards, then all m backwards (last micro-batch first)."""
    return [[("F", i) for i in range(m)] + [("B", i) for i in reversed(range(m))] for _ in range(p)]


def one_f_one_b(p: int, m: int) -> list[list[tuple]]:
    """1F1B (PipeDream-Flush): stage s runs min(p - s - 1, m) warm-up forwards, then alternates
    one forward and one backward, then drains the remaining backwards."""
    schedule = []
    for s in range(p):
        warmup = min(p - s - 1, m)
        ops = [("F", i) for i in range(warmup)]
        for i in range(m - warmup):
            ops += [("F", warmup + i), ("B", i)]
        ops += [("B", i) for i in range(m - warmup, m)]
        schedule.append(ops)
    return schedule


def interleaved(p: int, m: int, v: int) -> list[list[tuple]]:
    """Interleaved 1F1B with v model chunks per device (Narayanan et al. 2021, sec. 2.2.2).

    Micro-batches go through the chunks in groups of p, as in Megatron-LM's schedule; m must be
    a multiple of p.
    """
    if m % p:
        raise ValueError(f"the interleaved schedule needs m a multiple of p (m={m}, p={p})")
    total = m * v

    def forward_op(k):
        group, within = divmod(k, p * v)
        return ("F", group * p + within % p, within // p)

    def backward_op(k):
        group, within = divmod(k, p * v)
        return ("B", group * p + within % p, v - 1 - within // p)

    schedule = []
    for d in range(p):
        warmup = min((p - d - 1) * 2 + (v - 1) * p, total)
        ops = [forward_op(k) for k in range(warmup)]
        for k in range(total - warmup):
            ops += [forward_op(warmup + k), backward_op(k)]
        ops += [backward_op(k) for k in range(total - warmup, total)]
        schedule.append(ops)
    return schedule


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """Idle share of a device's time: (p - 1) / (v m + p - 1).

    For v = 1 this is GPipe's (p - 1)/(m + p - 1) (Huang et al. 2019, sec. 2.3), the same for
    1F1B; Narayanan et al. 2021 (sec. 2.2.1, 2.2.2) quote the bubble relative to the ideal time
    instead, (p - 1)/m, and (p - 1)/(v m) interleaved: x/(1 + x) of that is this fraction.
    """
    return (p - 1) / (v * m + p - 1)


# --- simulation ------------------------------------------------------------------------------


@dataclass
class Timeline:
    """Start and end of every operation: ``spans[d]`` lists (op, start, end) on device d."""

    spans: list[list[tuple[tuple, float, float]]]

    @property
    def makespan(self) -> float:
        return max(end for ops in self.spans for _, _, end in ops)

    def busy(self, device: int) -> float:
        return sum(end - start for _, start, end in self.spans[device])

    def bubble(self) -> float:
        """Idle share of the devices' time between 0 and the makespan."""
        total = self.makespan * len(self.spans)
        return 1 - sum(self.busy(d) for d in range(len(self.spans))) / total


class Deadlock(ValueError):
    """The schedule cannot run. ``waiting[d]`` is (op, other device, the op it waits for) for
    every device that is stuck."""

    def __init__(self, waiting: dict[int, tuple[tuple, int, tuple]]):
        self.waiting = waiting
        text = "; ".join(
            f"device {d} waits to run {name(op)} until {name(need)}"
            + ("" if other == d else f" on device {other}")
            + " is done"
            for d, (op, other, need) in waiting.items()
        )
        super().__init__(f"the schedule deadlocks: {text}")


def name(op: tuple) -> str:
    """'F3', 'B0', 'F2 of chunk 1'."""
    return f"{op[0]}{op[1]}" + (f" of chunk {op[2]}" if len(op) > 2 else "")


def _needs(op: tuple, device: int, p: int, v: int) -> list[tuple[int, tuple]]:
    """(device, op) that must finish before ``op`` can start on ``device``."""
    kind, micro = op[0], op[1]
    chunk = op[2] if len(op) > 2 else 0
    stage = chunk * p + device
    needs = []
    if kind == "F" and stage > 0:
        before = stage - 1
        needs.append((before % p, ("F", micro, before // p) if v > 1 else ("F", micro)))
    if kind == "B":
        needs.append((device, ("F", micro, chunk) if v > 1 else ("F", micro)))
        if stage < p * v - 1:
            after = stage + 1
            needs.append((after % p, ("B", micro, after // p) if v > 1 else ("B", micro)))
    return needs


def simulate(schedule, t_forward: float = 1.0, t_backward: float = 2.0) -> Timeline:
    """Run a schedule with these durations per micro-batch and stage (each of a device's v
    chunks takes 1/v of them). Raises :class:`Deadlock` when no device can make progress."""
    p = len(schedule)
    v = 1 + max((op[2] for ops in schedule for op in ops if len(op) > 2), default=0)
    duration = {"F": t_forward / v, "B": t_backward / v}
    end: dict[tuple[int, tuple], float] = {}
    spans: list[list] = [[] for _ in range(p)]
    position, free = [0] * p, [0.0] * p
    while any(position[d] < len(schedule[d]) for d in range(p)):
        progressed = False
        for d in range(p):
            while position[d] < len(schedule[d]):
                op = tuple(schedule[d][position[d]])
                needs = _needs(op, d, p, v)
                if any(need not in end for need in needs):
                    break
                start = max([free[d]] + [end[need] for need in needs])
                free[d] = end[(d, op)] = start + duration[op[0]]
                spans[d].append((op, start, free[d]))
                position[d] += 1
                progressed = True
        if not progressed:
            waiting = {}
            for d in range(p):
                if position[d] < len(schedule[d]):
                    op = tuple(schedule[d][position[d]])
                    other, need = next(n for n in _needs(op, d, p, v) if n not in end)
                    waiting[d] = (op, other, need)
            raise Deadlock(waiting)
    return Timeline(spans)


def in_flight(schedule) -> list[int]:
    """Per device, the most micro-batches whose forward ran and backward did not yet (the
    activations a device must hold at once)."""
    peaks = []
    for ops in schedule:
        live, peak = set(), 0
        for op in ops:
            key = (op[1], op[2] if len(op) > 2 else 0)
            if op[0] == "F":
                live.add(key)
                peak = max(peak, len(live))
            else:
                live.discard(key)
        peaks.append(peak)
    return peaks


# --- drawing -------------------------------------------------------------------------------


def draw(schedule, ax=None, *, title: str = "", t_forward: float = 1.0, t_backward: float = 2.0):
    """Draw a schedule as a timeline: one row per device, forwards light, backwards dark, the
    micro-batch number in each box, idle time (the bubble) blank."""
    import matplotlib.pyplot as plt

    timeline = simulate(schedule, t_forward, t_backward)
    chunked = any(len(op) > 2 for ops in schedule for op in ops)
    if ax is None:
        _, ax = plt.subplots(figsize=(12 if chunked else 10, 0.45 * len(schedule) + 0.9))
    cmap = plt.get_cmap("tab10")
    for d, spans in enumerate(timeline.spans):
        for op, start, stop in spans:
            colour = cmap(op[1] % 10)
            forward = op[0] == "F"
            ax.barh(
                d,
                stop - start,
                left=start,
                height=0.8,
                color=colour,
                alpha=0.45 if forward else 1.0,
                edgecolor="black",
                linewidth=0.5,
            )
            label = str(op[1]) + ("" if len(op) < 3 else "abcdefgh"[op[2]])
            ax.text(
                (start + stop) / 2, d, label, ha="center", va="center", fontsize=6 if chunked else 7,
                color="black" if forward else "white",
            )  # fmt: skip
    ax.set_yticks(range(len(schedule)), [f"device {d}" for d in range(len(schedule))])
    ax.invert_yaxis()
    ax.set_xlim(0, timeline.makespan)
    ax.set_xlabel("time (one forward of one micro-batch through one stage = 1)")
    ax.set_title(
        (title + ": " if title else "")
        + f"makespan {timeline.makespan:g}, bubble {timeline.bubble():.0%}",
        fontsize=9,
    )
    return ax
