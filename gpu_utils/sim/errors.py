"""The errors of the course's simulator (:mod:`gpu_utils.sim`): what a GPU would hang on or
leave undefined, reported with thread, line and cause."""

from __future__ import annotations


class SimulatorError(RuntimeError):
    """What a GPU would hang on or leave undefined, reported with thread, line and cause; the
    checkers read ``thread`` and ``block`` (``(x, y, z)`` tuples, or None), ``line`` and
    ``cause`` (the message without thread and line) rather than the text."""

    def __init__(
        self,
        message: str = "",
        *,
        thread: tuple | None = None,
        block: tuple | None = None,
        line: int | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.thread, self.block, self.line = thread, block, line
        self.cause = message if cause is None else cause


class BarrierDivergence(SimulatorError):
    """A ``syncthreads``/``syncwarp`` that not every thread it waits for reaches."""


class KernelLoops(SimulatorError):
    """A block that ran past the loop limit."""
