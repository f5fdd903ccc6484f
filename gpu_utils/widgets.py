"""Interactive calculators for notebooks, built on the course's calculators (chapter 02 onward).

``occupancy_calculator()`` puts sliders on ``gu.occupancy.occupancy`` and redraws a plot of
occupancy against block size; ``occupancy_plot`` draws that plot on its own, for static pages.
This module depends on the calculators only, never on a notebook.
"""

from __future__ import annotations

import html

from . import occupancy as occ

__all__ = ["OccupancyCalculator", "occupancy_calculator", "occupancy_plot"]

KB = occ.KB


def occupancy_plot(
    registers_per_thread: int | list[int],
    shared_mem_per_block: int = 0,
    compute_capability: object = (9, 0),
    highlight: int | None = None,
    ax=None,
):
    """Occupancy against threads per block for one or several register counts; returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.6))
    counts = (
        registers_per_thread if isinstance(registers_per_thread, list) else [registers_per_thread]
    )
    sm = occ.limits(compute_capability)
    for registers in counts:
        curve = occ.occupancy_curve(registers, shared_mem_per_block, sm.compute_capability)
        sizes = [r.threads_per_block for r in curve]
        ax.step(sizes, [100 * r.occupancy for r in curve], where="mid", label=f"{registers} reg")
        if highlight is not None:
            point = occ.occupancy(highlight, registers, shared_mem_per_block, sm.compute_capability)
            ax.plot([highlight], [100 * point.occupancy], "o", color="black")
    ax.set_xlim(0, sm.max_threads_per_block + 32)
    ax.set_ylim(0, 105)
    ax.set_xticks(range(0, sm.max_threads_per_block + 1, 128))
    ax.set_xlabel("threads per block")
    ax.set_ylabel("occupancy (%)")
    ax.set_title(
        f"cc {sm.name} ({sm.gpus}), {shared_mem_per_block:,} B shared memory per block",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    ax.legend(title="registers/thread", fontsize=8)
    return ax


def _summary_html(result: occ.OccupancyResult) -> str:
    rows = "".join(
        f"<tr><td>{name}</td><td>{'no limit' if blocks is None else blocks}</td></tr>"
        for name, blocks in result.block_limits.items()
    )
    return (
        f"<b>occupancy {result.occupancy:.1%}</b>: {result.blocks_per_sm} blocks per SM, "
        f"{result.active_warps} of {result.max_warps} warps, limited by "
        f"<b>{html.escape(' and '.join(result.limiters))}</b>"
        f"<table><tr><th>resource</th><th>blocks per SM it allows</th></tr>{rows}</table>"
    )


class OccupancyCalculator:
    """Sliders for block size, registers and shared memory; a summary and a plot that follow them.

    ``widget`` is what a notebook displays; ``summary.value`` holds the current result as HTML.
    """

    def __init__(self, compute_capability: object = (9, 0)) -> None:
        import ipywidgets as w

        sm = occ.limits(compute_capability)
        self.cc = w.Dropdown(
            options=[(f"{s.name} ({s.gpus})", s.compute_capability) for s in _all_limits()],
            value=sm.compute_capability,
            description="cc",
        )
        self.threads = w.IntSlider(
            value=256, min=32, max=1024, step=32, description="threads/block"
        )
        self.registers = w.IntSlider(value=32, min=1, max=255, description="registers")
        self.shared_kb = w.IntSlider(
            value=0, min=0, max=sm.max_shared_mem_per_block // KB, description="shared KB"
        )
        self.summary = w.HTML()
        self.plot = w.Output()
        for control in (self.cc, self.threads, self.registers, self.shared_kb):
            control.style.description_width = "initial"
            control.observe(self._changed, names="value")
        rows = [w.HBox([self.cc, self.threads]), w.HBox([self.registers, self.shared_kb])]
        self.widget = w.VBox([*rows, self.summary, self.plot])
        self.update()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def _changed(self, _change) -> None:
        self.update()

    def result(self) -> occ.OccupancyResult:
        """The occupancy for the sliders' current values."""
        return occ.occupancy(
            self.threads.value, self.registers.value, self.shared_kb.value * KB, self.cc.value
        )

    def update(self) -> None:
        """Recompute the summary and redraw the plot."""
        sm = occ.limits(self.cc.value)
        self.shared_kb.max = sm.max_shared_mem_per_block // KB  # clamps the value if needed
        try:
            result = self.result()
        except ValueError as error:  # cannot happen with the sliders' ranges; shown, not raised
            self.summary.value = f"<b>cannot compute</b>: {html.escape(str(error))}"
            return
        self.summary.value = _summary_html(result)
        self._draw(result)

    def _draw(self, result: occ.OccupancyResult) -> None:
        import matplotlib.pyplot as plt

        self.plot.clear_output(wait=True)
        with self.plot:
            fig, ax = plt.subplots(figsize=(8, 3.2))
            occupancy_plot(
                result.registers_per_thread,
                result.shared_mem_per_block,
                result.compute_capability,
                highlight=result.threads_per_block,
                ax=ax,
            )
            plt.show()
            plt.close(fig)


def _all_limits() -> list[occ.SMLimits]:
    return [occ.limits(cc) for cc in occ.compute_capabilities()]


def occupancy_calculator(compute_capability: object | None = None) -> OccupancyCalculator:
    """An occupancy calculator to display; defaults to this GPU's compute capability, else 9.0."""
    if compute_capability is None:
        from .device import device_info

        mine = device_info().compute_capability
        known = occ.compute_capabilities()
        compute_capability = mine if mine in known else (9, 0)
    return OccupancyCalculator(compute_capability)
