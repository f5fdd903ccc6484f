"""The ``cuda`` module a kernel sees inside the course's simulator (:mod:`gpu_utils.sim`).

The engine runs one CUDA thread at a time in one OS thread, so the thread's coordinates are
plain attributes it sets before resuming a thread (``threadIdx``) or starting a block
(``blockIdx``, the block's shared memory). Math, bit and fp16 functions are numba-cuda
simulator's own (its ``FakeCUDAModule`` as the course installed it, ``gu.warp``'s bit intrinsics
included), so results agree with the oracle.
"""

from __future__ import annotations

import sys

import numpy as np

from .rewrite import BARRIERS, WARP_INTRINSICS, NotHandledYet, check_index

WARP_SIZE = 32
#: Functions of numba's FakeCUDAModule that need no thread state: borrowed as they are.
_PURE = ("popc", "fma", "cbrt", "brev", "clz", "ffs", "selp")


class Dim3:
    """threadIdx, blockIdx, blockDim, gridDim: ``.x``, ``.y``, ``.z``, iterable like numba's."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x: int, y: int, z: int) -> None:
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        return iter((self.x, self.y, self.z))

    def __repr__(self) -> str:
        return f"({self.x}, {self.y}, {self.z})"


def _dtype(dtype):
    if isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        from numba.np import numpy_support

        return numpy_support.as_dtype(dtype)


class Shared:
    """``cuda.shared``: one array per call site and block; shape 0 is the dynamic buffer."""

    def __init__(self, dynshared_size: int) -> None:
        self.dynshared_size = dynshared_size
        self.block: dict = {}
        self.observe = None  # an observer's shared(site, array, dynamic, frame), when one runs

    def new_block(self) -> None:
        self.block = {}

    def array_at(self, site, shape, dtype, alignment=None, _depth=1):
        found = self.block.get(site)
        if found is not None:
            return found
        dtype = _dtype(dtype)
        dynamic = shape == 0 or shape == (0,)
        if dynamic:
            buffer = self.block.get("dynamic")
            if buffer is None:
                buffer = self.block["dynamic"] = np.zeros(self.dynshared_size, np.byte)
            array = np.frombuffer(buffer.data, dtype, self.dynshared_size // dtype.itemsize)
        else:
            array = np.empty(shape, dtype)
        if self.observe is not None:
            array = self.observe(site, array, dynamic, sys._getframe(_depth))
        self.block[site] = array
        return array

    def array(self, shape, dtype, alignment=None):  # a call the rewrite did not see
        return self.array_at(("unseen", shape, str(dtype)), shape, dtype, _depth=2)


class Local:
    """``cuda.local``: a fresh array per call (uninitialised, as numba's simulator makes it)."""

    def array(self, shape, dtype, alignment=None):
        return np.empty(shape, _dtype(dtype))


class Const:
    """``cuda.const.array_like``: the array itself."""

    def array_like(self, array):
        return array


def _slot(array, index, op):
    if type(index) is int and 0 <= index < len(array) and array.ndim == 1:
        return index
    return check_index(array, index, None, f"the array of cuda.atomic.{op}")


class Atomic:
    """``cuda.atomic``: read-modify-write returning the old value (one thread runs at a time)."""

    def add(self, array, index, val):
        index = _slot(array, index, "add")
        old = array[index]
        array[index] += val
        return old

    def sub(self, array, index, val):
        index = _slot(array, index, "sub")
        old = array[index]
        array[index] -= val
        return old

    def and_(self, array, index, val):
        index = _slot(array, index, "and_")
        old = array[index]
        array[index] &= val
        return old

    def or_(self, array, index, val):
        index = _slot(array, index, "or_")
        old = array[index]
        array[index] |= val
        return old

    def xor(self, array, index, val):
        index = _slot(array, index, "xor")
        old = array[index]
        array[index] ^= val
        return old

    def inc(self, array, index, val):
        index = _slot(array, index, "inc")
        old = array[index]
        array[index] = 0 if old >= val else old + 1
        return old

    def dec(self, array, index, val):
        index = _slot(array, index, "dec")
        old = array[index]
        array[index] = val if (old == 0 or old > val) else old - 1
        return old

    def exch(self, array, index, val):
        index = _slot(array, index, "exch")
        old = array[index]
        array[index] = val
        return old

    def max(self, array, index, val):
        index = _slot(array, index, "max")
        old = array[index]
        array[index] = max(old, val)
        return old

    def min(self, array, index, val):
        index = _slot(array, index, "min")
        old = array[index]
        array[index] = min(old, val)
        return old

    def nanmax(self, array, index, val):
        index = _slot(array, index, "nanmax")
        old = array[index]
        array[index] = np.nanmax([old, val])
        return old

    def nanmin(self, array, index, val):
        index = _slot(array, index, "nanmin")
        old = array[index]
        array[index] = np.nanmin([old, val])
        return old

    def cas(self, array, index, old, val):
        index = _slot(array, index, "cas")
        loaded = array[index]
        if loaded == old:
            array[index] = val
        return loaded

    def compare_and_swap(self, array, old, val):
        index = (0,) * array.ndim
        loaded = array[index]
        if loaded == old:
            array[index] = val
        return loaded


class _Grid:
    def sync(self):
        raise NotHandledYet(
            "cuda.cg.this_grid().sync() (a grid-wide barrier) is not handled by the course's "
            "simulator yet"
        )


class _Cg:
    def this_grid(self):
        return _Grid()


class Module:
    """The fake ``cuda`` module of one launch."""

    warpsize = WARP_SIZE

    def __init__(self, grid_dim, block_dim, dynshared_size: int) -> None:
        from numba.cuda.simulator import kernelapi
        from numba.cuda.simulator.vector_types import vector_types

        self.gridDim = Dim3(*grid_dim)
        self.blockDim = Dim3(*block_dim)
        self.blockIdx = Dim3(0, 0, 0)
        self.threadIdx = Dim3(0, 0, 0)
        # cuda.gridsize(1/2/3), which the rewrite reads as these attributes
        self.gridsize1 = self.gridsize(1)
        self.gridsize2 = self.gridsize(2)
        self.gridsize3 = self.gridsize(3)
        self.shared = Shared(dynshared_size)
        self.local = Local()
        self.const = Const()
        self.atomic = Atomic()
        self.cg = _Cg()
        self.fp16 = kernelapi.FakeCUDAFp16()
        self._base = (0, 0, 0)
        for name in _PURE:
            function = getattr(kernelapi.FakeCUDAModule, name)
            setattr(self, name, function.__get__(self))
        for name, vector_type in vector_types.items():
            setattr(self, name, vector_type)
            for alias in vector_type.aliases:
                setattr(self, alias, vector_type)

    def set_block(self, index: tuple[int, int, int]) -> None:
        self.blockIdx = Dim3(*index)
        d = self.blockDim
        self._base = (index[0] * d.x, index[1] * d.y, index[2] * d.z)
        self.shared.new_block()

    @property
    def laneid(self) -> int:
        t, d = self.threadIdx, self.blockDim
        return (t.x + d.x * (t.y + d.y * t.z)) % WARP_SIZE

    def grid(self, n):
        t, b = self.threadIdx, self._base
        if n == 1:
            return b[0] + t.x
        if n == 2:
            return (b[0] + t.x, b[1] + t.y)
        if n == 3:
            return (b[0] + t.x, b[1] + t.y, b[2] + t.z)
        raise RuntimeError(f"Global ID has 1-3 dimensions. {n} requested")

    def gridsize(self, n):
        b, g = self.blockDim, self.gridDim
        if n == 1:
            return b.x * g.x
        if n == 2:
            return (b.x * g.x, b.y * g.y)
        if n == 3:
            return (b.x * g.x, b.y * g.y, b.z * g.z)
        raise RuntimeError(f"Global grid has 1-3 dimensions. {n} requested")

    def threadfence(self):
        pass

    def threadfence_block(self):
        pass

    def threadfence_system(self):
        pass

    def lanemask_lt(self):
        """The lanes of this warp below the calling one (``gu.warp``'s, a ``uint32``)."""
        return np.uint32((1 << self.laneid) - 1)

    def __getattr__(self, name):
        if name in BARRIERS or name in WARP_INTRINSICS:
            raise NotHandledYet(
                f"cuda.{name}() is called from a plain Python function, which the course's "
                "simulator runs as it is: make it a @cuda.jit(device=True) function"
            )
        raise AttributeError(f"module 'numba.cuda' has no attribute '{name}'", name=name, obj=self)
