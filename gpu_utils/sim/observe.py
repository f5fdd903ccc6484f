"""Observing a launch of the course's simulator (:mod:`gpu_utils.sim`): the hooks ``gu.trace``
and its race check run on.

``sim.launch(kernel, blocks, threads, *args, observer=obs)`` runs the kernel as usual and calls
``obs``; without an observer (the default) nothing below runs and no array is wrapped. The engine
calls, in order:

* ``start(launch)`` once, before the first block: the observer may replace array arguments in
  ``launch.args`` by :class:`ObservedArray` views (:meth:`Observer.wrap`);
* ``begin_block(launch)`` before each block (``launch.module.blockIdx`` is set);
* ``shared(site, array, dynamic, frame)`` when a block first allocates a ``cuda.shared.array``
  (``site``: the call's id; ``dynamic``: a view of the dynamic buffer; ``frame``: the kernel's
  frame that allocates it); what it returns is the array the threads get;
* ``access(array, index, kind)`` on every element read (``LOAD``) or write (``STORE``) of an
  :class:`ObservedArray` (a slice assignment reports each element): the array (its ``token`` says
  which allocation, ``byte_offset(index)`` where in it), the index, and the kind. The thread is
  ``launch.module.threadIdx``, the block ``launch.module.blockIdx``, the warp its linear id // 32;
  the line is that of the caller's frame (``sys._getframe(2)`` from the hook; its code object
  maps to the source function's through ``launch.original``); the barrier phase is what the
  observer counted from ``released``;
* ``released(kind, sites)`` when a barrier lets threads go: ``kind`` a ``rewrite.SYNC*`` kind,
  ``sites`` the linear ids released together -> the barrier site each waited at
  (``rewrite.SITES``, ``rewrite.SITE_CODES``): every waiting thread of the block for a
  ``syncthreads``, the lanes of one meeting for a ``syncwarp``;
* ``failed(i, error)``, with ``keep_going = True`` only: thread ``i`` raised ``error``, which
  ends that thread alone (to barriers and warp intrinsics it has left the kernel); the others
  run on (``gu.viz.thread_map``). Without it the first error stops the launch, as usual;
* ``end_block(launch)`` after each block.

``lenient_barriers = True`` makes the engine release a ``syncthreads`` once every thread still
running waits at one, as numba-cuda's simulator and ``gu.trace``'s executor do, instead of
stopping on a barrier that not every thread reaches: ``gu.trace`` reports such barriers itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

LOAD, STORE = 0, 1


def _pointer(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


class Observer:
    """Every hook does nothing: subclass and override what you need."""

    lenient_barriers = False
    keep_going = False

    def start(self, launch) -> None:
        pass

    def begin_block(self, launch) -> None:
        pass

    def shared(self, site, array, dynamic: bool, frame):
        return array

    def access(self, array: ObservedArray, index, kind: int) -> None:
        pass

    def released(self, kind: int, sites: dict[int, int]) -> None:
        pass

    def failed(self, i: int, error: Exception) -> None:
        pass

    def end_block(self, launch) -> None:
        pass

    def wrap(self, array: np.ndarray, token, offset: int = 0) -> ObservedArray:
        """``array`` as the kernel sees it while observed; ``token`` names its allocation and
        ``offset`` is the byte offset of its first element from the allocation's start."""
        return ObservedArray(array, self, token, offset)


class ObservedArray:
    """A kernel's view of an array whose element reads and writes call the observer; slices,
    rows and ``.T`` stay observed (with their byte offset from the allocation's start)."""

    __slots__ = ("_ary", "_observer", "_offset", "token")

    def __init__(self, ary: np.ndarray, observer: Observer, token, offset: int) -> None:
        self._ary = ary
        self._observer = observer
        self.token = token
        self._offset = offset

    def byte_offset(self, index) -> int:
        """Byte offset of element ``index`` from the start of the allocation."""
        ary = self._ary
        if type(index) is int and ary.ndim == 1:  # the common case, in a few operations
            return self._offset + (index if index >= 0 else index + len(ary)) * ary.strides[0]
        if not isinstance(index, tuple):
            index = (index,)
        offset = self._offset
        for k, i in enumerate(index):
            i = int(i)
            if i < 0:
                i += ary.shape[k]
            offset += i * ary.strides[k]
        return offset

    def _view(self, value: np.ndarray) -> ObservedArray:
        offset = self._offset + _pointer(value) - _pointer(self._ary)
        return ObservedArray(value, self._observer, self.token, offset)

    def __getitem__(self, index):
        value = self._ary[index]
        if isinstance(value, np.ndarray):
            return self._view(value)
        self._observer.access(self, index, LOAD)
        return value

    def __setitem__(self, index, value) -> None:
        if isinstance(value, ObservedArray):
            value = value._ary
        self._ary[index] = value
        target = self._ary[index]
        if isinstance(target, np.ndarray):  # a slice assignment: every element written
            view = self._view(target)
            for element in np.ndindex(*target.shape):
                self._observer.access(view, element, STORE)
        else:
            self._observer.access(self, index, STORE)

    def __len__(self) -> int:
        return len(self._ary)

    def __iter__(self) -> Iterator:
        for i in range(len(self._ary)):
            yield self[i]

    def __getattr__(self, name: str):
        return getattr(self._ary, name)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._ary, dtype=dtype)

    @property
    def T(self) -> ObservedArray:
        return self._view(self._ary.T)

    def __repr__(self) -> str:
        return f"ObservedArray({self.token!r}, shape={self._ary.shape})"
