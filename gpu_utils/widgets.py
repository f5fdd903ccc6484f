"""Interactive calculators for notebooks, built on the course's calculators (chapter 02 onward).

``occupancy_calculator()`` puts sliders on ``gu.occupancy.occupancy`` and redraws a plot of
occupancy against block size; ``occupancy_plot`` draws that plot on its own, for static pages.
``planner()`` (chapter 10) puts controls on ``gu.parallelism.plan`` and plots memory and step
time of the best layouts; ``planner_plot`` draws that plot on its own.
This module depends on the calculators only, never on a notebook.
"""

from __future__ import annotations

import html

from .one_gpu import occupancy as occ

__all__ = [
    "LAYOUT_NOTATION",
    "MFU_HELP",
    "PLANNER_MODELS",
    "LayoutTable",
    "OccupancyCalculator",
    "PlannerWidget",
    "layout_table",
    "occupancy_calculator",
    "occupancy_plot",
    "planner",
    "planner_plot",
]

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
    stopped = 0  # curves that stop before the largest block size: their labels are stacked
    for registers in counts:
        curve = occ.occupancy_curve(registers, shared_mem_per_block, sm.compute_capability)
        sizes = [r.threads_per_block for r in curve]
        # A block that cannot launch (0 blocks per SM) is not "0 % occupancy": leave a gap there
        # and mark where launching stops, with the resource that stops it.
        values = [100 * r.occupancy if r.blocks_per_sm else float("nan") for r in curve]
        (line,) = ax.step(sizes, values, where="mid", label=f"{registers} reg")
        failed = [r for r in curve if not r.blocks_per_sm]
        if failed:
            first = failed[0]
            ax.plot(
                [r.threads_per_block for r in failed],
                [0] * len(failed),
                "x",
                color=line.get_color(),
                ms=4,
            )
            ax.annotate(
                f"{registers} reg: no launch from {first.threads_per_block} threads "
                f"({' and '.join(first.limiters)})",
                (first.threads_per_block, 0),
                xytext=(0, 6 + 11 * stopped),
                textcoords="offset points",
                fontsize=7,
                color=line.get_color(),
            )
            stopped += 1
        if highlight is not None:
            point = occ.occupancy(highlight, registers, shared_mem_per_block, sm.compute_capability)
            ax.plot([highlight], [100 * point.occupancy], "o", color="black")
    ax.set_xlim(0, sm.max_threads_per_block + 32)
    ax.set_ylim(-4, 105)
    ax.set_xticks(range(0, sm.max_threads_per_block + 1, 128))
    ax.set_xlabel("threads per block")
    ax.set_ylabel("occupancy (%)")
    ax.set_title(
        f"cc {sm.name} ({sm.gpus}), {shared_mem_per_block:,} B shared memory per block",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    # outside the axes: inside, it covers the curves whatever corner it picks
    ax.legend(title="registers/thread", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
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


class _ShowsItsWidget:
    """Displays ``self.widget`` (an ipywidgets box) when the object is a cell's last value.

    ipywidgets 8 widgets show through ``_repr_mimebundle_``; ipywidgets 7 (Colab's, 7.7.1) has
    no such method and displays itself through ``_ipython_display_``, which IPython tries first."""

    widget: object

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def __getattr__(self, name: str):
        # Only reached for names the object lacks: ipywidgets 7's display method, when it has it.
        if name == "_ipython_display_" and "widget" in self.__dict__:
            shown = getattr(self.widget, "_ipython_display_", None)
            if callable(shown):
                return shown
        raise AttributeError(name)


class OccupancyCalculator(_ShowsItsWidget):
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


# --- the training planner (chapter 10) -----------------------------------------------------------

PLANNER_MODELS = {
    # Llama 3 shapes (Llama Team, "The Llama 3 Herd of Models", 2024, Table 3), sequence 8192,
    # no dropout; the planner counts them as dense GPT layers of 12 h^2 parameters.
    "8B (Llama 3 shape)": dict(params=8.0e9, layers=32, hidden=4096, heads=32),
    "70B (Llama 3 shape)": dict(params=70.6e9, layers=80, hidden=8192, heads=64),
    "405B (Llama 3 shape)": dict(params=405e9, layers=126, hidden=16384, heads=128),
}

#: How the plot's labels and the table's rows spell a layout.
LAYOUT_NOTATION = (
    "Plot labels: DPxTPxPP (data x tensor x pipeline parallel GPUs), Z = ZeRO stage, "
    "m = micro-batches per step per data-parallel rank, v = virtual pipeline stages, "
    "sel/full = selective/full activation recompute."
)
MFU_HELP = (
    "assumed fraction of the GPU's dense peak that the matmuls reach when nothing waits; "
    "each layout's implied MFU is lower: it also pays the pipeline bubble, the communication "
    "compute does not hide, and recomputation"
)


def _layout_label(layout) -> str:
    r = {"none": "", "selective": " sel", "full": " full"}[layout.recompute]
    v = f" v{layout.interleave}" if layout.interleave > 1 else ""
    return f"{layout.dp}x{layout.tp}x{layout.pp} Z{layout.zero_stage} m{layout.micro_batches}{v}{r}"


def _time_unit(seconds: float) -> tuple[str, float]:
    """The unit the step-time axis uses for a largest time of ``seconds``."""
    if seconds >= 2 * 3600:
        return "h", 3600.0
    if seconds >= 120:
        return "min", 60.0
    return "s", 1.0


def planner_plot(layouts, usable_bytes: float, top: int = 12, axes=None):
    """Memory per GPU and step time of the first ``top`` layouts; returns the two axes.

    The memory axis extends past both the largest bar and the usable-memory line, so the dashed
    line never sits on the axis edge; the time axis is in s, min or h. Layouts that do not fit
    are red and get no time bar (their step time would be meaningless)."""
    import matplotlib.pyplot as plt

    shown = layouts[:top]
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    ax_mem, ax_time = axes
    gib = 2**30
    labels = [_layout_label(x) for x in shown]
    y = range(len(shown))
    colors = ["tab:blue" if x.fits else "tab:red" for x in shown]
    memory = [x.memory_per_gpu / gib for x in shown]
    ax_mem.barh(y, memory, color=colors)
    ax_mem.axvline(usable_bytes / gib, color="black", ls="--", lw=1)
    ax_mem.set_xlim(0, 1.15 * max([usable_bytes / gib, *memory]))  # headroom past the line
    ax_mem.set_yticks(list(y), labels, fontsize=8)
    ax_mem.invert_yaxis()
    ax_mem.set_xlabel("memory per GPU (GiB)")
    times = [x.step_time if x.fits else 0.0 for x in shown]
    unit, scale = _time_unit(max(times, default=0.0))
    ax_time.barh(y, [t / scale for t in times], color=colors)
    ax_time.set_xlabel(f"step time ({unit}), model estimate")
    if not any(x.fits for x in shown):
        ax_time.set_xticks([])
        ax_time.text(
            0.5, 0.5, "none of these fits:\nno step time", transform=ax_time.transAxes,
            ha="center", va="center", fontsize=10,
        )  # fmt: skip
    ax_mem.set_title(
        f"DPxTPxPP, ZeRO, micro-batches, virtual stages; dashed: usable "
        f"({usable_bytes / gib:.0f} GiB)",
        fontsize=9,
    )
    ax_time.set_title("red: does not fit (no step time)", fontsize=9)
    return axes


def _summary_table(layouts) -> str:
    """An HTML table of layouts: long text in cells wraps between words, never inside one."""
    from .many_gpus.parallelism import format_seconds

    rows = []
    for x in layouts:
        if x.fits:
            status = f"{x.memory_per_gpu / 2**30:.1f} GiB, fits"
            time = format_seconds(x.step_time)
            bound = f"limited by {x.bound}" + x._exposed_note()
            mfu = f"{x.mfu:.0%}"
        else:
            over = -x.margin / 2**30
            status = f"{x.memory_per_gpu / 2**30:.1f} GiB, does not fit ({over:.1f} GiB over)"
            time = bound = mfu = "&ndash;"
        rows.append(
            f"<tr><td>{html.escape(x.short())}</td><td>{status}</td><td>{time}</td>"
            f"<td>{bound}</td><td>{mfu}</td></tr>"
        )
    head = (
        "<tr><th>layout</th><th>memory per GPU</th><th>step time</th><th>what limits it</th>"
        "<th>implied MFU</th></tr>"
    )
    style = "border-collapse: collapse; word-break: normal; overflow-wrap: normal; line-height: 1.3"
    return f'<table style="{style}">{head}{"".join(rows)}</table>'


class LayoutTable:
    """Layouts shown as a table: HTML in JupyterLab (cells wrap between words), plain text
    elsewhere (one layout per paragraph, lines of at most ``width`` characters broken between
    words). ``layout_table(layouts)`` makes one; ``display`` it or leave it last in a cell."""

    def __init__(self, layouts, title: str = "", width: int = 88) -> None:
        self.layouts, self.title, self.width = list(layouts), title, width

    def _repr_html_(self) -> str:
        title = f"<p>{html.escape(self.title)}</p>" if self.title else ""
        return title + _summary_table(self.layouts)

    def __repr__(self) -> str:
        lines = [self.title] if self.title else []
        lines += [x.describe(width=self.width) for x in self.layouts]
        return "\n".join(lines)


def layout_table(layouts, title: str = "", width: int = 88) -> LayoutTable:
    """A :class:`LayoutTable` of ``layouts`` (from ``gu.parallelism.plan`` or ``evaluate``)."""
    return LayoutTable(layouts, title, width)


class PlannerWidget(_ShowsItsWidget):
    """Controls for ``gu.parallelism.plan``: model, GPU, nodes, batch, assumed MFU; a table of the
    best layouts and a plot of their memory and step time. ``summary.value`` is the table;
    ``mfu_help`` (beside the MFU slider) says what the assumed MFU is and why each layout's
    implied MFU is lower. When nothing fits, the summary says so first, with how much memory
    per GPU the closest layout lacks."""

    def __init__(
        self,
        model: str = "70B (Llama 3 shape)",
        gpu: str = "H100-SXM",
        nodes: int = 8,
        batch_millions: int = 4,
    ):
        import ipywidgets as w

        from .facts import specs

        gpus = [name for name in specs.names() if specs.get(name).nvlink_bandwidth]
        self.model = w.Dropdown(options=list(PLANNER_MODELS), value=model, description="model")
        self.gpu = w.Dropdown(options=gpus, value=gpu, description="GPU")
        self.nodes = w.Dropdown(
            options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
            value=nodes,
            description="nodes of 8",
        )
        self.batch = w.Dropdown(
            options=[(f"{n}M tokens", n * 2**20) for n in (1, 2, 4, 8, 16)],
            value=batch_millions * 2**20,
            description="global batch",
        )
        self.mfu = w.FloatSlider(value=0.5, min=0.2, max=0.8, step=0.05, description="assumed MFU")
        self.mfu_help = w.HTML(
            f'<div style="font-size: 0.85em; line-height: 1.25">{html.escape(MFU_HELP)}</div>',
            layout=w.Layout(width="420px"),
        )
        self.summary = w.HTML()
        self.plot = w.Output()
        for control in (self.model, self.gpu, self.nodes, self.batch, self.mfu):
            control.style.description_width = "initial"
            control.observe(self._changed, names="value")
        rows = [
            w.HBox([self.model, self.gpu, self.nodes]),
            w.HBox([self.batch, self.mfu, self.mfu_help]),
        ]
        self.widget = w.VBox([*rows, self.summary, self.plot])
        self.layouts: list = []
        self.update()

    def _changed(self, _change) -> None:
        self.update()

    def inputs(self):
        """The (Model, Cluster, global_batch_tokens) the controls describe."""
        from .many_gpus import parallelism as par

        shape = PLANNER_MODELS[self.model.value]
        model = par.Model(seq_len=8192, vocab=128256, dropout=False, **shape)
        return model, par.Cluster(self.gpu.value, 8, self.nodes.value), self.batch.value

    def update(self) -> None:
        """Re-plan and redraw."""
        from .facts import specs
        from .many_gpus import parallelism as par

        model, cluster, batch = self.inputs()
        try:
            self.layouts = par.plan(model, cluster, batch, mfu=self.mfu.value)
        except ValueError as error:  # e.g. a batch that does not split: shown, not raised
            self.layouts = []
            self.summary.value = f"<b>cannot plan</b>: {html.escape(str(error))}"
            return
        if not self.layouts:
            self.summary.value = (
                f"<b>no layout</b>: {batch // model.seq_len} sequences do not split over "
                f"{cluster.n_gpus} GPUs"
            )
            self.plot.clear_output()
            return
        fitting = sum(x.fits for x in self.layouts)
        assumption = (
            f"Estimates from gu.parallelism's cost model at an assumed MFU of "
            f"{self.mfu.value:.0%}, not measurements."
        )
        if fitting:
            lead = f"{len(self.layouts)} layouts, {fitting} fit; the fastest that fit:"
        else:
            short = -self.layouts[0].margin / 2**30
            lead = (
                f"<b>Nothing fits</b> on {cluster.n_gpus} {html.escape(cluster.gpu)} GPUs: the "
                f"closest layout needs {short:.0f} GiB more per GPU (0 of "
                f"{len(self.layouts)} layouts fit). More nodes, or a smaller model, would help. "
                f"The closest layouts:"
            )
        self.summary.value = (
            f'<p style="line-height: 1.3">{lead} {assumption}</p>'
            f"{_summary_table(self.layouts[:5])}"
            f'<p style="font-size: 0.85em; line-height: 1.3">{html.escape(LAYOUT_NOTATION)}</p>'
        )
        usable = 0.9 * specs.get(cluster.gpu).hbm_bytes
        self._draw(usable)

    def _draw(self, usable: float) -> None:
        import matplotlib.pyplot as plt

        self.plot.clear_output(wait=True)
        with self.plot:
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
            planner_plot(self.layouts, usable, axes=axes)
            fig.subplots_adjust(
                left=0.2, right=0.98, bottom=0.15, wspace=0.05
            )  # cheaper than tight
            plt.show()
            plt.close(fig)


def planner(
    model: str = "70B (Llama 3 shape)", gpu: str = "H100-SXM", nodes: int = 8, batch_millions=4
):
    """A training planner to display (chapter 10): see :class:`PlannerWidget`.

    ``batch_millions``: the global batch in units of 2**20 tokens (1, 2, 4, 8 or 16)."""
    return PlannerWidget(model, gpu, nodes, batch_millions)
