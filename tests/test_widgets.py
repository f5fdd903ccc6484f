"""gu.widgets: the occupancy calculator follows its sliders and never shows a traceback."""

import matplotlib.pyplot as plt

import gpu_utils as gu


def test_calculator_summary_follows_the_sliders():
    calc = gu.widgets.occupancy_calculator((7, 0))
    calc.threads.value = 128
    calc.registers.value = 37
    assert "occupancy 75.0%" in calc.summary.value
    assert "registers" in calc.summary.value
    calc.threads.value = 320
    assert "occupancy 62.5%" in calc.summary.value


def test_changing_the_architecture_updates_the_shared_memory_range():
    calc = gu.widgets.occupancy_calculator((9, 0))
    assert calc.shared_kb.max == 227
    calc.shared_kb.value = 200
    assert "shared memory" in calc.summary.value
    calc.cc.value = (7, 5)
    assert calc.shared_kb.max == 64 and calc.shared_kb.value <= 64
    assert calc.result().compute_capability == (7, 5)
    assert "cannot compute" not in calc.summary.value


def test_default_architecture_on_the_simulator_is_hopper():
    if gu.mode == "simulator":
        assert gu.widgets.occupancy_calculator().cc.value == (9, 0)


def test_static_plot_draws_one_curve_per_register_count():
    ax = gu.widgets.occupancy_plot([32, 64, 128], compute_capability=(8, 0), highlight=256)
    assert len(ax.get_legend().get_texts()) == 3
    assert ax.get_ylim()[1] >= 100
    plt.close(ax.figure)


def test_widgets_show_under_ipywidgets_7_as_under_8():
    """Colab ships ipywidgets 7.7.1, whose widgets display through _ipython_display_ and have no
    _repr_mimebundle_; IPython's display must reach the one the installed ipywidgets has."""
    from IPython.core.interactiveshell import InteractiveShell

    from gpu_utils.widgets import _ShowsItsWidget

    shown = []

    class Widget7:  # ipywidgets 7: displays itself
        def _ipython_display_(self, **kwargs):
            shown.append("7")

    class Widget8:  # ipywidgets 8: a mime bundle
        def _repr_mimebundle_(self, **kwargs):
            shown.append("8")
            return {"text/plain": "a widget"}

    formatter = InteractiveShell.instance().display_formatter
    for widget, expected in ((Widget7(), "7"), (Widget8(), "8")):
        holder = _ShowsItsWidget()
        holder.widget = widget
        formatter.format(holder)
        assert shown[-1] == expected
    assert not hasattr(_ShowsItsWidget(), "_ipython_display_")
