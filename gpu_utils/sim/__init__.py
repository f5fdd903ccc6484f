"""The course's own CUDA simulator (chapter 00, "How the course runs"; every kernel of chapters
02-06 and 13 without a GPU): runs ``@cuda.jit`` kernels, every CUDA thread of a block a Python
generator in one OS thread, barriers as ``yield`` (issue 29).

A launch of 2,048 threads or more first runs in lockstep (:mod:`gpu_utils.sim.lockstep`: every
thread of a chunk of blocks at once, each value a NumPy array), kept only when it must equal the
thread-by-thread run, else rerun thread by thread; ``GPU_COURSE_SIM_LOCKSTEP=always|never``.

The default in simulator mode: launches of ``@cuda.jit`` kernels go through this engine.
``GPU_COURSE_SIM`` (read once, when numba's simulator is first used) selects another:
``numba`` runs numba-cuda's simulator (the oracle, one OS thread per CUDA thread), ``compare``
runs every launch on both and logs differences (:mod:`gpu_utils.sim.compare`, for
tests/test_sim_differential.py); ``course`` or unset is this engine. A kernel it refuses before
anything runs (its source cannot be found; ``cuda.cg``, a grid group) goes to numba-cuda's.
Speed side by side: ``python benchmarks/sim_speed.py``. Directly::

    from gpu_utils import sim
    sim.launch(kernel.py_func, blocks, threads, a, b, out)   # or the kernel itself

What it runs: 1-3-D grids and blocks, ``cuda.grid``/``gridsize``, thread and block indices and
dims, static and dynamic shared arrays (per block), local and const arrays, device functions
(which may reach a barrier), ``syncthreads`` and its ``_count/_and/_or`` forms, ``syncwarp``,
``threadfence*``, the atomics, the warp intrinsics of ``gu.warp`` with its semantics (shuffles,
votes, matches, ``activemask``, ``lanemask_lt``: :mod:`gpu_utils.sim.warp_rendezvous`), numba-cuda
simulator's math, bit and fp16 functions, numpy and device arrays. Where a GPU would hang or be
undefined it raises with the thread, the line and the cause: a barrier not every thread reaches
(:class:`BarrierDivergence`), a warp intrinsic whose lanes never all arrive
(:class:`WarpDivergence`) or that is otherwise undefined (:class:`WarpError`, a
``gu.warp.WarpError`` too), an index outside an array (:class:`IndexOutOfBounds`; a negative
one wraps once, as in numba), a block that runs past ``LOOP_LIMIT_S`` (:class:`KernelLoops`).

An observer (:mod:`gpu_utils.sim.observe`, ``launch(..., observer=...)``; none by default) sees
every global and shared memory access and every barrier release: with ``GPU_COURSE_SIM=course``
``gu.trace`` and its race check run on it (:mod:`gpu_utils.sim.tracing`, the same reports as on
numba's engine; ``compare`` traces on both and logs differences), and so does ``gu.viz``'s
``thread_map``. Not handled (numba-cuda's simulator runs them): a grid-wide
``this_grid().sync()``.
"""

from __future__ import annotations

import os
import warnings

from .engine import LOOP_LIMIT_S, launch
from .errors import BarrierDivergence, KernelLoops, SimulatorError
from .observe import ObservedArray, Observer
from .rewrite import IndexOutOfBounds, NotHandledYet
from .warp_rendezvous import WarpDivergence, WarpError

ENV = "GPU_COURSE_SIM"
ENGINES = ("numba", "course", "compare")

__all__ = [
    "ENV",
    "LOOP_LIMIT_S",
    "BarrierDivergence",
    "IndexOutOfBounds",
    "KernelLoops",
    "NotHandledYet",
    "ObservedArray",
    "Observer",
    "SimulatorError",
    "WarpDivergence",
    "WarpError",
    "engine",
    "engine_or_default",
    "launch",
]


def engine(environ=None) -> str:
    """The engine ``GPU_COURSE_SIM`` selects: ``"course"`` (unset, the default), ``"numba"``
    (numba-cuda's simulator), or ``"compare"`` (both, numba's results kept, differences logged:
    the differential test)."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip().lower()
    if value == "":
        return "course"
    if value in ENGINES:
        return value
    raise ValueError(
        f"{ENV}={value!r}: leave it unset (or course) for the course's simulator, or use "
        f"{ENV}=numba for numba-cuda's"
    )


def engine_or_default(*, warn: bool = False) -> str:
    """:func:`engine`, except that a misspelt ``GPU_COURSE_SIM`` gives the default, ``"course"``
    (with a ``RuntimeWarning`` that names the right values when ``warn``): the one rule every
    reader of the setting follows (the launch hook warns; the trace and the device text do not)."""
    try:
        return engine()
    except ValueError as error:
        if warn:
            warnings.warn(f"{error}; the course's simulator runs the kernels", RuntimeWarning, 3)
        return "course"
