"""Pictures of collectives (chapter 08): who holds what before and after each collective, and a
ring all-reduce step by step.

Each rank's array is cut into n blocks, named A, B, C, ... A cell shows one block on one rank and
is striped with the colours of the ranks whose data it holds: one colour for a rank's own block,
several for a partial sum, all of them (labelled with a sigma) for the full sum.
"""

from __future__ import annotations

import string

import numpy as np

Cell = frozenset | None  # the ranks whose block this cell holds (their sum), or nothing
Grid = list[list[Cell]]  # grid[rank][block]

OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all")
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def before_after(op: str, n: int = 4) -> tuple[Grid, Grid, list[list[int]]]:
    """(before, after, block names) of ``op`` on ``n`` ranks; block names are per rank and cell.

    Block names differ from the cell's column only for all-to-all, where rank r ends up with
    block r of every rank.
    """
    everyone = frozenset(range(n))
    own = [[frozenset({r})] * n for r in range(n)]
    columns = [list(range(n)) for _ in range(n)]
    if op == "broadcast":
        before = [own[0]] + [[None] * n for _ in range(1, n)]
        return before, [own[0]] * n, columns
    if op == "reduce":
        return own, [[everyone] * n] + [[None] * n for _ in range(1, n)], columns
    if op == "all_reduce":
        return own, [[everyone] * n for _ in range(n)], columns
    if op == "all_gather":
        before = [[frozenset({r}) if j == r else None for j in range(n)] for r in range(n)]
        return before, [[frozenset({j}) for j in range(n)] for _ in range(n)], columns
    if op == "reduce_scatter":
        after = [[everyone if j == r else None for j in range(n)] for r in range(n)]
        return own, after, columns
    if op == "all_to_all":
        after = [[frozenset({j}) for j in range(n)] for _ in range(n)]
        return own, after, [[r] * n for r in range(n)]
    raise ValueError(f"unknown collective {op!r}: use one of {', '.join(OPS)}")


def ring_all_reduce_steps(n: int = 4) -> list[tuple[str, Grid, list[tuple[int, int, int]]]]:
    """Every state of a ring all-reduce: (title, grid, sends) with sends (from, to, block).

    Reduce-scatter: at step s, rank r sends block (r - s) mod n to rank r + 1, which adds it to
    its own copy. All-gather: at step s, rank r sends the complete block (r + 1 - s) mod n on,
    and the receiver keeps it.
    """
    grid: Grid = [[frozenset({r}) for _ in range(n)] for r in range(n)]
    states = [("start: every rank holds its own array", [row[:] for row in grid], [])]
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(n - 1):
            shift = -step if phase == "reduce-scatter" else 1 - step
            sends = [(r, (r + 1) % n, (r + shift) % n) for r in range(n)]
            new = [row[:] for row in grid]
            for src, dst, block in sends:
                incoming = grid[src][block]
                new[dst][block] = incoming | grid[dst][block] if phase[0] == "r" else incoming
            grid = new
            title = f"{phase}, step {step + 1} of {n - 1}"
            states.append((title, [row[:] for row in grid], sends))
    return states


def _colours(n: int):
    import matplotlib.pyplot as plt

    return [plt.get_cmap("tab10")(i % 10) for i in range(n)]


def _label(cell: frozenset, block: int, n: int) -> str:
    letter = string.ascii_uppercase[block]
    if len(cell) == n and n > 1:
        return f"Σ{letter}"
    return letter + "+".join(str(r) for r in sorted(cell)).translate(_SUBSCRIPTS)


def draw_grid(ax, grid: Grid, names: list[list[int]] | None = None, title: str = "") -> None:
    """Draw one state: a row per rank, a column per block, striped by contributing ranks."""
    from matplotlib.patches import Rectangle

    n = len(grid)
    colours = _colours(n)
    for r, row in enumerate(grid):
        for j, cell in enumerate(row):
            x, y = j, n - 1 - r
            ax.add_patch(Rectangle((x, y), 0.94, 0.9, fill=False, ec="0.8", lw=0.8))
            if not cell:
                continue
            for k, source in enumerate(sorted(cell)):
                width = 0.94 / len(cell)
                ax.add_patch(Rectangle((x + k * width, y), width, 0.9, color=colours[source]))
            block = names[r][j] if names else j
            ax.text(x + 0.47, y + 0.45, _label(cell, block, n), ha="center", va="center",
                    fontsize=8, color="white", weight="bold")  # fmt: skip
    ax.set_xlim(-0.05, n)
    ax.set_ylim(-0.1, n)
    ax.set_yticks([n - 1 - r + 0.45 for r in range(n)], [f"rank {r}" for r in range(n)])
    ax.set_xticks([])
    ax.tick_params(length=0, labelsize=8)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=9)


def draw_collectives(n: int = 4):
    """One figure: each collective's before and after, side by side."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(OPS), 2, figsize=(6.4, 1.7 * len(OPS)), dpi=72)
    for row, op in enumerate(OPS):
        before, after, names = before_after(op, n)
        initial = [list(range(n)) for _ in range(n)]
        draw_grid(axes[row, 0], before, initial, f"{op}: before")
        draw_grid(axes[row, 1], after, names, f"{op}: after")
    fig.tight_layout()
    return fig


def _draw_step(ax, state, n: int) -> None:
    title, grid, sends = state
    ax.clear()
    draw_grid(ax, grid, title=title)
    for src, dst, block in sends:
        y_src, y_dst = n - 1 - src + 0.45, n - 1 - dst + 0.45
        if dst == 0:  # the ring closes: last rank back to rank 0, drawn on the right
            ax.annotate("", (n + 0.05, y_dst), (n + 0.05, y_src),
                        arrowprops=dict(arrowstyle="->", color="0.3", connectionstyle="arc3,rad=-0.4"))  # fmt: skip
        else:
            ax.annotate("", (block + 0.47, y_dst + 0.3), (block + 0.47, y_src - 0.3),
                        arrowprops=dict(arrowstyle="->", color="0.2", lw=1.5))  # fmt: skip
    ax.set_xlim(-0.05, n + 0.6)


def animate_ring_all_reduce(n: int = 4, interval_ms: int = 1200):
    """A small matplotlib animation of ``ring_all_reduce_steps`` (show it with ``.to_jshtml()``)."""
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    states = ring_all_reduce_steps(n)
    fig, ax = plt.subplots(figsize=(3.6, 2.4), dpi=64)
    animation = FuncAnimation(
        fig, lambda i: _draw_step(ax, states[i], n), frames=len(states), interval=interval_ms
    )
    plt.close(fig)  # the animation, not a still, is what the notebook shows
    return animation


def complete_blocks(grid: Grid) -> np.ndarray:
    """A rank x block array of booleans: which cells hold the full sum."""
    n = len(grid)
    return np.array([[bool(cell) and len(cell) == n for cell in row] for row in grid])
