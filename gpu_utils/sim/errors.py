"""The errors of the course's simulator (:mod:`gpu_utils.sim`): what a GPU would hang on or
leave undefined, reported with thread, line and cause."""

from __future__ import annotations


class SimulatorError(RuntimeError):
    """What a GPU would hang on or leave undefined, reported with thread, line and cause."""


class BarrierDivergence(SimulatorError):
    """A ``syncthreads``/``syncwarp`` that not every thread it waits for reaches."""


class KernelLoops(SimulatorError):
    """A block that ran past the loop limit."""
